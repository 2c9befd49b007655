"""`dnnbench reproduce RESULT`: run a result's job again, the same way, and say whether the
figure came back: same workload and harness options (seed included), the workload's own options,
the same dataset, GPUs or processes, and the same image by digest (a tag may have moved)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from dnnbench.containers.engines import Engine, lookup, spoken
from dnnbench.errors import DnnbenchError
from dnnbench.runs import environment
from dnnbench.workloads import schema
from dnnbench.workloads.options import BY_NAME, HOST_OPTIONS

# result options that are not flags to pass again (set by the host, or derived by the harness)
NOT_PASSED = {"data", "synthetic", "timed_iterations", "weight_decay"}   # weight_decay: the workload's own


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
    return file, data


def workload_args(options: dict) -> list[str]:
    """The workload's own options (after `--`), from what the result recorded."""
    out = []
    for key, value in sorted(options.items()):
        if key in BY_NAME or key in NOT_PASSED or value is None or value is False:
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
                data_dir: Path | None, quiet: bool):
    from dnnbench.runs.options import RunOptions
    host = data.get("host") or {}
    runtime = runtime or host.get("runtime")
    engine = lookup(runtime)
    if engine is None:
        raise DnnbenchError(f"the result ran on {runtime!r}: pass --runtime {spoken(aliases=False)}")
    ran_on = lookup(host.get("runtime"))
    opts = data.get("options") or {}
    manifest_host = (data.get("manifest") or {}).get("host") or {}
    dataset = None
    if not data.get("synthetic", opts.get("data") is None):
        dataset = data_dir or manifest_host.get("data") or (opts.get("data") if ran_on and not ran_on.contained else None)
        if dataset is None:
            raise DnnbenchError("the result does not say where its dataset was on this host: pass --data")
    gpus = host.get("gpus")
    world = int(data.get("world_size") or 1)
    harness: dict[str, Any] = {o.name: opts.get(o.name) for o in HOST_OPTIONS}
    if opts.get("start_iter") is not None:   # the TBD window: warmup and repeat follow from it
        harness.update(warmup=None, repeat=None)
    return RunOptions(
        workload=data["workload"], data=Path(dataset) if dataset else None,
        gpus=",".join(gpus) if gpus else None, nproc=world if not gpus and world > 1 else None,
        runtime=engine.name, image=_image(data, engine, image), base=None, build=False, results=results,
        run_id=run_id, quiet=quiet, extra=workload_args(opts),
        env=environment.from_mapping(host.get("env") or {}, "the result's env"), **harness)


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


def reproduce_command(result: Path, *, runtime: str | None, image: str | None, results: Path,
                      run_id: str | None, tolerance: float, quiet: bool, data_dir: Path | None = None) -> int:
    from dnnbench.console import info, out
    from dnnbench.results.record import show_outcome
    from dnnbench.results.report import compare_command, job_name
    from dnnbench.runs.launch import build_plan, execute
    if not 0 <= tolerance < 1:
        raise DnnbenchError("--tolerance is a fraction between 0 and 1 (0.05 = 5 %)")
    file, data = load(result)
    opts = options_for(data, runtime=runtime, image=image, results=results, run_id=run_id, data_dir=data_dir,
                       quiet=quiet)
    engine = lookup(opts.runtime)
    if engine is not None and not engine.contained:   # this Python runs it: no image holds the versions
        _warn_host_versions(data)
    plan = build_plan(opts)
    plan.job = job_name(data)    # the two runs line up as one job in the comparison
    info(f"reproducing {file} as {plan.run_id}: {plan.workload} on {plan.runtime} ({plan.image or 'this Python'})")
    new, code = execute(plan, quiet=quiet)
    show_outcome(Path(plan.run_dir), new)
    if new.get("status") != "ok":
        return code or 1
    verdict = compare_command(file, Path(plan.run_dir) / schema.RESULT_FILE, tolerance).get(plan.job, "-")
    words = {"same": f"reproduced: the new figure is within +-{tolerance:.0%} of the old (95% CI of new/old)",
             "faster": f"not reproduced: the new run is faster by more than {tolerance:.0%}",
             "slower": f"not reproduced: the new run is slower by more than {tolerance:.0%}",
             "inconclusive": f"inconclusive: the 95% CI of new/old straddles +-{tolerance:.0%}; more windows "
                             f"(--until-ci) or repeats would tell"}
    out.print(f"verdict: {words.get(verdict, verdict)}", markup=False)
    return 1 if verdict in ("faster", "slower") else 0
