"""RunOptions: what one run needs from the host: its own fields, then one field per host
harness option (dnnbench.workloads.options.HOST_OPTIONS), written out so that readers and the
type checker see them; tests/test_project_architecture.py checks they match the table."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from dnnbench.containers.engines import DEFAULT, choices
from dnnbench.workloads.options import HOST_OPTIONS

RUNTIMES = choices()     # every name --runtime takes, read from the engines' table


@dataclass(frozen=True)
class SlurmPlacement:
    """Where a comparison's runs go (watch, bisect, compare-images `--slurm`): each a one-node
    Slurm job, with sbatch's placement as `dnnbench slurm` takes it (runs/slurm.py `step_job`)."""
    partition: Optional[str] = None
    time: Optional[str] = None
    account: Optional[str] = None
    cpus_per_task: Optional[int] = None
    sbatch_args: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()


@dataclass
class RunOptions:
    """One run's options: host fields, then one field per host harness option."""
    workload: str
    data: Optional[Path] = None
    gpus: Optional[str] = None
    nproc: Optional[int] = None
    runtime: str = DEFAULT
    image: Optional[str] = None
    base: Optional[str] = None
    build: Optional[bool] = None
    results: Path = Path("results")
    run_id: Optional[str] = None
    timeout: Optional[float] = None
    dry_run: bool = False
    quiet: bool = False
    extra: list[str] = field(default_factory=list)      # after `--`: to the workload as they are
    profile: Optional[str] = None                       # a name in dnnbench.profilers.PROFILERS
    cpuset: Optional[str] = None                        # suites: a parallel copy's cores
    memory: Optional[str] = None                        # suites: a parallel copy's memory share
    run_dir: Optional[Path] = None                      # suites: the folder, when not RESULTS/<run-id>
    script: Optional[Path] = None                       # run --script: the user's own training script
    entry: Optional[str] = None                         # its entry file, when --script is a folder
    items_per_step: Optional[int] = None                # what one of its steps holds, if no batch tells
    run_to_end: bool = False                            # let it finish instead of stopping after the windows
    unit: Optional[str] = None                          # what its items are (images, samples, tokens)
    env: dict = field(default_factory=dict)             # --env: NAME -> value for the run's processes
    slurm: Optional[SlurmPlacement] = None              # --slurm: the run is a one-node Slurm job
    # Harness options (HOST_OPTIONS): None, or False for flags, means the workload's own default.
    batch_size: Optional[int] = None
    number: Optional[int] = None
    repeat: Optional[int] = None
    warmup: Optional[int] = None
    until_ci: Optional[float] = None
    max_windows: Optional[int] = None
    start_iter: Optional[int] = None
    stop_iter: Optional[int] = None
    workers: Optional[int] = None
    loader: Optional[str] = None
    amp: Optional[str] = None
    channels_last: bool = False
    compile: bool = False
    fused: bool = False
    no_cudnn_benchmark: bool = False
    malloc_defaults: bool = False
    seed: Optional[int] = None
    lr: Optional[float] = None
    cool_down: Optional[float] = None


HOST_FIELDS = ("workload", "data", "gpus", "nproc", "runtime", "image", "base", "build", "results", "run_id",
               "timeout", "dry_run", "quiet", "extra", "profile", "cpuset", "memory", "run_dir", "script", "entry",
               "items_per_step", "run_to_end", "unit", "env", "slurm")


def harness_values(opts) -> dict:
    return {o.name: getattr(opts, o.name) for o in HOST_OPTIONS}
