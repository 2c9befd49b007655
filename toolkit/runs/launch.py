"""`dnnbench run`: check the input, make a RunPlan, run it on an engine, keep everything.

Every check that can fail on user input runs before anything starts. Whatever then happens
(failure, Ctrl-C, timeout), results/<run-id>/ holds plan.json, log.txt and result.json.
"""
from __future__ import annotations

import collections
import os
from pathlib import Path
from typing import TYPE_CHECKING

from dnnbench.containers.engines import named
from dnnbench.containers.engines.common import Job
from dnnbench.runs import environment
from dnnbench.runs import plan as plan_mod
from dnnbench.runs.options import RunOptions
from dnnbench.console import err, info, out, visible, warn
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

EXIT_TIMEOUT = 124

if TYPE_CHECKING:
    from dnnbench.runs.supervise import Outcome


def finalize_recorded(run_dir: Path, *, plan: dict, **kwargs) -> dict:
    """The run's result, finalized (results.record.finalize), then recorded in the history (a
    store problem is one warning line, never an exception); a suite's parallel copy is recorded
    in its combined result instead."""
    from dnnbench.history.record import record
    from dnnbench.results.record import finalize
    data = finalize(run_dir, plan=plan, **kwargs)
    if not plan.get("copy_of"):
        from dnnbench.workloads import schema
        record(run_dir / schema.RESULT_FILE, data)
    return data


def build_plan(opts: RunOptions, resume: bool = False) -> plan_mod.RunPlan:
    """Every check, then the plan of a benchmark or a script run (runs/kinds.py)."""
    from dnnbench.runs import kinds
    return kinds.build_plan(kinds.kind_of(opts), opts, resume=resume)

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
            return finalize_recorded(run_dir, plan=plan.to_dict(), outcome=outcome, command=command,
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


def train_command(opts: RunOptions, train: dict) -> int:
    """`dnnbench train`: the plan run, then (with --mlperf) the MLPerf checker on its log."""
    from dnnbench.runs import kinds
    plan = kinds.build_plan(kinds.kind_of(opts, train), opts, train, resume=bool(train.get("resume")))
    code = run_plan(plan, opts)
    if train.get("mlperf") and not opts.dry_run:
        from dnnbench.results.mlperf import after_training
        code = after_training(Path(plan.run_dir), code)
    return code
