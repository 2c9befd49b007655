"""`dnnbench run`: check the input, make a RunPlan, run it on an engine, keep everything.

Every check that can fail on user input runs before anything starts. Whatever then happens
(failure, Ctrl-C, timeout), results/<run-id>/ holds plan.json, log.txt and result.json.
"""
from __future__ import annotations

import collections
import difflib
import math
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from dnnbench import names
from dnnbench.containers.engines import named
from dnnbench.containers.engines.common import Job
from dnnbench.runs import environment
from dnnbench.runs import plan as plan_mod
from dnnbench.workloads.manifest import thread_env
from dnnbench.runs.options import RunOptions, harness_values
from dnnbench.workloads.options import AMP, BY_NAME, HOST_OPTIONS
from dnnbench.console import err, info, out, visible, warn
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

if TYPE_CHECKING:
    from dnnbench.runs.supervise import Outcome

EXIT_TIMEOUT = 124
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
    if opts.script is None:   # a script's arguments are its own: its --data is not dnnbench's
        check_extra(opts.extra)
        from dnnbench.runs import workload_args
        workload_args.check(opts.workload, opts.extra)   # `train` checks with its own parser first


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


def entry_argv(python: str, workload: str, nproc: int) -> list[str]:
    """One process, or torchrun (torch.distributed.run, PyTorch 1.9+) with one process per GPU."""
    from dnnbench.runs.kinds import launcher
    return launcher(python, nproc) + ["-m", "dnnbench.workloads", workload]


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


def build_plan(opts: RunOptions, resume: bool = False) -> plan_mod.RunPlan:
    """Every check, then the plan of a benchmark or a script run (runs/kinds.py)."""
    from dnnbench.runs import kinds
    return kinds.build_plan(kinds.kind_of(opts), opts, resume=resume)


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


def job_for(plan: plan_mod.RunPlan) -> tuple[Job, str]:
    """The engine's job for the plan, and the line that does the same by hand."""
    engine = named(plan.runtime)
    environ = None
    if engine.inherits_env:
        environ, dropped = environment.clean_env(os.environ)
        if dropped:
            warn(f"ignoring {', '.join(sorted(dropped))} from your shell: dnnbench starts torchrun itself "
                 f"(--nproc, --gpus) and a stale rendezvous would wait for ranks that never come")
    return engine.job(plan, environ)


def execute(plan: plan_mod.RunPlan, *, quiet: bool = False):
    """Run a plan to the end; returns (result dict, exit code). Owns the run folder for the
    run's life; from the claim on, every way out (failure, signal, timeout, full disk) leaves
    result.json there and no container or process behind."""
    from dnnbench.console import escape
    from dnnbench.runs import claim as claim_mod
    from dnnbench.runs.interrupts import caught

    run_dir = Path(plan.run_dir)
    job, command = job_for(plan)
    with caught() as stop:   # before anything exists, so no signal can land between two steps
        owned = claim_mod.claim(run_dir, run_id=plan.run_id, say=lambda m: warn(escape(m)), resume=plan.resume)
        job.carry(claim_mod.TOKEN_ENV, owned.token)    # what proves it the run's, should it outlive us
        try:
            try:
                owned.record(runtime=plan.runtime, **(job.identity or {}))
                plan.save(run_dir / "plan.json")
                fileio.write_atomic_text(str(run_dir / "log.txt"), f"$ {visible(command)}\n")
                owned.reserve()
            except OSError as exc:
                for name in ("plan.json", "log.txt"):
                    try:
                        fileio.remove_file(str(run_dir / name))
                    except OSError:
                        pass
                owned.abandon()
                if isinstance(exc, fileio.NotRegularFile):
                    raise DnnbenchError(f"run folder {run_dir}: {exc.filename} is {exc.kind}, not what "
                                        f"dnnbench keeps there: remove it or choose another --run-id") from None
                raise DnnbenchError(f"results dir {run_dir} is not writable: {claim_mod.why(exc)}") from None
            return _supervised(plan, job, command, owned, stop, quiet)
        finally:
            owned.release()


def _supervised(plan, job, command, owned, stop, quiet):
    from dnnbench.results.record import finalize
    from dnnbench.runs.claim import why
    from dnnbench.runs.supervise import Outcome, supervise

    run_dir = Path(plan.run_dir)
    log_path = run_dir / "log.txt"
    tail: collections.deque = collections.deque(maxlen=30)
    from dnnbench.runs.host_paths import translator
    as_host = translator(plan.mounts)    # the screen names the host's folders, not /data, /results

    def on_line(line: str) -> None:
        line = as_host(line)
        tail.append(line)
        if not quiet:   # what a terminal would show of a line a progress bar redraws with \r
            err.print(line.rsplit("\r", 1)[-1], markup=False, highlight=False, soft_wrap=True)

    def on_start() -> None:
        started = job.started_as()
        if started:
            try:
                owned.record(**started)   # so a later run can stop it if we die
            except OSError:
                pass   # a full disk: the run goes on, its log says so

    def close(outcome, amend=None) -> dict:
        """finalize; when the disk is full, give up the reserve, say so at the end of the log,
        and write the result in the space that frees."""
        def write() -> dict:
            return finalize(run_dir, plan=plan.to_dict(), outcome=outcome, command=command,
                            log_tail=list(tail), amend=amend)
        if not outcome.log_full:
            try:
                return write()
            except OSError as exc:
                outcome.log_full = f"{why(exc)} writing {run_dir / 'result.json'}"
        owned.free_reserve()
        _append(log_path, f"[dnnbench] error: the results folder ran out of space: {outcome.log_full}\n")
        try:
            return write()
        except OSError as exc:
            raise DnnbenchError(f"the results folder ran out of space: {why(exc)} writing "
                                f"{run_dir / 'result.json'}", log=str(log_path), exit_code=1) from None

    try:
        outcome = supervise(job, log_path=log_path, on_line=on_line, timeout=plan.timeout, stop=stop,
                            say=lambda s: err.print(s, markup=False, highlight=False, soft_wrap=True),
                            on_start=on_start)
    except DnnbenchError as exc:  # the engine refused to start it: keep that in the run folder too
        _append(log_path, f"[dnnbench] error: {exc}\n")
        tail.append(str(exc))
        close(Outcome(125, "exited", 0.0, started=False), None)
        exc.log = str(log_path)
        raise

    def add_profile(data: dict) -> None:
        from dnnbench.profilers import summarize
        data["profile"] = summarize(run_dir, data) or {"problems": [f"{plan.profile} left no output (see log.txt)"]}
    data = close(outcome, add_profile if plan.profile and outcome.started else None)
    return data, documented_exit(outcome, data["status"])


# what `dnnbench run` and `slurm --wait` exit with, and nothing else (README, "Exit codes")
DOCUMENTED_EXITS = (0, 1, 2, 3, 4, 124, 130)


def documented_exit(outcome: Outcome, status: str) -> int:
    """The command's exit code for a run that ended so, with its result's status."""
    code = outcome.exit_code
    if outcome.ended == "timeout":
        return EXIT_TIMEOUT
    if outcome.ended == "interrupted":
        return 130
    if code == 0 and status != "ok":
        return 1
    if code not in DOCUMENTED_EXITS:
        # a killed workload (137, 247), an engine's own code (125, 255), a Slurm job cancelled
        # for a node failure (143): a failed run; the raw code stays in result.json
        # (host.exit_code) and log.txt
        return 1
    return code


def _append(path: Path, text: str) -> None:
    """One more line in the log, if the disk lets us."""
    try:
        with fileio.open_append(str(path)) as log:
            log.write(text)
    except OSError:
        pass


def run_command(opts: RunOptions) -> int:
    return run_plan(build_plan(opts), opts)


def run_plan(plan: plan_mod.RunPlan, opts: RunOptions) -> int:
    """A plan shown (--dry-run) or executed, with the run's summary after it."""
    if opts.dry_run:
        out.print(plan_mod.describe(plan), markup=False, highlight=False)
        out.print(plan_mod.command_line(plan), markup=False, highlight=False, soft_wrap=True)
        return 0
    info(f"run {plan.run_id}: {plan.workload} on {plan.runtime}, image {plan.image or 'none (this Python)'} "
         f"({named(plan.runtime).why(opts.image, opts.base)}), "
         f"{'GPUs ' + ','.join(plan.gpus) if plan.gpus else 'CPU'}; results in {plan.run_dir}")
    data, code = execute(plan, quiet=opts.quiet)
    from dnnbench.results.record import show_outcome
    show_outcome(Path(plan.run_dir), data)
    info(f"result: {Path(plan.run_dir) / 'result.json'}  log: {Path(plan.run_dir) / 'log.txt'}")
    return code
