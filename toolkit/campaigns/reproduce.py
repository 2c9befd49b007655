"""`dnnbench reproduce RESULT`: run a result's job again, the same way, and say whether the
figure came back: same workload and harness options (seed included), the workload's own options,
the same dataset, GPUs or processes, and the same image by digest (a tag may have moved).

Every kind of job: a workload benchmark runs again with its options; a training run runs
`train` again with its training options; a user's script runs again from its path, refused in
one line when its SHA-256 is no longer the recorded one (unless allowed)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from dnnbench.containers.engines import Engine, lookup, spoken
from dnnbench.errors import DnnbenchError
from dnnbench.runs import environment
from dnnbench.runs.read_back import ReadBack, text_or_none
from dnnbench.workloads import schema
from dnnbench.workloads.options import HOST_OPTIONS


def load(path: Path) -> tuple[Path, dict]:
    file = path / schema.RESULT_FILE if path.is_dir() else path
    try:
        data = schema.read(str(file))
    except OSError as exc:
        raise DnnbenchError(f"cannot read {file}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise DnnbenchError(str(exc)) from None
    if data["status"] != "ok":
        raise DnnbenchError(f"{file} is a run that ended {data['status']}: there is no figure to reproduce")
    if data.get("copies") or data.get("copy_of"):
        raise DnnbenchError(f"{file} is part of a parallel-copies run: reproduce it with `dnnbench suite run`")
    wrong = problems(data)
    if wrong:
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        raise DnnbenchError(f"{file} cannot be run again: {wrong[0]}{more}")
    return file, data


def problems(data: dict) -> list[str]:
    """Everything in a result that `reproduce` would pass on and cannot, checked as a whole
    before anything runs: the fields it reads (types), the options against the harness table and
    the workload's own parser (a name it does not know, a value of the wrong kind), the GPUs and
    the environment. A result is a file anyone may have written: nothing of it reaches a child
    process unchecked."""
    from dnnbench.runs import gpus as gpus_mod
    out = []
    host, manifest = data.get("host") or {}, data.get("manifest") or {}
    if not isinstance(manifest, dict) or not isinstance(manifest.get("host") or {}, dict):
        out.append("manifest.host must be an object")
        manifest = {}
    mhost = manifest.get("host") or {}
    for where, block, keys in (("host", host, ("runtime", "image")), ("manifest.host", mhost, ("data",))):
        out += [f"{where}.{k} must be text, not {block.get(k)!r:.40}" for k in keys if not text_or_none(block.get(k))]
    image = mhost.get("image") or {}
    if not isinstance(image, dict) or not all(text_or_none(image.get(k)) for k in ("id", "sha256")):
        out.append("manifest.host.image must be an object of text id and sha256")
    gpus = host.get("gpus")
    if gpus is not None:
        if not isinstance(gpus, list) or not all(isinstance(g, str) for g in gpus):
            out.append(f"host.gpus must be a list of GPU indices as text, not {gpus!r:.40}")
        elif gpus:
            try:
                gpus_mod.parse(",".join(gpus))
            except DnnbenchError as exc:
                out.append(f"host.gpus: {exc}")
    try:
        environment.from_mapping(host.get("env") or {}, "host.env")
    except DnnbenchError as exc:
        out.append(str(exc))
    if not isinstance(data.get("synthetic"), (bool, type(None))):
        out.append(f"synthetic must be true, false or null, not {data.get('synthetic')!r:.40}")
    opts = data.get("options") or {}
    if not isinstance(opts, dict):
        return out + ["options must be an object"]
    for o in HOST_OPTIONS:
        value = opts.get(o.name)
        wrong = value is not None and ((o.kind is bool and not isinstance(value, bool))
                                       or (o.kind is str and not isinstance(value, str)))
        why = "must be " + ("true or false" if o.kind is bool else "text") if wrong else o.problem(value)
        if why:
            out.append(f"options.{o.name} {value!r:.40}: {why}")
    return out + _read_back(data).problems(data, opts, out)


def _image(data: dict, engine: Engine, override: str | None) -> str | None:
    """The image to run: --image, else the recorded one by digest."""
    if override:
        return override
    host = data.get("host") or {}
    recorded = ((data.get("manifest") or {}).get("host") or {}).get("image") or {}
    return engine.rerun_image(host.get("image"), recorded)


def options_for(data: dict, *, runtime: str | None, image: str | None, results: Path, run_id: str | None,
                data_dir: Path | None, quiet: bool, env: dict | None = None, where: str = "the result",
                allow_changed_script: bool = False):
    """The run options of the result's job (a training result's own options: `train_options`)."""
    from dnnbench.runs.options import RunOptions
    host = data.get("host") or {}
    runtime = runtime or host.get("runtime")
    engine = lookup(runtime)
    if engine is None:
        raise DnnbenchError(f"the result ran on {runtime!r}: pass --runtime {spoken(aliases=False)}")
    ran_on = lookup(host.get("runtime"))
    opts = data.get("options") or {}
    manifest_host = (data.get("manifest") or {}).get("host") or {}
    read_back = _read_back(data)
    dataset = read_back.dataset(data, opts, data_dir or manifest_host.get("data"), ran_on)
    gpus = host.get("gpus")
    world = int(data.get("world_size") or 1)
    harness: dict[str, Any] = {o.name: opts.get(o.name) for o in HOST_OPTIONS}
    if opts.get("start_iter") is not None:   # the TBD window: warmup and repeat follow from it
        harness.update(warmup=None, repeat=None)
    extra, more = read_back.own(data, opts, manifest_host, allow_changed_script)
    return RunOptions(**{**dict(
        workload=data["workload"], data=Path(dataset) if dataset else None,
        gpus=",".join(gpus) if gpus else None, nproc=world if not gpus and world > 1 else None,
        runtime=engine.name, image=_image(data, engine, image), base=None, build=False, results=results,
        run_id=run_id, quiet=quiet, extra=extra,
        env={**environment.from_file(host.get("env") or {}, env or {}, "the result's env", where),
             **(env or {})}, **harness), **more})


def _warn_host_versions(data: dict) -> None:
    """A host-runtime result has no image: say when this Python or PyTorch differs from its."""
    import platform

    import torch

    from dnnbench.console import warn
    system = data.get("system") or {}
    for name, then, now in (("Python", system.get("python"), platform.python_version()),
                            ("PyTorch", system.get("pytorch"), torch.__version__)):
        if then and then != now:
            warn(f"the result ran on {name} {then}; this is {now}")


def plan_for(data: dict, opts):
    """The plan that runs a result's job again: `train`'s for a training result, else `run`'s."""
    from dnnbench.runs import kinds
    return kinds.build_plan(kinds.of_result(data), opts, _read_back(data).job(data))


def _read_back(data: dict) -> ReadBack:
    """How the job kind that made the result reads it back (runs/kinds.py)."""
    from dnnbench.runs import kinds
    return kinds.of_result(data).read_back


def reproduce_command(result: Path, *, runtime: str | None, image: str | None, results: Path,
                      run_id: str | None, tolerance: float, quiet: bool, data_dir: Path | None = None,
                      env: dict | None = None, rounds: int | None = None,
                      allow_changed_script: bool = False) -> int:
    """Run the job again, in runs until the rule of results/rounds.py decides (or --rounds). With
    --image and the original image still here, the original and the new image alternate in rounds
    (paired); otherwise only the new side can be measured, and the verdict says it is single-sided:
    the recorded figure is taken as it was (its own noise and the load of its day are not in it)."""
    import dataclasses

    from dnnbench.console import info, out
    from dnnbench.results import load as load_mod
    from dnnbench.results import numbers
    from dnnbench.results import rounds as rounds_mod
    from dnnbench.results.record import show_outcome
    from dnnbench.results.report import job_name
    from dnnbench.runs.launch import execute
    if not 0 <= tolerance < 1:
        raise DnnbenchError("--tolerance is a fraction between 0 and 1 (0.05 = 5 %)")
    max_rounds = rounds or rounds_mod.MAX_ROUNDS
    file, data = load(result)
    opts = options_for(data, runtime=runtime, image=image, results=results, run_id=run_id, data_dir=data_dir,
                       quiet=quiet, env=env, where=str(file), allow_changed_script=allow_changed_script)
    engine = lookup(opts.runtime)
    if engine is not None and not engine.contained:   # this Python runs it: no image holds the versions
        _warn_host_versions(data)
    sides = {"new": opts}
    if image:    # the original too, when it can still run here: then the two alternate
        try:
            sides = {"original": options_for(data, runtime=runtime, image=None, results=results, run_id=run_id,
                                             data_dir=data_dir, quiet=quiet,
                                             allow_changed_script=allow_changed_script), "new": opts}
        except DnnbenchError as exc:
            info(f"the original image cannot run here ({exc}): the verdict is single-sided")
    old = numbers.run_headline(data)["value"]
    then = load_mod.of_result(data).get("load1")
    figures: dict[str, list[float]] = {k: [] for k in sides}
    runs: dict[str, list[dict]] = {k: [] for k in sides}
    base_id, code, j = None, 0, None
    for n in range(max_rounds):
        for side in rounds_mod.order(list(sides), n):
            o = sides[side]
            name: str | None = None if base_id is None else f"{base_id}-{side}{n + 1}"
            plan = plan_for(data, dataclasses.replace(o, run_id=name or o.run_id))
            base_id = base_id or plan.run_id
            plan.job = job_name(data)    # the runs line up as one job in `report` and `compare`
            info(f"reproducing {file} as {plan.run_id} ({side}, round {n + 1} of <={max_rounds}): {plan.workload} "
                 f"on {plan.runtime} ({plan.image or 'this Python'})")
            new, code = execute(plan, quiet=quiet)
            show_outcome(Path(plan.run_dir), new)
            if new.get("status") != "ok":
                return code or 1
            figures[side].append(numbers.run_headline(new)["value"])
            runs[side].append(new)
        # wall or contention-corrected figures, one basis for every run judged (the recorded one too)
        heads = {k: [numbers.run_headline(r) for r in v] for k, v in runs.items()}
        if "original" in sides:     # alternated: paired rounds
            key, note = rounds_mod.basis(heads["original"] + heads["new"])
            j = rounds_mod.judge(rounds_mod.log_ratios([h[key] for h in heads["original"]],
                                                       [h[key] for h in heads["new"]]), tolerance, max_rounds,
                                 loads=load_mod.of_runs(runs["new"] + runs["original"]), basis=note)
        else:                       # measured apart from the recorded run: its load compared
            recorded = numbers.run_headline(data)
            key, note = rounds_mod.basis([recorded] + heads["new"])
            j = rounds_mod.single_sided([h[key] for h in heads["new"]], recorded[key] or 0.0, tolerance, max_rounds,
                                        loads_new=load_mod.of_runs(runs["new"]), load_recorded=then, basis=note)
        if j.done:
            break
    assert j is not None
    single = "original" not in sides
    out.print(f"recorded: {numbers.fmt(old)}/s; new: " + ", ".join(numbers.fmt(v) for v in figures["new"])
              + ("" if single else "; original again: " + ", ".join(numbers.fmt(v) for v in figures["original"]))
              + f"; new/{'recorded' if single else 'original'} {j.pct()} over {j.rounds} run"
              + ("s" if j.rounds != 1 else ""), markup=False)
    for side, done in runs.items():   # a wide interval of the new runs (or the original's): why
        pooled = numbers.job_headline(done)
        wide = load_mod.explain(pooled, [w for r in done for w in r.get("windows") or []])
        if wide:
            out.print(f"{side} runs: +-95% CI {pooled['ci95_pct'] or 0:.1f} %, wide: {wide}", markup=False)
    words = {"same": f"reproduced: the new figure is within +-{tolerance:.0%} of the "
                     f"{'old' if single else 'original'}",
             "faster": f"not reproduced: the new runs are faster by more than {tolerance:.0%}",
             "slower": f"not reproduced: the new runs are slower by more than {tolerance:.0%}",
             "inconclusive": f"inconclusive: {j.why}"}
    if j.basis and j.verdict != "inconclusive":
        out.print(j.basis, markup=False)
    out.print(f"verdict: {words[j.verdict]}" + (
        " (single-sided, not alternated: the recorded run cannot be measured again and counts as one "
        f"run with the new runs' spread; its load then {'unknown' if then is None else f'{then:.1f}'})" if single else
        " (the original and the new image alternated in rounds)"), markup=False)
    return 1 if j.verdict in ("faster", "slower") else 0
