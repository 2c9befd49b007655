"""A run's checks and the parts of its plan that every job kind shares (runs/kinds.py puts
them together): the workload, dataset, options, profiler, run folder, image, mounts and
environment. Every check that can fail on user input is here, run before anything starts."""
from __future__ import annotations

import difflib
import math
import os
import tempfile
from pathlib import Path

from dnnbench import names
from dnnbench.containers.engines import named
from dnnbench.runs import environment
from dnnbench.runs import plan as plan_mod
from dnnbench.workloads.manifest import thread_env
from dnnbench.runs.options import RunOptions, harness_values
from dnnbench.workloads.options import AMP, BY_NAME, HOST_OPTIONS
from dnnbench.console import warn
from dnnbench.errors import DnnbenchError

# harness flags the host sets itself: after `--` they would point the run elsewhere
HOST_SET = tuple(BY_NAME[n].flag for n in ("results", "run_id", "device", "profile_window", "scaling_reference",
                                           "per_host")) \
    + ("--data", "--synthetic")


def nproc_limit() -> int:
    """The most CPU processes one run may start: more than a few per core only thrashes."""
    return 4 * (os.cpu_count() or 1)


def check_workload(name: str) -> tuple[str, str | None]:
    from dnnbench.workloads import WORKLOADS
    if name not in WORKLOADS:
        close = difflib.get_close_matches(name, list(WORKLOADS), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(sorted(WORKLOADS))}"
        raise DnnbenchError(f"unknown workload {name!r}{hint}")
    return name, WORKLOADS[name].data_kind


def check_data(data: Path | None, workload: str, kind: str | None) -> Path | None:
    """The dataset folder, checked the way the workload will read it (same code as `data verify`)."""
    if data is None:
        return None
    if kind is None:
        raise DnnbenchError(f"{workload} has no real-data path: drop --data (it runs on synthetic data)")
    from dnnbench.workloads import data as data_mod
    path = names.real(names.user_path(data, "--data"))
    found = data_mod.problems(str(path), kind)
    if found:
        more = f" (and {len(found) - 1} more problems: `dnnbench data verify {data} --kind {kind}`)" if len(found) > 1 else ""
        raise DnnbenchError(f"--data {data} is not a valid {kind} dataset: {found[0]}{more}")
    return path


def check_options(opts: RunOptions) -> None:
    """The harness's own checks of the iteration counts, run here so bad input fails before
    anything starts; then the options only the host has."""
    import argparse

    from dnnbench.workloads import harness, options
    from dnnbench.workloads.errors import UsageError
    refused = options.problems(harness_values(opts))
    if refused:
        raise DnnbenchError(refused[0])
    given = lambda value, default: default if value is None else value  # noqa: E731
    counts = argparse.Namespace(batch_size=given(opts.batch_size, 1), number=given(opts.number, 1),
                                repeat=given(opts.repeat, 1), warmup=given(opts.warmup, 0),
                                start_iter=opts.start_iter, stop_iter=opts.stop_iter,
                                until_ci=opts.until_ci, max_windows=opts.max_windows)
    try:
        harness.validate(counts)
    except UsageError as exc:
        raise DnnbenchError(str(exc)) from None
    if opts.nproc is not None and not 1 <= opts.nproc <= nproc_limit():
        raise DnnbenchError(f"--nproc {opts.nproc}: give 1 to {nproc_limit()} (4 per core of this host)")
    if opts.amp not in (None, *AMP):
        raise DnnbenchError(f"--amp {opts.amp!r}: choose fp16, bf16 or none")
    if opts.timeout is not None and not (math.isfinite(opts.timeout) and opts.timeout > 0):
        raise DnnbenchError(f"--timeout {opts.timeout}: give a positive number of seconds")
    if opts.run_id is not None:
        names.path_component(opts.run_id, "--run-id")
    if opts.loader == "gpu" and not opts.gpus:
        warn("--loader gpu without --gpus: the GPU loader's steps run, decoding on the CPU (a check of that "
             "path, not a GPU's speed); add --gpus to decode on a GPU")


def check_extra(extra: list[str]) -> None:
    """Options after `--` go to the workload, but none may set what the host sets (the result
    folder, run id, device, data): argparse also takes any unambiguous prefix of a flag."""
    for word in extra:
        flag = word.split("=", 1)[0]
        if flag.startswith("--") and len(flag) > 2 and any(f.startswith(flag) for f in HOST_SET):
            raise DnnbenchError(f"option {word!r} after `--` would override what dnnbench sets "
                                f"({', '.join(HOST_SET)}): use dnnbench's own --results, --run-id, --gpus, --data")


def check_profile(profile: str | None, gpu_ids: list[str] | None, img) -> str | None:
    """The profiler, if it can profile this run in this image; else a clear error now."""
    from dnnbench.profilers import PROFILERS
    if profile is None:
        return None
    p = PROFILERS.get(profile)
    if p is None:
        raise DnnbenchError(f"--profile {profile!r}: choose {', '.join(PROFILERS)}")
    if p.vendor is None:
        return profile
    if not gpu_ids:
        anywhere = ", ".join(f"--profile {q.name}" for q in PROFILERS.values() if q.vendor is None)
        raise DnnbenchError(f"--profile {profile} profiles GPU kernels: add --gpus (on the CPU, {anywhere})")
    if img.accelerator != p.vendor:
        raise DnnbenchError(f"--profile {profile} needs an {p.vendor.upper()} image; this one is {img.accelerator}")
    from dnnbench.containers import catalog
    base = catalog.catalog().get(img.base or "")
    if base is not None and profile not in base.profilers:
        raise DnnbenchError(f"base {base.name} does not carry {profile} (it has "
                            f"{', '.join(base.profilers) or 'no profiler'}): use --profile torch, or a base with it")
    return profile


def profiled(argv: list[str], profile: str | None, python: str, results_in: str) -> list[str]:
    """The run's argv with its profiler: one that wraps the run goes through the container-side
    launcher (which picks what depends on the GPU); the workload brackets its timed window as
    the profiler asks."""
    from dnnbench.profilers import PROFILERS
    if profile is None:
        return argv
    p = PROFILERS[profile]
    window = ["--profile-window", p.window] if p.window else []
    if not p.wraps:
        return argv + window
    return [python, "-m", "dnnbench.workloads.profile", profile, f"{results_in}/profile", "--"] + argv + window


def check_writable(folder: Path, what: str) -> None:
    """A dry run makes nothing, but says now what a real run would find: the nearest existing
    folder on the way must be a writable folder."""
    path = names.user_path(folder, what).absolute()
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    if not path.is_dir():
        raise DnnbenchError(f"{what} {folder} is not writable: {path} is not a folder")
    import tempfile
    try:      # a probe made and removed at once: os.access says yes to root on /proc and read-only mounts
        os.rmdir(tempfile.mkdtemp(prefix=".dnnbench-probe-", dir=path))
    except OSError as exc:
        raise DnnbenchError(f"{what} {folder} is not writable: {exc.strerror or exc} in {path}") from None


def make_run_dir(results: Path, run_id: str, dry_run: bool, run_dir: Path | None = None) -> Path:
    """run_folder, made now (slurm writes its script there before anything runs)."""
    folder = run_folder(results, run_id, dry_run, run_dir)
    if dry_run:
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # a fresh name (O_EXCL): a link planted under a fixed probe name is never written through
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise DnnbenchError(f"results dir {results} is not writable: {exc.strerror or exc}") from None
    return folder


def run_folder(results: Path, run_id: str, dry_run: bool, run_dir: Path | None = None,
               resume: bool = False) -> Path:
    """Where the run goes, checked to stay under --results. Nothing is made here: execute() claims
    the folder once every check has passed, so a refused run leaves no empty folder behind."""
    if run_dir is None:   # suites give the folder (job/rN) themselves, made of checked names
        names.path_component(run_id, "--run-id")
    folder = names.inside(results, run_dir or results / run_id, "run folder")
    if dry_run:
        check_writable(results, "results dir")
        return folder
    if os.path.lexists(folder / "result.json") and not resume:
        raise DnnbenchError(f"{folder} already holds a result: choose another --run-id")
    return folder


def harness_args(opts: RunOptions, *, data_in: str | None, results_in: str, run_id: str, device: str) -> list[str]:
    from dnnbench.workloads import options
    args = ["--results", results_in, "--run-id", run_id, "--device", device]
    args += ["--data", data_in] if data_in else ["--synthetic"]
    return args + options.argv(harness_values(opts)) + list(opts.extra)


def launcher(python: str, nproc: int) -> list[str]:
    """One process, or torchrun (torch.distributed.run, PyTorch 1.9+) with one process per GPU."""
    return [python] if nproc <= 1 else [python, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
                                         f"--nproc_per_node={nproc}"]


def base_run_facts(base_name: str | None) -> dict:
    """The base's run settings (NGC's ulimits and ipc): a catalogued base's own, an uncatalogued
    NGC tag's from the nearest release, as `render` takes its recipe."""
    from dnnbench.containers import catalog
    if base_name:
        try:
            return dict(catalog.resolve(base_name)[0].run)
        except DnnbenchError:
            pass
    return {"ipc": "host"}


def resolve_image(opts: RunOptions, runtime: str):
    engine = named(runtime)
    if not engine.contained:
        return engine.resolve(opts.image, opts.base, opts.build)
    if opts.image:
        engine.check_ref(opts.image)
    if opts.base:
        from dnnbench.containers import catalog
        catalog.resolve(opts.base)     # an unknown base is refused in a dry run too
    if opts.dry_run:  # the plan, without starting or building anything
        return engine.planned(opts.image, opts.base)
    return engine.resolve(opts.image, opts.base, opts.build)


def run_mounts(data: Path | None, run_dir: Path) -> list[plan_mod.Mount]:
    """A container run's mounts: the dataset read-only at /data, the run folder at /results."""
    mounts = [plan_mod.Mount(str(data), plan_mod.DATA_DIR, read_only=True)] if data else []
    return mounts + [plan_mod.Mount(str(run_dir), plan_mod.RESULTS_DIR, read_only=False)]


def run_env(opts: RunOptions, run_id: str, image: str | None, runtime: str, more: dict | None = None) -> dict:
    """What a run's processes get set, on every runtime. The caller's CPU threading settings
    (Apptainer and the host pass the environment on; docker does not): OpenMP's wait policy
    alone moves a CPU step 2x on a busy node (benchmarks/omp_wait.py), and the README tells
    users to set it. Then the user's --env, checked again (a suite's or a result's reach here
    too), and dnnbench's own names, which --env may not give."""
    env = {**thread_env(os.environ), **environment.from_mapping(opts.env, "--env"),
           "DNNBENCH_RUN_ID": run_id, **(more or {})}
    if image:
        env["DNNBENCH_IMAGE"] = image
    for name, value in named(runtime).env_defaults.items():
        env.setdefault(name, value)
    return env


SCRIPT_OPTIONS = ("warmup", "number", "repeat")   # the harness options a script run takes


def script_parts(opts: RunOptions) -> tuple[Path, str, Path | None, str]:
    """A script run's checks (`run --script`, `slurm --script`, a suite's `script:` job): the
    script's folder and entry, the dataset folder, the name its results go under."""
    from dnnbench.runs import script as script_mod
    from dnnbench.workloads.instrument import workload_name
    folder, entry = script_mod.locate(names.user_path(opts.script, "--script"), opts.entry)
    given = [o.flag for o in HOST_OPTIONS if o.name not in SCRIPT_OPTIONS and getattr(opts, o.name) not in (None, False)]
    if given:
        raise DnnbenchError(f"{given[0]} is the script's own business with --script: pass its own flag after `--`")
    check_options(opts)
    if opts.unit is not None:
        names.path_component(opts.unit, "--unit")
    data = None
    if opts.data is not None:
        data = names.real(names.user_path(opts.data, "--data"))
        if not data.is_dir():
            raise DnnbenchError(f"--data {opts.data} is not a folder")
    return folder, entry, data, workload_name(entry)
