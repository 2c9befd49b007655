"""The host options (where the data, results and image are; which runtime, GPUs, run id; --env,
--dry-run ...) as one table, as workloads/options.py holds the harness options: one row per
option (its flags, type, default, help and the check every command runs when it is parsed),
then which rows each command takes, with its own help only where the meaning differs. A new
host option is one row, and one name in the lists of the commands that take it
(tests/test_cli_host_options.py holds every command to its rows)."""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, List, Optional

import typer

from dnnbench.cli.harness_options import choice, in_range, plain
from dnnbench.containers.engines import choices
from dnnbench.registry import Registry
from dnnbench.runs.options import RUNTIMES
from dnnbench.workloads.options import BY_NAME

if TYPE_CHECKING:   # choices at run time (typer lists and checks them); strings once parsed
    Runtime = str
    SlurmRuntime = str
else:
    Runtime = choice("Runtime", RUNTIMES)
    SlurmRuntime = choice("SlurmRuntime", choices(slurm=True))


def _run_id(value):
    from dnnbench import names
    if value is not None:
        names.path_component(value, "--run-id")
    return value


def _gpus(value):
    from dnnbench.runs import gpus
    gpus.parse(value)
    return value


def _nproc(value):
    from dnnbench.errors import DnnbenchError
    from dnnbench.runs.checks import nproc_limit
    if value is not None and not 1 <= value <= nproc_limit():
        raise DnnbenchError(f"--nproc {value}: give 1 to {nproc_limit()} (4 per core of this host)")
    return value


def _env(value, slurm: bool = False):
    from dnnbench.runs import environment
    environment.parse(value or [], slurm=slurm)
    return value


ENV_HELP = ("NAME=VALUE in the run's processes, e.g. NCCL_DEBUG=INFO (repeatable; kept in the result, "
            "which `reproduce` gives again); not a name dnnbench or torchrun sets (DNNBENCH_*, RANK, "
            "CUDA_VISIBLE_DEVICES, ...).")
FILE_ENV_HELP = ("NAME=VALUE for every run, over the file's env (repeatable). The only way to give what "
                 "starts code (PYTHON*, LD_*, PATH, ...): a file's env never does.")


@dataclass(frozen=True)
class HostOption:
    name: str                          # the command's parameter, and RunOptions' field
    flags: tuple[str, ...]             # long flag first, then its short alias
    annotation: Any
    default: Any
    help: str
    check: Optional[Callable] = None   # value -> value; refuses (DnnbenchError) as it is parsed


OPTIONS: Registry[HostOption] = Registry("host option", (
    HostOption("data", ("--data", "-d"), Optional[Path], None,
               "Dataset folder (mounted read-only at /data). Default: synthetic data."),
    HostOption("gpus", ("--gpus", "-g"), Optional[str], None,
               "GPUs: all, or indices/UUIDs like 0 or 0,1. Default: CPU.", _gpus),
    HostOption("nproc", ("--nproc",), Optional[int], None,
               "CPU runs: processes (DDP over gloo, through torchrun).", _nproc),
    HostOption("runtime", ("--runtime", "-r"), Runtime, "docker", "docker, singularity (= apptainer) or host."),
    HostOption("image", ("--image", "-i"), Optional[str], None,
               "Docker tag or .sif file. Default: the base's image, else the newest dnnbench image."),
    HostOption("base", ("--base", "-b"), Optional[str], None, "Use the image of this base (see `dnnbench bases`)."),
    HostOption("build", ("--build/--no-build",), Optional[bool], None,
               "Build the base's image if missing (default: ask when interactive)."),
    HostOption("results", ("--results",), Path, Path("results"),
               "Results folder; the run goes in RESULTS/<run-id>/."),
    HostOption("run_id", ("--run-id",), Optional[str], None,
               "Name of the run folder (default: time-workload-random).", _run_id),
    HostOption("timeout", ("--timeout",), Optional[float], None,
               "Stop the run after this many seconds (status timeout).", in_range(BY_NAME["timeout"])),
    HostOption("dry_run", ("--dry-run",), bool, False, "Print the plan and the equivalent command line; run nothing."),
    HostOption("quiet", ("--quiet", "-q"), bool, False, "Do not echo the run's output (it still goes to log.txt)."),
    HostOption("env", ("--env", "-e"), List[str], [], ENV_HELP, _env),
), names=lambda o: (o.name, *o.flags))


SAME: Any = object()   # a command's default that is the row's (`...`: the option is required)


@dataclass(frozen=True)
class Own:
    """A command's own take on a row: what differs, and only that."""
    help: Optional[str] = None
    default: Any = SAME
    annotation: Any = None
    check: Optional[Callable] = None


# compare-images and bisect: the steps of a comparison of images
_IMAGES = {
    "data": Own(),
    "gpus": Own(),
    "runtime": Own(help="docker or singularity (= apptainer)."),
    "results": Own(help="Results folder; the steps go in RESULTS/<run-id>/."),
    "run_id": Own(help="Folder of the steps (default: images-WORKLOAD or bisect-WORKLOAD); the same again "
                       "resumes."),
    "dry_run": Own(help="Check every step and list the images; run nothing."),
}
# Which rows each command takes, in the order its --help lists them, with what differs.
COMMANDS: dict[str, dict[str, Own]] = {
    "compare-images": _IMAGES,
    "bisect": _IMAGES,
    "watch": _IMAGES,
    "run": {n: Own() for n in ("data", "gpus", "nproc", "runtime", "image", "base", "build", "results", "run_id",
                               "timeout", "dry_run", "quiet", "env")},
    "slurm": {
        "env": Own(help="KEY=VALUE for each task, e.g. NCCL_SOCKET_IFNAME=ib0 (repeatable); not a name that "
                        "dnnbench, Slurm or torchrun sets (DNNBENCH_*, SLURM_*, RANK, CUDA_VISIBLE_DEVICES, ...).",
                   check=functools.partial(_env, slurm=True)),
        "runtime": Own(help="singularity (= apptainer) or host.", default="singularity", annotation=SlurmRuntime),
        "image": Own(help=".sif file on the shared filesystem."),
        "base": Own(help="Use dnnbench_<base>.sif here (see `dnnbench build --format singularity`)."),
        "data": Own(help="Dataset folder, on the shared filesystem (read-only at /data)."),
        "results": Own(help="Results folder (shared); the run goes in RESULTS/<run-id>/."),
        "run_id": Own(),
        "dry_run": Own(help="Print the script; write and submit nothing."),
    },
    "k8s": {
        "image": Own(default=..., annotation=str, help="The image by its registry reference (the cluster pulls it)."),
        "base": Own(help="The image's catalog base: its GPU vendor (nvidia.com/gpu or amd.com/gpu)."),
        "run_id": Own(help="Name of the run folder on the results volume (default: time-workload-k8s)."),
        "env": Own(help="NAME=VALUE in every pod (repeatable); not a name dnnbench or torchrun sets."),
    },
    "train": {
        "data": Own(default=..., annotation=Path, help="ImageNet-layout folder (train/, val/), or ratings.csv's "
                                                       "folder for ncf; mounted read-only."),
        **{n: Own() for n in ("gpus", "nproc", "runtime", "image", "base", "results")},
        "run_id": Own(help="Name of the run folder (with --resume: the run to continue)."),
        "timeout": Own(help="Stop after this many seconds (checkpointed, resumable)."),
        **{n: Own() for n in ("dry_run", "quiet", "env")},
    },
    "suite run": {
        "results": Own(help="The suite's runs go in RESULTS/<suite name>/."),
        "runtime": Own(help="Override every job's runtime.", default=None, annotation=Optional[Runtime]),
        "image": Own(help="Override every job's image."),
        "base": Own(help="Override every job's base."),
        "dry_run": Own(help="List the runs; run nothing."),
        "env": Own(help=FILE_ENV_HELP),
    },
    "reproduce": {
        "runtime": Own(help="Run on this runtime instead of the result's.", default=None,
                       annotation=Optional[Runtime]),
        "image": Own(help="Run this image instead of the result's (by digest)."),
        "results": Own(help="The new run goes in RESULTS/<run-id>/."),
        "run_id": Own(help="Name of the new run folder."),
        "data": Own(help="The dataset's folder here, when the result ran on one elsewhere."),
        "quiet": Own(),
        "env": Own(help=FILE_ENV_HELP),
    },
}


def option(name: str, own: Own) -> tuple[Any, Any, Optional[Callable]]:
    """(annotation, typer.Option, check) of a row as a command takes it."""
    row = OPTIONS[name]
    check = own.check or row.check
    default = row.default if own.default is SAME else own.default
    info = typer.Option(default, *row.flags, help=own.help or row.help, callback=_checked(check) if check else None)
    return own.annotation or row.annotation, info, check


def params(command_name: str) -> dict:
    """A command's host options as `with_params` takes them ({name: (annotation, typer.Option)}),
    for a set of parameters that several commands share (compare-images, bisect, watch)."""
    return {name: option(name, own)[:2] for name, own in COMMANDS[command_name].items()}


def _checked(check: Callable) -> Callable:
    """A click callback running the row's check on the value as the command will get it."""
    def callback(value):
        check(plain(value) if not isinstance(value, (list, tuple)) else list(value))
        return value
    return callback


def with_host_options(command_name: str, key: str = "host"):
    """Add a command's host options (COMMANDS[command_name]) where its `key` parameter stands; the
    command receives them together as `key={name: value}`."""
    rows = COMMANDS[command_name]

    def wrap(command):
        sig = inspect.signature(command)
        params: list[inspect.Parameter] = []
        for p in sig.parameters.values():
            if p.name != key:
                params.append(p)
                continue
            for name, own in rows.items():
                annotation, info, _ = option(name, own)
                params.append(inspect.Parameter(name, p.kind, default=info, annotation=annotation))

        @functools.wraps(command)
        def wrapper(*args, **kwargs):
            values = {name: plain(kwargs.pop(name)) for name in rows}
            if "env" in values:
                values["env"] = list(values["env"])
            return command(*args, **{key: values}, **kwargs)
        wrapper.__signature__ = sig.replace(parameters=params)
        return wrapper
    return wrap
