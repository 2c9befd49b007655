"""`dnnbench slurm`: an sbatch script that runs a workload on N nodes through the engines HPC
sites have: `srun` starts one torchrun agent per node inside `apptainer exec --nv` (or on the
nodes' own Python), the agents meet at a c10d rendezvous on the first node, and rank 0 writes
one result, with every rank's numbers, into one run folder on the shared filesystem.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from dnnbench import __version__, names
from dnnbench.containers.engines import Engine, lookup, spoken
from dnnbench.runs import checks, environment, kinds, lost_nodes
from dnnbench.runs.manifest import host_manifest
from dnnbench.runs.schedulers import SCHEDULERS, Watch
from dnnbench.runs import launch as run_mod
from dnnbench.console import err, info, out, unprintable
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

SLURM = SCHEDULERS["slurm"]   # the scheduler this placement submits to (runs/schedulers)
SCRIPT = SLURM.script
# fullmatch everywhere: `$` also matches before a trailing newline, which would end an #SBATCH line
_TIME = re.compile(r"\d+|\d+:\d{2}|\d+:\d{2}:\d{2}|\d+-\d+|\d+-\d+:\d{2}|\d+-\d+:\d{2}:\d{2}")
_NAME = re.compile(r"[A-Za-z0-9_.,+-]+")
# Shell variables the script sets; kept unquoted through shlex by these stand-ins.
_VARS = {"@NTASKS@": "${SLURM_NTASKS}", "@HEAD@": "${HEAD_ADDR}", "@PORT@": "${PORT}", "@JOB@": "${SLURM_JOB_ID}",
         "@RESUME@": "${RESUME}"}


@dataclass
class SlurmOptions:
    run: run_mod.RunOptions                 # workload, data, image/base, runtime, harness options
    nodes: int = 1
    gpus_per_node: int = 0
    nproc_per_node: int | None = None        # CPU runs: processes per node (gloo)
    partition: str | None = None
    time: str | None = None
    account: str | None = None
    cpus_per_task: int | None = None
    sbatch_args: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)   # lines before srun: `module load apptainer`
    env: list[str] = field(default_factory=list)     # KEY=VALUE into the run (NCCL_SOCKET_IFNAME=...)
    scaling: bool = False
    each_node: bool = False                  # one single-node run per node, at the same time
    train: dict | None = None                # `--train`: dnnbench.workloads.train's options
    warn_before: int = 120                   # --train: seconds before the time limit Slurm warns
    submit: bool = False
    wait: bool = False


def _check(o: SlurmOptions, kind) -> None:
    if o.nodes < 1:
        raise DnnbenchError("--nodes must be at least 1")
    if o.gpus_per_node < 0:
        raise DnnbenchError("--gpus-per-node must be 0 (CPU) or more")
    if o.nproc_per_node is not None and (o.nproc_per_node < 1 or o.gpus_per_node):
        raise DnnbenchError("--nproc-per-node is for CPU runs (at least 1); with GPUs one process runs per GPU")
    if o.time is not None and not _TIME.fullmatch(o.time):
        raise DnnbenchError(f"--time {o.time!r}: use Slurm's forms, e.g. 30, 1:30:00 or 1-12:00:00")
    for flag, value in (("--partition", o.partition), ("--account", o.account)):
        if value is not None and not _NAME.fullmatch(value):
            raise DnnbenchError(f"{flag} {value!r}: letters, digits and . , _ + - only")
    if o.cpus_per_task is not None and o.cpus_per_task < 1:
        raise DnnbenchError("--cpus-per-task must be at least 1")
    for arg in o.sbatch_args:
        if not arg.startswith("--") or "\n" in arg:
            raise DnnbenchError(f"--sbatch-arg {arg!r}: give a long sbatch option, e.g. --sbatch-arg=--qos=high")
    environment.parse(o.env, slurm=True)
    if any("\n" in line for line in o.setup):
        raise DnnbenchError("--setup takes one shell line per use")
    if o.each_node and o.scaling:
        raise DnnbenchError("--each-node runs every node on its own: --scaling needs one job across nodes")
    if not 10 <= o.warn_before <= 86400:
        raise DnnbenchError(f"--warn-before {o.warn_before}: seconds, 10 to 86400")
    if kind.requeues and o.time is not None and _TIME.fullmatch(o.time) and \
            o.warn_before >= _seconds(o.time):
        raise DnnbenchError(f"--warn-before {o.warn_before} s is not less than --time {o.time} "
                            f"({_seconds(o.time)} s): the job would be told to stop as it starts")
    if o.wait and not o.submit:
        raise DnnbenchError("--wait goes with --submit")
    engine = lookup(o.run.runtime)
    if engine is None or not engine.slurm:
        raise DnnbenchError(f"--runtime {o.run.runtime!r}: under Slurm, {spoken(where=lambda e: e.slurm)}")


def _seconds(limit: str) -> int:
    """A Slurm time limit in seconds: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S."""
    days, _, rest = limit.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:
        h, m, s = (parts + [0, 0])[:3]
        return ((int(days) * 24 + h) * 60 + m) * 60 + s
    if len(parts) == 1:
        return parts[0] * 60
    if len(parts) == 2:
        return parts[0] * 60 + parts[1]
    return (parts[0] * 60 + parts[1]) * 60 + parts[2]


def _image(o: SlurmOptions, dry_run: bool):
    return _engine(o).slurm_image(o.run.image, o.run.base, dry_run)


def _engine(o: SlurmOptions) -> Engine:
    """The engine of a checked job (_check refuses one that cannot run under Slurm)."""
    engine = lookup(o.run.runtime)
    assert engine is not None
    return engine


def _launcher(python: str, module_args: list[str], per_node: int) -> list[str]:
    """torchrun agent (one per task), with the elastic c10d rendezvous on the first node, then
    `-m MODULE ...`; underscore flags, which torchrun has accepted since PyTorch 1.9."""
    return [python, "-m", "torch.distributed.run", "--nnodes=@NTASKS@", f"--nproc_per_node={per_node}",
            "--rdzv_backend=c10d", "--rdzv_endpoint=@HEAD@:@PORT@", "--rdzv_id=@JOB@", "--max_restarts=0",
            *module_args]


def _each_node(python: str, module_args: list[str], per_node: int) -> list[str]:
    """--each-node: every node runs the job on its own (torchrun --standalone for several
    processes), into RESULTS/RUN/<node>/ (the harness's --per-host)."""
    args = module_args + ["--per-host"]
    if per_node == 1:
        return [python, *args]
    return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={per_node}", *args]


def _takes_value(word: str) -> bool:
    return word.startswith("-") and "=" not in word and word not in ("--cleanenv", "--nv", "--rocm")


def _shell(argv: list[str], width: int = 92) -> str:
    """One shell command, quoted, packed into continued lines of about `width` characters."""
    lines, line = [], ""
    for word in map(shlex.quote, argv):
        if line and len(line) + 1 + len(word) > width and not _takes_value(line.rsplit(" ", 1)[-1]):
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    text = " \\\n    ".join(lines + [line])
    for token, var in _VARS.items():
        text = text.replace(token, var)
    return text


def _plain_text(values: list[tuple[str, str]]) -> None:
    """Every value that reaches job.sbatch is quoted where it is a shell word, but a newline (or
    any control character) in a path would still end a comment or an #SBATCH line and start a
    line of its own: such values are refused, before anything is written."""
    for what, value in values:
        if unprintable(value):   # the one rule (console.visible): C0, C1, bidi controls
            raise DnnbenchError(f"{what} {value!r} holds a control character (a newline would start another "
                                f"line of the job script): use a plain path or name")


def render(o: SlurmOptions, dry_run: bool = False) -> tuple[str, Path, str]:
    """The script, the run folder and the run id, after every check. What runs is the job
    kind's (runs/kinds.py); Slurm adds the placement: torchrun's rendezvous across the nodes,
    the run folder on the shared filesystem, and a requeue for a kind that resumes."""
    opts = o.run
    kind = kinds.kind_of(opts, o.train)
    _check(o, kind)
    if (o.train or {}).get("resume"):
        raise DnnbenchError("--resume is not needed under Slurm: the job (requeued, or its job.sbatch "
                            "submitted again) resumes from the run folder's newest checkpoint by itself")
    for flag, given in (("--scaling", o.scaling), ("--each-node", o.each_node)):
        if given:
            kind.check_spread(flag)
    checked = kind.check(opts, o.train)
    workload, data = checked.workload, checked.data
    img = _image(o, dry_run)
    run_id = opts.run_id or names.new_run_id(workload, "slurm")
    _plain_text([("--results", str(opts.results)), ("--data", str(data or "")), ("--image", img.ref or ""),
                 ("--partition", o.partition or ""), ("--account", o.account or ""), ("--time", o.time or ""),
                 ("--run-id", run_id)] + [(f"--env {item.split('=', 1)[0]}", item) for item in o.env])
    run_dir = checks.make_run_dir(opts.results, run_id, dry_run, opts.run_dir)
    engine = _engine(o)
    gpus = o.gpus_per_node > 0
    per_node = o.gpus_per_node if gpus else (o.nproc_per_node or 1)
    at = kinds.where(engine, data, run_dir)
    device = "cuda" if gpus else "cpu"
    # @RESUME@: --resume where the run folder records a checkpoint (the job script decides)
    module_args = kind.module_args(opts, o.train, checked, run_id=run_id, where=at, device=device,
                                   resume_word="@RESUME@" if kind.requeues else None)
    reference = None
    if o.scaling:
        reference = [img.python] + kind.module_args(
            opts, o.train, checked, run_id=f"{run_id}-reference", device=device,
            where=dataclasses.replace(at, results_in=f"{at.results_in}/reference"))
        module_args += ["--scaling-reference", f"{at.results_in}/reference/result.json"]
    env = {"DNNBENCH_RUN_ID": run_id, **environment.parse(o.env, slurm=True), **kind.env(at)}
    if img.ref:
        env["DNNBENCH_IMAGE"] = img.ref
    # the host's facts (the image by digest) reach the result as a local run's do: plan.json
    manifest = {} if dry_run else {**host_manifest(engine.name, img.ref, img.base, data), **kind.manifest(checked)}
    plan = kinds.plan(kind, opts, o.train, checked, engine=engine, img=img, run_id=run_id, where=at, argv=[],
                      env=env, gpus=["all"] if gpus else None, entrypoint=list(img.entrypoint), manifest=manifest)
    if not dry_run:
        try:
            plan.save(run_dir / "plan.json")
        except OSError as exc:
            raise DnnbenchError(f"cannot write {run_dir / 'plan.json'}: {exc.strerror or exc}") from None
    contained = at.contained

    def wrap(argv: list[str]) -> list[str]:
        return engine.slurm_step(dataclasses.replace(plan, argv=argv))

    # A benchmark: --no-requeue, as after a node failure Slurm would otherwise run the job again
    # into this run folder, over the result that says which node was lost. Training: --requeue
    # (it resumes from its checkpoint), USR1 to the script before the time limit, one log kept
    # across the starts.
    directives = [f"--job-name=dnnbench-{workload}", f"--nodes={o.nodes}", "--ntasks-per-node=1",
                  f"--output={run_dir}/slurm-%j.out"]
    directives += (["--requeue", f"--signal=B:USR1@{o.warn_before}", "--open-mode=append"] if kind.requeues
                   else ["--no-requeue"])
    if gpus:
        directives.append(f"--gpus-per-node={o.gpus_per_node}")
    for flag, value in (("partition", o.partition), ("time", o.time), ("account", o.account),
                        ("cpus-per-task", o.cpus_per_task)):
        if value is not None:
            directives.append(f"--{flag}={value}")
    directives += o.sbatch_args            # last: they override the lines above
    setup = list(o.setup)
    if not contained:
        setup += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    from dnnbench.containers.recipes import environment as templates
    unit = f"{o.gpus_per_node} GPU(s)" if gpus else f"{per_node} CPU process(es)"
    if o.each_node:
        unit += ", each node on its own"
    text = templates().get_template("slurm.sbatch.j2").render(
        title=f"{workload}: {o.nodes} node(s) x {unit} per node",
        version=__version__, script=run_dir / SCRIPT, dry_run=dry_run, directives=directives, setup=setup,
        run_dir=shlex.quote(str(run_dir)),
        reference=_shell(wrap(reference)) if reference else None,
        each_node=o.each_node, train=kind.requeues, warn_before=o.warn_before,
        newest=_shell(wrap([img.python, "-m", "dnnbench.workloads.checkpoint", at.results_in])),
        command=_shell(wrap(_each_node(img.python, module_args, per_node) if o.each_node
                            else _launcher(img.python, module_args, per_node))))
    return text, run_dir, run_id


def slurm_command(o: SlurmOptions, dry_run: bool) -> int:
    if dry_run:
        out.print(render(o, dry_run)[0], markup=False, highlight=False, soft_wrap=True, end="")
        return 0
    script, run_dir, run_id = _written(o)
    if not o.submit:
        info(f"wrote {script}\nsubmit it with: sbatch {script}   (or pass --submit); "
             f"then `dnnbench report {run_dir}`")
        return 0
    if not SLURM.available():
        raise DnnbenchError(f"sbatch is not on PATH: {script} is written; submit it from a Slurm login node")
    if not o.wait:
        job = SLURM.submit(script)
        info(f"submitted job {job}: {script}\nlog: {run_dir}/slurm-{job}.out; when it ends: "
             f"`dnnbench report {run_dir}`")
        return 0
    return _submit_and_wait(o, script, run_dir, run_id)


def _written(o: SlurmOptions) -> tuple[Path, Path, str]:
    """The job script rendered and written in its run folder: (script, run folder, run id)."""
    text, run_dir, run_id = render(o)
    script = run_dir / SCRIPT
    try:
        fileio.write_atomic_bytes(script, text.encode(), mode=0o755)
    except OSError as exc:
        raise DnnbenchError(f"cannot write {script}: {exc.strerror or exc}") from None
    return script, run_dir, run_id


def _submit_and_wait(o: SlurmOptions, script: Path, run_dir: Path, run_id: str) -> int:
    """sbatch --wait, streaming the job's output; Ctrl-C cancels the job (SIGINT to its steps
    first, so the harness keeps a partial result). Then the result gets the host's view, as
    `dnnbench run` gives it."""
    from dnnbench.results.record import show_outcome
    waited = _waited(o, script, run_dir, run_id, echo=True)
    if isinstance(waited, int):     # --each-node: every node's result and the fleet table
        return waited
    data, outcome = waited
    show_outcome(run_dir, data)
    return run_mod.documented_exit(outcome, data.get("status", "error"))


def step_job(run: run_mod.RunOptions) -> dict:
    """One run of a comparison (bisect, compare-images, watch `--slurm`) as a one-node job: the
    same script, submission, wait and Ctrl-C as `dnnbench slurm --submit --wait`, its result in
    the run's own folder (run.run_dir), where a local run's would be; the job's log is not shown
    (the comparison prints a line per figure). Returns the result."""
    o = step_options(run)
    if not SLURM.available():
        raise DnnbenchError("--slurm: sbatch is not on PATH (run it on a Slurm login node)")
    assert run.run_dir is not None
    try:   # a step measured again in its slot: the failed result there must not stand for this job's
        fileio.remove_file(str(run.run_dir / "result.json"))
    except OSError as exc:
        raise DnnbenchError(f"cannot clear {run.run_dir / 'result.json'}: {exc.strerror or exc}") from None
    script, run_dir, run_id = _written(o)
    waited = _waited(o, script, run_dir, run_id, echo=False)
    assert not isinstance(waited, int)
    return waited[0]


def step_options(run: run_mod.RunOptions) -> SlurmOptions:
    """A comparison's run as `dnnbench slurm` options: one node, its GPUs (--gpus 0,1: two) or
    CPU processes (--nproc), the placement given with --slurm, and what a local run of it gets
    set: the caller's CPU threading settings (OpenMP's wait policy alone moves a CPU step 2x on
    a busy node; checks.run_env) and --env."""
    from dnnbench.runs import gpus as gpus_mod
    from dnnbench.workloads.manifest import thread_env
    place = run.slurm
    assert place is not None
    ids = gpus_mod.parse(run.gpus)
    if ids == ["all"]:
        raise DnnbenchError("--gpus all: under --slurm, name the GPUs a run asks Slurm for by count, "
                            "e.g. --gpus 0 (one) or --gpus 0,1 (two)")
    return SlurmOptions(
        run=dataclasses.replace(run, slurm=None, env={}), nodes=1, gpus_per_node=len(ids or []),
        nproc_per_node=None if ids else run.nproc, partition=place.partition, time=place.time,
        account=place.account, cpus_per_task=place.cpus_per_task, sbatch_args=list(place.sbatch_args),
        setup=list(place.setup), env=[f"{k}={v}" for k, v in {**thread_env(os.environ), **(run.env or {})}.items()],
        submit=True, wait=True)


def _waited(o: SlurmOptions, script: Path, run_dir: Path, run_id: str, echo: bool):
    """Submit, follow until Slurm lets the job go (cancel it on Ctrl-C), finalize its result:
    (result, outcome); with --each-node, the fleet check's exit code."""
    from dnnbench.runs.interrupts import caught
    from dnnbench.runs.supervise import Outcome

    started = time.monotonic()
    with caught() as stop:   # signals counted from here, so none lands between submit and cancel
        job, proc = SLURM.submit_waiting(script)
        info(f"job {job} submitted; waiting for it (Ctrl-C cancels it)")
        log = run_dir / f"slurm-{job}.out"
        pos, ended, tail = 0, "exited", []

        def follow() -> bool:
            # through the file layer: a link or FIFO planted as the log is never followed or
            # waited on, and each poll reads a bounded piece
            nonlocal pos
            try:
                fd = fileio.open_fd(str(log))
            except OSError:
                return False     # not written yet, or not a regular file: nothing to show
            with os.fdopen(fd, "rb") as fh:
                fh.seek(pos)
                chunk = fh.read(FOLLOW_BYTES).decode(errors="replace")
                pos = fh.tell()
            if chunk:
                for line in chunk.splitlines():
                    tail.append(line)
                    if echo:
                        err.print(line, markup=False, highlight=False, soft_wrap=True)
                del tail[:-30]
            return bool(chunk)
        # Slurm's own answer decides the end, not sbatch --wait: sbatch may return when a start
        # ends in a requeue (slurm --train at its time limit), and it polls at 2, 8, then 32 s,
        # so a one-minute job would wait up to half a minute more
        watch = Watch(SLURM, job, proc, stop, started)
        while not stop.count and not watch.ended():
            follow()
            stop.sleep(1.0)
        if stop.count:
            ended = "interrupted"
            SLURM.stop_job(job, stop, follow)
        if proc.poll() is None:
            proc.kill()                 # a waiter only: Slurm has let the job go (or was told to)
            proc.wait()
        for _ in range(64):      # the rest of the log, a bounded piece at a time
            if not follow():
                break
        code = SLURM.exit_code(job, proc.returncode) if ended == "exited" else 130
        outcome = Outcome(code, ended, time.monotonic() - started)
        if o.each_node:
            return _each_node_outcome(o, run_dir, run_id, job, outcome, tail, script)
        data = run_mod.finalize_recorded(run_dir, plan=_host_plan(o, run_id), outcome=outcome,
                        command=f"sbatch {script}", log_tail=tail,
                        host_extra={"slurm_job": job, "slurm_states": watch.states},
                        amend=lambda d: lost_nodes.amend(job, log, d))
    return data, outcome


def _host_plan(o: SlurmOptions, run_id: str) -> dict:
    """What record.finalize adds to a result as the host's view of a Slurm run."""
    return {"run_id": run_id, "workload": o.run.workload, "runtime": f"slurm/{o.run.runtime}",
            "image": o.run.image, "base": o.run.base, "gpus": None, "timeout": None}


def _each_node_outcome(o: SlurmOptions, run_dir: Path, run_id: str, job: str, outcome, tail: list[str],
                       script: Path) -> int:
    """--each-node: every node's result gets the host's view (a node that wrote none gets an
    error result), then the fleet table; exit 1 when a node failed or is slow."""
    from dnnbench.results import report
    nodes = list(lost_nodes.nodes_of(job)) or sorted(
        p.name for p in run_dir.iterdir() if fileio.is_real_dir(p) and p.name != "reference")
    failed = []
    for node in nodes:
        fileio.make_dirs(run_dir / node, root=run_dir)
        data = run_mod.finalize_recorded(run_dir / node, plan=_host_plan(o, f"{run_id}-{node}"), outcome=outcome, command=f"sbatch {script}", log_tail=tail,
                        host_extra={"slurm_job": job, "node": node})
        if data.get("status") != "ok":
            failed.append(f"{node} ({data.get('status')}: {str(data.get('message') or '')[:200]})")
    table = report.rows(report.collect([run_dir]), None, 0.05)
    report.render(table, "table", total_score=None, with_baseline=False)
    if outcome.ended == "interrupted":
        return 130
    if failed:
        raise DnnbenchError(f"{len(failed)} of {len(nodes)} node(s) failed: " + "; ".join(failed), exit_code=1)
    slow = [s["host"] for r in table for s in r.get("slow_hosts") or []]
    if slow:
        raise DnnbenchError(f"fleet check: {', '.join(slow)} slower than the median node by more than the "
                            f"tolerance over the rounds ({run_dir})", exit_code=1)
    undecided = [line for r in table for line in r.get("undecided_hosts") or []]
    if undecided:   # one round cannot tell a slow node from a busy moment: said, not named
        info(f"fleet check: inconclusive, {len(undecided)} node(s) below the median in too few rounds "
             f"(`report` over this and more --each-node runs judges them in rounds)")
        return 0
    info(f"fleet check: {len(nodes)} node(s), none slower than the median by more than the tolerance "
         f"over its rounds")
    return 0


FOLLOW_BYTES = 1 << 20   # the most of the job's log shown per poll (a second)
