"""`dnnbench reproduce RESULT`: run a result's job again, the same way, and say whether the
figure came back: same workload and harness options (seed included), the workload's own options,
the same dataset, GPUs or processes, and the same image by digest (a tag may have moved).

Every kind of job: a workload benchmark runs again with its options; a training run runs
`train` again with its training options; a user's script runs again from its path, refused in
one line when its SHA-256 is no longer the recorded one (unless allowed)."""
from __future__ import annotations

from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable

from dnnbench.containers.engines import Engine, lookup, spoken
from dnnbench.errors import DnnbenchError
from dnnbench.runs import environment
from dnnbench.workloads import schema
from dnnbench.workloads.options import BY_NAME, HOST_OPTIONS
from dnnbench.workloads.options import argv as harness_argv

# result options that are not flags to pass again (set by the host, or derived by the harness)
NOT_PASSED = {"data", "synthetic", "timed_iterations", "weight_decay"}   # weight_decay: the workload's own
# a training result's options that the host sets, not the user (or facts the run derived)
TRAIN_SET_BY_HOST = {"data", "results", "run_id", "device", "resume", "help"}
# a script result's options: the instrumentation's, each with what it must be
SCRIPT_OPTIONS = {"warmup": "a whole number", "number": "a whole number", "repeat": "a whole number",
                  "items_per_step": "a whole number or null", "run_to_end": "true or false"}


def _script_option_ok(name: str, value: Any) -> bool:
    if name == "run_to_end":
        return isinstance(value, bool)
    whole = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**31
    return whole or (value is None and name == "items_per_step")


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


def _text(value) -> bool:
    return value is None or isinstance(value, str)


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
        out += [f"{where}.{k} must be text, not {block.get(k)!r:.40}" for k in keys if not _text(block.get(k))]
    image = mhost.get("image") or {}
    if not isinstance(image, dict) or not all(_text(image.get(k)) for k in ("id", "sha256")):
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
    return out + _READ_BACK[_kind(data)].problems(data, opts, out)


def _script_problems(data: dict, opts: dict) -> list[str]:
    """A script result: its timing options, the script's path, SHA-256 and arguments."""
    out = [f"options.{k} {opts[k]!r:.40}: must be {what}" for k, what in SCRIPT_OPTIONS.items()
           if k in opts and not _script_option_ok(k, opts[k])]
    unknown = sorted(k for k in opts if k not in SCRIPT_OPTIONS)
    if unknown:
        out.append(f"options {', '.join(map(repr, unknown))}: not an option of a script run")
    script = data["script"]
    if not isinstance(script.get("path"), str) or not script["path"]:
        out.append("script.path must be the script's path as text")
    args = script.get("argv")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        out.append("script.argv must be a list of text")
    digest = _recorded_sha256(data)
    if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
        out.append("the result records no SHA-256 of its script (manifest.script.sha256)")
    mhost = (data.get("manifest") or {}).get("host") or {}
    if not _text(mhost.get("script")):
        out.append(f"manifest.host.script must be text, not {mhost.get('script')!r:.40}")
    return out


def _recorded_sha256(data: dict) -> Any:
    manifest = data.get("manifest")
    script = manifest.get("script") if isinstance(manifest, dict) else None
    return (script.get("sha256") if isinstance(script, dict) else None) or data["script"].get("sha256")


def _training_problems(workload: str, opts: dict) -> list[str]:
    """A training result's options as `train`'s own parser reads them (the workload's included)."""
    from dnnbench.workloads import load
    from dnnbench.workloads.train import parser_for
    parser = parser_for(load(workload))
    parser.allow_abbrev = False

    def refuse(message):
        raise DnnbenchError(message)
    parser.error = refuse
    try:
        parser.parse_args(["--data", "."] + train_argv(workload, opts))
    except DnnbenchError as exc:
        return [f"options: {exc}"]
    return []


def _train_dests(workload: str) -> set:
    from dnnbench.workloads import load
    from dnnbench.workloads.train import parser_for
    return {a.dest for a in parser_for(load(workload))._actions} - TRAIN_SET_BY_HOST


def train_argv(workload: str, opts: dict) -> list[str]:
    """The options `train` took (its own, the shared harness ones, the workload's), as flags; what
    the run derived and recorded beside them (the task's facts) is not passed."""
    known = _train_dests(workload)
    return workload_args({k: v for k, v in opts.items() if k in known}, passed_harness=True)


def train_options(workload: str, opts: dict) -> tuple[dict, list[str]]:
    """(the training options `train_plan` takes, the workload's own flags after them)."""
    from dnnbench.workloads.train import SHARED, TRAIN_OPTIONS
    own = {o.name for o in TRAIN_OPTIONS}
    known = _train_dests(workload) - own - set(SHARED)
    return ({name: opts.get(name) for name in own if name != "resume"},
            workload_args({k: v for k, v in opts.items() if k in known}))


def _workload_problems(workload: str, opts: dict) -> list[str]:
    """The options as the workload's own argparse parser reads them (the container's, built
    here from the same code): an unknown name or a bad value, as words rather than its exit."""
    from dnnbench.workloads import load
    from dnnbench.workloads.harness import parser_for
    parser = parser_for(load(workload))
    parser.allow_abbrev = False         # `batch` is not --batch-size: a name is known exactly or not
    known = {a.dest for a in parser._actions} | set(BY_NAME) | NOT_PASSED
    unknown = sorted(k for k in opts if k not in known)
    if unknown:
        return [f"options {', '.join(map(repr, unknown))}: not an option of {workload} or the harness"]

    def refuse(message):
        raise DnnbenchError(message)
    parser.error = refuse
    harness = {o.name: opts.get(o.name) for o in HOST_OPTIONS}
    try:
        parser.parse_args(harness_argv(harness) + workload_args(opts))
    except DnnbenchError as exc:
        return [f"options: {exc}"]
    return []


def workload_args(options: dict, passed_harness: bool = False) -> list[str]:
    """The workload's own options (after `--`), from what the result recorded (with the harness's
    too when `passed_harness`)."""
    out = []
    for key, value in sorted(options.items()):
        if (key in BY_NAME and not passed_harness) or key in NOT_PASSED or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        out += [flag] if value is True else [flag, str(value)]
    return out


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
    read_back = _READ_BACK[_kind(data)]
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


def _script_file(data: dict, allow_changed: bool) -> Path:
    """The script to run again: where the host found it (the result's own path on the host
    runtime), refused when its SHA-256 is no longer the recorded one unless `allow_changed`."""
    import hashlib

    from dnnbench.workloads import fileio
    path = ((data.get("manifest") or {}).get("host") or {}).get("script") or data["script"]["path"]
    if not fileio.is_regular(path):
        raise DnnbenchError(f"the result's script {path} is not here: {fileio.kind_at(path)}")
    now = hashlib.sha256(fileio.read_bytes(path, max_bytes=64 * 2**20)).hexdigest()
    if now != _recorded_sha256(data) and not allow_changed:
        raise DnnbenchError(f"{path} changed since the result was made (its SHA-256 differs): pass "
                            f"--allow-changed-script to run it anyway")
    return Path(path)


def _script_args(data: dict, manifest_host: dict) -> list[str]:
    """The script's arguments as it got them, the dataset's path in them put back as `{data}`
    (the new run puts its own there)."""
    from dnnbench.runs import plan as plan_mod, script as script_mod
    args = list(data["script"].get("argv") or [])
    if not manifest_host.get("data"):
        return args
    ran_on = lookup((data.get("host") or {}).get("runtime"))
    was = manifest_host["data"] if ran_on is not None and not ran_on.contained else plan_mod.DATA_DIR
    return [script_mod.DATA_TOKEN if a == was else a for a in args]


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
    return kinds.build_plan(kinds.of_result(data), opts, _READ_BACK[_kind(data)].job(data))


def _kind(data: dict) -> str:
    """The name of the job kind that made the result (runs/kinds.py)."""
    from dnnbench.runs import kinds
    return kinds.of_result(data).name


def _workload_problems_of(check):
    """A workload's or training's options, checked by its parser when the workload is known and
    nothing else was found wrong first."""
    from dnnbench.workloads import WORKLOADS

    def problems(data: dict, opts: dict, found: list) -> list[str]:
        return [] if found or data.get("workload") not in WORKLOADS else check(data["workload"], opts)
    return problems


def _dataset(data: dict, opts: dict, here, ran_on) -> str | None:
    """Where a workload's or training's dataset is here (None: synthetic)."""
    if data.get("synthetic", opts.get("data") is None):
        return None
    dataset = here or (opts.get("data") if ran_on and not ran_on.contained else None)
    if dataset is None:
        raise DnnbenchError("the result does not say where its dataset was on this host: pass --data")
    return dataset


def _script_own(data: dict, opts: dict, manifest_host: dict, allow_changed: bool) -> tuple[list[str], dict]:
    return _script_args(data, manifest_host), dict(
        workload=None, script=_script_file(data, allow_changed), items_per_step=opts.get("items_per_step"),
        run_to_end=bool(opts.get("run_to_end")), unit=str(data.get("unit") or "items/s").rsplit("/s", 1)[0] or None)


@dataclass(frozen=True)
class ReadBack:
    """How a result of one job kind is read back to run again: what in its options may be wrong,
    where its dataset is here, its run's own options (the arguments after `--`, and the fields
    beside the harness ones), and its kind's block of options for the plan."""
    problems: Callable[[dict, dict, list], list[str]]
    dataset: Callable[[dict, dict, Any, Any], Any]
    own: Callable[[dict, dict, dict, bool], tuple[list[str], dict]]
    job: Callable[[dict], dict | None] = lambda data: None


_READ_BACK = {   # by the name of the kind in runs/kinds.py's KINDS
    "run": ReadBack(_workload_problems_of(lambda workload, opts: _workload_problems(workload, opts)), _dataset,
                    lambda data, opts, mhost, allow: (workload_args(opts), {})),
    "train": ReadBack(_workload_problems_of(lambda workload, opts: _training_problems(workload, opts)), _dataset,
                      lambda data, opts, mhost, allow: (train_options(data["workload"], opts)[1], {}),
                      lambda data: train_options(data["workload"], data["options"])[0]),
    # a script reads the dataset it was given, if any
    "script": ReadBack(lambda data, opts, found: _script_problems(data, opts), lambda data, opts, here, ran_on: here,
                       _script_own),
}


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
