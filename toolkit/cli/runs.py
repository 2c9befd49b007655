"""Commands of the run stage: run, slurm, suite, and the workloads they run."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional

import typer

from dnnbench.console import WIDE_HELP

from dnnbench.cli.harness_options import INJECTED, choice, in_range, with_harness_options, with_params
from dnnbench.cli.exports import JUNIT
from dnnbench.cli.host_options import params as host_params, with_host_options
from dnnbench.errors import DnnbenchError
from dnnbench.workloads.options import BY_NAME
from dnnbench.profilers import NAMES as PROFILERS
from dnnbench.containers.engines import lookup
from dnnbench.runs.options import RunOptions

if TYPE_CHECKING:   # choices at run time (typer lists and checks them); strings once parsed
    Profiler = str
else:
    Profiler = choice("Profiler", PROFILERS)

RUN_HELP = """Run one workload in a container (or on the host) and keep its result.

Examples (the second starts one process per GPU under torchrun):

\b
  dnnbench run resnet50 --gpus 0 --amp fp16 --channels-last
  dnnbench run inception_v3 --data /imagenet --gpus 0,1
  dnnbench run resnet18 --base cpu --build --number 5 --repeat 3
  dnnbench run wlm --runtime singularity --image dnnbench_ngc-24.10.sif \\
      --gpus all

Options after `--` go to the workload unchanged (`python -m dnnbench.workloads W --help`).

Your own script, measured without a change (windows of its optimizer steps, items from its
DataLoader batches; with --data, the dataset's path comes first among its arguments, or
replaces a `{data}` in them):

\b
  dnnbench run --script main.py --data /imagenet -- -a resnet18 -b 64 -j 8

The dataset is mounted read-only at /data, the run folder read-write at /results; the run
folder results/<run-id>/ gets plan.json, log.txt and result.json whatever happens.

Throughput is items over seconds summed over the timed windows (statistic sum_items/sum_seconds,
not a mean of per-window rates), with its 95% CI and the window median; `--until-ci 2` adds
windows until the CI is within +-2% (at most --max-windows)."""


# a user's script instead of a workload: `run --script` and `slurm --script`
SCRIPT_PARAMS = {
    "script": (Optional[Path], typer.Option(None, "--script", help="Your own training script (a file, or a folder "
                                            "with main.py/train.py), timed unchanged; its arguments go after `--`.")),
    "entry": (Optional[str], typer.Option(None, "--entry", help="With a --script folder: its entry file.")),
    "items_per_step": (Optional[int], typer.Option(None, "--items-per-step", min=1, max=2**31, help="With --script: "
                                                   "items one step holds, when its batches do not tell.")),
    "run_to_end": (bool, typer.Option(False, "--run-to-end", help="With --script: let it finish after the timed "
                                      "windows.")),
    "unit": (Optional[str], typer.Option(None, "--unit", help="With --script: what its items are (images, samples, "
                                         "tokens; default items).")),
}


def run_options(workload: Optional[str], host: dict, **more) -> RunOptions:
    """A run's options from a command's host options (--env checked into its mapping) and the rest."""
    from dnnbench.runs import environment
    return RunOptions(workload=workload or "", **{**host, "env": environment.parse(host.get("env") or [])}, **more)


def workload_or_script(workload: Optional[str], extra: list, script) -> tuple[Optional[str], list]:
    """With --script no workload is named: a word where the workload goes is the script's."""
    if script is not None and workload is not None:
        extra, workload = [workload] + extra, None
    if (workload is None) == (script is None):
        raise DnnbenchError("name a workload (`dnnbench workloads`) or give --script PATH, one of the two")
    return workload, extra


def job_command(name: str):
    """A command that runs a workload or a --script (run, slurm): the script's options, the
    harness options and the command's host options (host_options.COMMANDS[name])."""
    def wrap(command):
        return with_params(SCRIPT_PARAMS, key="script_opts")(with_harness_options()(with_host_options(name)(command)))
    return wrap


WORKLOAD_OR_SCRIPT = typer.Argument(None, help="Workload name (`dnnbench workloads` lists them); none with --script.")


@job_command("run")
def run(
    ctx: typer.Context,
    workload: Optional[str] = WORKLOAD_OR_SCRIPT,
    synthetic: bool = typer.Option(False, "--synthetic", help="Synthetic batches made on the device (the default without --data)."),
    profile: Optional[Profiler] = typer.Option(None, "--profile",
                                          help="Profile the timed window (--start-iter/--stop-iter pick it); "
                                               "`dnnbench profile show` reads it."),
    host: dict = INJECTED,
    harness: dict = INJECTED,
    script_opts: dict = INJECTED,
):
    from dnnbench.runs.launch import run_command
    if synthetic and host["data"] is not None:
        raise DnnbenchError("--synthetic and --data exclude each other")
    workload, extra = workload_or_script(workload, list(ctx.args), script_opts["script"])
    raise typer.Exit(run_command(run_options(workload, host, profile=profile, extra=extra, **script_opts, **harness)))


def _train_options():
    from dnnbench.workloads.train import TRAIN_OPTIONS
    return TRAIN_OPTIONS


SLURM_HELP = """Write (and with --submit, submit) an sbatch script that runs a workload on Slurm nodes.

srun starts one torchrun agent per node inside `apptainer exec --nv` (or on the nodes' Python
with --runtime host); the agents meet at a rendezvous on the first node; rank 0 writes one
result with every rank's numbers into RESULTS/<run-id>/, next to the script and Slurm's log.

Examples:

\b
  dnnbench slurm resnet50 --image dnnbench_ngc-24.10.sif --nodes 2 \\
      --gpus-per-node 8 --partition gpu --time 30 --scaling --submit
  dnnbench slurm bert --base ngc-24.10 --nodes 4 --gpus-per-node 4 \\
      --setup 'module load apptainer' --dry-run
  dnnbench slurm resnet50 --image dnnbench_ngc-24.10.sif --nodes 16 \\
      --gpus-per-node 8 --each-node --submit --wait     # which node is slow?
  dnnbench slurm resnet50 --train --data /imagenet --target-accuracy 75 \\
      --image dnnbench_ngc-24.10.sif --nodes 4 --gpus-per-node 8 --time 4:00:00

With --train the job trains to a target accuracy, as the train command does: --warn-before
seconds before the time limit it checkpoints and requeues itself, and each start resumes from
the run folder's newest checkpoint; the result keeps every start's host and times.

Options after `--` go to the workload unchanged."""


# where a Slurm job goes: `slurm`, and the runs of compare-images, bisect and watch --slurm
SLURM_PARAMS = {
    "partition": (Optional[str], typer.Option(None, "--partition", "-p", help="Slurm partition.")),
    "time": (Optional[str], typer.Option(None, "--time", "-t", help="Slurm time limit: minutes, H:MM:SS or "
                                         "D-HH:MM:SS.")),
    "account": (Optional[str], typer.Option(None, "--account", "-A", help="Slurm account to charge.")),
    "cpus_per_task": (Optional[int], typer.Option(None, "--cpus-per-task", help="Cores per node's task (DataLoader "
                                                  "workers need them).")),
    "sbatch_args": (List[str], typer.Option([], "--sbatch-arg", help="Extra sbatch option, e.g. "
                                            "--sbatch-arg=--qos=high (repeatable; overrides the ones above).")),
    "setup": (List[str], typer.Option([], "--setup", help="Shell line run before srun, e.g. 'module load "
                                      "apptainer' (repeatable).")),
}


@with_params(SLURM_PARAMS, key="placement")
@with_harness_options(options=_train_options(), key="train")
@job_command("slurm")
def slurm(
    ctx: typer.Context,
    workload: Optional[str] = WORKLOAD_OR_SCRIPT,
    nodes: int = typer.Option(1, "--nodes", "-N", callback=in_range(BY_NAME["nodes"]), help="Nodes (one torchrun agent each)."),
    gpus_per_node: int = typer.Option(0, "--gpus-per-node", "-G", callback=in_range(BY_NAME["gpus_per_node"]), help="GPUs per node, one process each; 0 runs on CPUs (gloo)."),
    nproc_per_node: Optional[int] = typer.Option(None, "--nproc-per-node", callback=in_range(BY_NAME["nproc_per_node"]), help="CPU runs: processes per node (default 1)."),
    host: dict = INJECTED,
    scaling: bool = typer.Option(False, "--scaling", help="Run one process first as the reference: the result gets scaling efficiency."),
    each_node: bool = typer.Option(False, "--each-node", help="Fleet check: every node runs the job on its own, all at once, each its own result in RESULTS/<run-id>/<node>/; `report` (and --wait) names nodes slower than the median by more than their CI."),
    submit: bool = typer.Option(False, "--submit", help="Submit the script with sbatch."),
    wait: bool = typer.Option(False, "--wait", help="With --submit: follow the job's log until it ends (Ctrl-C cancels it)."),
    train_mode: bool = typer.Option(False, "--train", help="Train to a target accuracy (the `dnnbench train` "
                                    "options below), requeued at the time limit and resumed from its checkpoint."),
    warn_before: int = typer.Option(120, "--warn-before", min=10, max=86400, help="With --train: seconds before "
                                    "the time limit at which the job checkpoints and requeues itself."),
    harness: dict = INJECTED,
    script_opts: dict = INJECTED,
    train: dict = INJECTED,
    placement: dict = INJECTED,
):
    from dnnbench.runs.slurm import SlurmOptions, slurm_command
    workload, extra = workload_or_script(workload, list(ctx.args), script_opts["script"])
    if not train_mode:
        given = [o.flag for o in _train_options() if train[o.name] not in (None, False, o.default)]
        if given:
            raise DnnbenchError(f"{given[0]} is a training option: add --train")
    env, dry_run = host.pop("env"), host.pop("dry_run")   # the tasks' (checked as Slurm's); the script's
    opts = run_options(workload, host, extra=extra, **script_opts, **harness)
    where: dict[str, Any] = {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in placement.items()}
    raise typer.Exit(slurm_command(SlurmOptions(
        run=opts, nodes=nodes, gpus_per_node=gpus_per_node, nproc_per_node=nproc_per_node, **where, env=env,
        scaling=scaling, each_node=each_node, train=train if train_mode else None,
        warn_before=warn_before, submit=submit, wait=wait), dry_run))


TRAIN_HELP = """Train a workload to a target accuracy: epochs, evaluation, checkpoints, resume.

The pytorch/examples ImageNet recipe for the image classifiers (SGD momentum 0.9, weight decay
1e-4, lr 0.1 x batch/256 divided by 10 every --lr-step epochs; RandomResizedCrop + flip, Resize +
CenterCrop; top-1/top-5), and MLPerf's NCF recipe for ncf (HR@10 on held-out ratings), on the
same runtimes, images, GPUs and run folder as a benchmark run.
The result has every epoch (train loss and throughput, eval top-1/top-5, time on the clock) and
the time to target (training, evaluation and data loading on the clock, as MLPerf counts it).

Checkpoints are written atomically in the run folder at each epoch end; Ctrl-C or SIGTERM
checkpoints at the next step and exits 130; `--resume --run-id ID` continues from there.

Example:

\b
  dnnbench train resnet18 --data DIGITS --image-size 32 \\
      --target-accuracy 90 --epochs 30"""


@with_harness_options(options=_train_options(), key="train")
@with_harness_options(("batch_size", "workers", "amp", "channels_last", "seed", "lr"))
@with_host_options("train")
def train(
    ctx: typer.Context,
    workload: str = typer.Argument(..., help="Workload name (an image classifier or ncf; `dnnbench workloads`)."),
    host: dict = INJECTED,
    harness: dict = INJECTED,
    train: dict = INJECTED,
):
    from dnnbench.runs.launch import train_command
    if host["image"]:
        host["base"] = None
    raise typer.Exit(train_command(run_options(workload, host, build=False, extra=list(ctx.args), **harness), train))


# what compare-images and bisect share: the ordered list, the job's place and the tolerance
IMAGES_PARAMS = {
    "images": (Optional[str], typer.Option(None, "--images", help="Images in release order, comma-separated "
                                           "(docker tags or .sif files).")),
    "bases": (Optional[str], typer.Option(None, "--bases", help="A range of catalog bases, e.g. "
                                          "ngc-24.01..ngc-25.06 (built when missing).")),
    "tolerance": (float, typer.Option(BY_NAME["tolerance"].default, "--tolerance", callback=in_range(BY_NAME["tolerance"]),
                                      help="Same when the 95% CI of a ratio is within 1 +- this.")),
    **host_params("compare-images"),    # the same rows for bisect and watch (host_options.COMMANDS)
    "slurm": (bool, typer.Option(False, "--slurm", help="Run each step as a one-node Slurm job (as `dnnbench "
                                 "slurm --submit --wait` does), one at a time, in the rounds' order; with "
                                 "--runtime singularity and .sif images on the shared filesystem. The "
                                 "Slurm options below place the jobs.")),
    **SLURM_PARAMS,
}


def images_job(workload: str, job: dict, harness: dict) -> tuple[RunOptions, Optional[list], Optional[str]]:
    engine = lookup(job["runtime"])
    if engine is not None and not engine.contained:
        raise DnnbenchError("images are compared in containers: --runtime docker or singularity")
    opts = RunOptions(workload=workload, **{name: job[name] for name in host_params("compare-images")},
                      slurm=_placement(job), **harness)
    from dnnbench.lists import members
    return opts, members(job["images"], "--images") if job["images"] is not None else None, job["bases"]


def _placement(job: dict):
    """--slurm's placement of each step, or None (local runs); a Slurm option without --slurm is
    refused, not ignored."""
    from dnnbench.runs.options import SlurmPlacement
    given = [info.param_decls[0] for name, (_, info) in SLURM_PARAMS.items() if job[name] not in (None, [], ())]
    if not job["slurm"]:
        if given:
            raise DnnbenchError(f"{given[0]} places the runs on Slurm: add --slurm")
        return None
    engine = lookup(job["runtime"])
    if engine is None or not (engine.slurm and engine.contained):    # the images in a container of a Slurm step
        from dnnbench.containers.engines import spoken
        raise DnnbenchError(f"--slurm runs the images with Apptainer: add --runtime "
                            f"{spoken(False, lambda e: e.slurm and e.contained)} (not {job['runtime']}), with "
                            f".sif images on the shared filesystem")
    where: dict[str, Any] = {name: tuple(job[name]) if isinstance(job[name], (list, tuple)) else job[name]
                             for name in SLURM_PARAMS}
    return SlurmPlacement(**where)


@with_params(IMAGES_PARAMS, key="job")
@with_harness_options()
def compare_images(
    workload: str = typer.Argument(..., help="Workload name (`dnnbench workloads`)."),
    wide: bool = typer.Option(False, "--wide", help=WIDE_HELP),
    rounds: int = typer.Option(8, "--rounds", callback=in_range(BY_NAME["rounds"]),
                               help="The most rounds: every image measured once a round, the order reversed "
                                    "each round (A B, B A, ...); verdicts from the rounds' paired ratios, "
                                    "looked at from 3 rounds on, stopping once all are decided."),
    harness: dict = INJECTED,
    job: dict = INJECTED,
):
    """The same job on each image, in order, in rounds: one table of the images' facts (PyTorch,
    CUDA, cuDNN, NCCL), throughput with its 95% CI, the ratio to the first over the rounds with its
    interval, and a verdict (same, faster, slower, inconclusive and what would decide it).
    Finished steps of the same identity (options, image digest, dataset) are read back. A CPU
    job's steps run on one thread (OMP_NUM_THREADS=1) unless you set it."""
    from dnnbench.campaigns.bisect import compare_images_command
    opts, images, bases = images_job(workload, job, harness)
    raise typer.Exit(compare_images_command(opts, images, bases, job["tolerance"], wide, rounds))


@with_params(IMAGES_PARAMS, key="job")
@with_harness_options()
def bisect(
    workload: str = typer.Argument(..., help="Workload name (`dnnbench workloads`)."),
    good: Optional[str] = typer.Option(None, "--good", help="The last image known fast (default: the list's first)."),
    bad: Optional[str] = typer.Option(None, "--bad", help="The image known slow (default: the list's last)."),
    rounds: int = typer.Option(8, "--rounds", callback=in_range(BY_NAME["rounds"]),
                               help="The most rounds per judgement (the ends, then each midpoint with both "
                                    "ends), the order reversed each round; looked at from 3 rounds on."),
    max_runs: Optional[int] = typer.Option(None, "--max-runs", callback=in_range(BY_NAME["max_runs"]),
                                           help="Stop after N runs with the verdict so far."),
    deadline: Optional[float] = typer.Option(None, "--deadline", callback=in_range(BY_NAME["deadline"]),
                                             help="Stop after MIN minutes with the verdict so far."),
    harness: dict = INJECTED,
    job: dict = INJECTED,
):
    """Which image made it slower: the good and the bad end in alternated rounds until bad/good is
    decidedly slower (else it stops and says so), then halves the ordered list: each midpoint in
    rounds with both ends (good mid bad, bad mid good, ...), good when the interval of mid over
    the ends' geometric middle lies wholly above 1, bad when wholly below; undecided at --rounds,
    it names the range the evidence supports rather than guess. Ends with the first slower image,
    the last good one and what changed between them (PyTorch, CUDA, cuDNN, NCCL, Python, driver).
    A CPU job's steps run on one thread (OMP_NUM_THREADS=1) unless you set it. Exit 0 with an
    answer, 1 without."""
    from dnnbench.campaigns.bisect import Budget, bisect_command
    opts, images, bases = images_job(workload, job, harness)
    raise typer.Exit(bisect_command(opts, good, bad, images, bases, job["tolerance"], rounds,
                                    Budget(max_runs, deadline)))


def workloads(name: Optional[str] = typer.Argument(None, help="One workload: its reference, parameters and "
                                                             "how it differs, in full."),
              wide: bool = typer.Option(False, "--wide", help=WIDE_HELP)):
    """List the workloads (dataset layout, unit, parameters, the reference each follows); with a
    name, that workload in full: its reference and how it differs."""
    from rich.text import Text

    from dnnbench.console import Column, escape, out, print_table
    from dnnbench.workloads import WORKLOADS
    if name is not None:
        spec = WORKLOADS.get(name)
        if spec is None:
            raise DnnbenchError(f"unknown workload {name!r}; `dnnbench workloads` lists them")
        params = f"{spec.params_m:.2f} M parameters" if spec.params > 1 else "no parameters"
        out.print(Text(f"{name}: --data {spec.data_kind or 'synthetic only'}, {spec.unit}/s, {params}"))
        from dnnbench.workloads.train_tasks import evaluation
        trains = evaluation(name) or "not trained by `dnnbench train` yet (it trains the image classifiers and ncf)"
        for label, text in (("reference", spec.reference), ("differs", spec.differs), ("train evaluates", trains)):
            out.print(Text(f"\n{label}: {text}"))
        return
    columns = [Column("workload", key=True), Column("--data", rank=6), Column("unit", rank=7),
               Column("M params", right=True, rank=5), Column("reference", rank=1)]
    rows = [[name, spec.data_kind or "synthetic", f"{spec.unit}/s", f"{spec.params_m:.2f}" if spec.params > 1 else "-",
             escape(spec.reference.split(":")[0].split(" (")[0])] for name, spec in sorted(WORKLOADS.items())]
    print_table("workloads (`dnnbench workloads NAME`: one in full)", columns, rows, wide=wide)


suite_app = typer.Typer(help="Suites: many runs from one YAML file.", no_args_is_help=True)


@suite_app.command("run")
@with_harness_options(("until_ci", "max_windows"))
@with_host_options("suite run")
def suite_run(
    file: Path = typer.Argument(..., help="Suite YAML (see suites/*.yaml)."),
    only: List[str] = typer.Option([], "--only", help="Run only jobs and watch entries matching this glob "
                                   "(repeatable), e.g. 'resnet*'."),
    resume: bool = typer.Option(False, "--resume", help="Skip runs that already finished; redo cut-off ones."),
    junit: Optional[Path] = JUNIT,
    host: dict = INJECTED,
    harness: dict = INJECTED,
):
    """Run a suite: sweeps x repeats; a failed, timed-out or OOM run is recorded and the suite
    goes on; --resume continues an interrupted suite. At the end, a table of the jobs: throughput
    = sum_items/sum_seconds over every timed window of a job's repeats, its 95% CI, the window
    median, and with 5+ repeats MLPerf-style trimmed figures (fastest and slowest run dropped).
    Then the file's `watch:` list, each entry a `dnnbench watch` (a row each: the slower release
    named, none found, or failed). With --junit a testcase per job; with GITHUB_STEP_SUMMARY
    set, the jobs' table appended there (docs/ci-and-metrics.md)."""
    from dnnbench.runs import environment
    from dnnbench.campaigns.suite import suite_command
    raise typer.Exit(suite_command(file, only=only, resume=resume, results=host["results"],
                                   overrides={"runtime": host["runtime"], "image": host["image"], "base": host["base"],
                                              **harness, "env": environment.parse(host["env"])},
                                   dry_run=host["dry_run"], junit=junit))


@with_host_options("reproduce")
def reproduce(
    result: Path = typer.Argument(..., help="A result.json (or its run folder) to run again."),
    host: dict = INJECTED,
    tolerance: float = typer.Option(BY_NAME["tolerance"].default, "--tolerance", callback=in_range(BY_NAME["tolerance"]), help="Reproduced when the 99% interval of new/old over runs is within 1 +- this."),
    rounds: int = typer.Option(8, "--rounds", callback=in_range(BY_NAME["rounds"]),
                               help="The most runs of the new side (with --image and the original here: "
                                    "rounds of both, alternated); looked at from 3 on."),
    allow_changed_script: bool = typer.Option(False, "--allow-changed-script", help="Run a script result's script even though its SHA-256 changed."),
):
    """Run the job of a result again (same workload, options, seed, data, GPUs; the same image by
    digest), in runs until the verdict rule decides: reproduced, faster, slower or inconclusive.
    Single-sided (said so) unless --image names another image and the original can still run:
    then the two alternate in rounds. Exit 1 when the new runs are clearly faster or slower than
    the tolerance allows."""
    from dnnbench.runs import environment
    from dnnbench.campaigns.reproduce import reproduce_command
    raise typer.Exit(reproduce_command(result, runtime=host["runtime"], image=host["image"], results=host["results"],
                                       run_id=host["run_id"], tolerance=tolerance, quiet=host["quiet"],
                                       data_dir=host["data"], env=environment.parse(host["env"]), rounds=rounds,
                                       allow_changed_script=allow_changed_script))


PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": False}


def register(app: typer.Typer) -> None:
    app.command(context_settings=PASS_THROUGH, help=RUN_HELP)(run)
    app.command(context_settings=PASS_THROUGH, help=SLURM_HELP)(slurm)
    app.command(context_settings=PASS_THROUGH, help=TRAIN_HELP)(train)
    app.command()(workloads)
    app.command("compare-images")(compare_images)
    app.command()(bisect)
    app.command()(reproduce)
    app.add_typer(suite_app, name="suite")
