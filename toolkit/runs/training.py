"""`dnnbench train`: a workload trained to a target accuracy (dnnbench.workloads.train in the
container), on the same runtimes, images, mounts, GPUs, torchrun, run folder and signals as
`dnnbench run`. `--resume` continues the run folder of the same --run-id from its last good
checkpoint, with the run's own options (workloads/checkpoint.py says what may change)."""
from __future__ import annotations

from pathlib import Path

from dnnbench import names
from dnnbench.errors import DnnbenchError
from dnnbench.runs.options import RunOptions
from dnnbench.workloads import options as options_mod, schema

# the harness options that mean something when training (the rest time windows)
SHARED = ("batch_size", "workers", "amp", "channels_last", "seed", "lr")
EVAL_DATA_DIR = "/eval-data"   # --eval-data in a container


def check(opts: RunOptions, train: dict) -> None:
    """What `train` and `slurm --train` refuse before anything is written."""
    from dnnbench.workloads.train import TRAIN_OPTIONS
    unused = [o.flag for o in options_mod.HOST_OPTIONS if o.name not in SHARED and getattr(opts, o.name) not in
              (None, False)]
    if unused:
        raise DnnbenchError(f"{unused[0]} times benchmark windows; `dnnbench train` trains epochs (see --help)")
    for o in TRAIN_OPTIONS:
        why = o.problem(train.get(o.name))
        if why:
            raise DnnbenchError(f"{o.flag} {train.get(o.name)}: {why}")
    if train.get("mlperf"):
        check_mlperf_logging(opts.runtime)
    from dnnbench.workloads import WORKLOADS
    from dnnbench.workloads.train_tasks import evaluation
    if opts.workload in WORKLOADS and evaluation(opts.workload) is None:
        raise DnnbenchError(f"`dnnbench train` trains the image classifiers and ncf for now; {opts.workload} is not one "
                            f"(`dnnbench workloads NAME` says what each evaluates)")
    if opts.data is None:
        raise DnnbenchError("training needs --data: an ImageNet-layout folder (train/, val/), or ratings.csv's folder for ncf")
    if train.get("eval_data") and not Path(train["eval_data"]).is_dir():
        raise DnnbenchError(f"--eval-data {train['eval_data']} is not a folder (an ImageNetV2 folder from "
                            f"`dnnbench data prepare imagenetv2`)")
    if train.get("mlperf") == "closed":   # what breaks the closed division's rules, before anything runs
        from dnnbench.results.mlperf import closed_problems
        world = None if opts.gpus == "all" else len(opts.gpus.split(",")) if opts.gpus else opts.nproc or 1
        found = closed_problems(opts.workload, train, opts.batch_size, opts.lr, world, opts.data)
        if found:
            raise DnnbenchError("--mlperf closed: " + "; ".join(found))


def check_mlperf_logging(runtime: str) -> None:
    """--mlperf asks for the MLPerf log, which mlperf-logging writes: on a runtime that runs this
    Python, its absence is refused here, before anything is written, with the install line for
    this Python; in a container the run itself refuses before its first step (an image's
    packages are known only inside it), with the way to get an image that has it."""
    import importlib.util

    from dnnbench.containers.engines import named
    if named(runtime).contained:
        return
    try:
        found = importlib.util.find_spec("mlperf_logging.mllog") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        from dnnbench.workloads.mlperf_log import missing
        raise DnnbenchError(missing())


def module_args(workload: str, opts: RunOptions, train: dict, *, data_in: str, results_in: str, run_id: str,
                device: str) -> list[str]:
    """`-m dnnbench.workloads.train WORKLOAD ...`: the training entry and its options."""
    from dnnbench.workloads.train import TRAIN_OPTIONS
    argv = ["-m", "dnnbench.workloads.train", workload, "--data", data_in, "--results", results_in,
            "--run-id", run_id, "--device", device]
    argv += options_mod.argv({n: getattr(opts, n) for n in SHARED})
    for o in TRAIN_OPTIONS:
        argv += o.argv(train.get(o.name))
    return argv


def check_resumable(results: Path, run_id: str, folder: Path | None = None) -> None:
    run_dir = names.inside(results, Path(folder) if folder else Path(results) / run_id, "run folder")
    if not run_dir.is_dir():
        raise DnnbenchError(f"--resume: {run_dir} does not exist (the --run-id of the run to continue)")
    try:
        status = schema.read(str(run_dir / schema.RESULT_FILE))["status"]
    except (OSError, ValueError):
        status = None
    if status == "ok":
        raise DnnbenchError(f"--resume: {run_id} already finished (status ok); train again under a new --run-id")
