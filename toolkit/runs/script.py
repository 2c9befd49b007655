"""`dnnbench run --script`: a user's own training script, put through the same runtimes, GPUs,
torchrun, mounts and result as a built-in workload, and timed by the container-side
instrumentation (dnnbench.workloads.instrument) without a change to it.

The script is a file, or a folder holding its entry file (--entry, else main.py or train.py);
in a container its folder is mounted read-only at /script. With --data, the dataset's path as
the script sees it (/data in a container) replaces a `{data}` in the script's arguments, or
else comes first among them, where ImageNet scripts take it (pytorch/examples' main.py,
NVIDIA's DeepLearningExamples).
"""
from __future__ import annotations

import os
from pathlib import Path

from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

SCRIPT_DIR = "/script"
ENTRIES = ("main.py", "train.py")
DATA_TOKEN = "{data}"


def locate(path: Path, entry: str | None = None) -> tuple[Path, str]:
    """(the folder to mount, the entry file's name in it); one error line when there is none."""
    path = Path(path).expanduser()
    if fileio.is_real_dir(str(path)):
        folder = Path(os.path.realpath(path))
        names = [entry] if entry else list(ENTRIES)
        for name in names:
            if "/" in name or name in ("", ".", ".."):
                raise DnnbenchError(f"--entry {name!r}: name a file inside {path}")
            if fileio.is_regular(str(folder / name)):
                return folder, name
        raise DnnbenchError(f"{path} holds no {' or '.join(names)}: name its entry file with --entry")
    if entry:
        raise DnnbenchError("--entry is for a script folder; --script names a file here")
    if not fileio.is_regular(str(path)):
        what = fileio.kind_at(str(path))
        raise DnnbenchError(f"--script {path}: {what}, not a Python script file")
    return Path(os.path.realpath(path)).parent, path.name


def arguments(extra: list[str], data_in: str | None) -> list[str]:
    """The script's own arguments, with the dataset's path where the script expects it."""
    if data_in is None:
        return list(extra)
    if any(DATA_TOKEN in a for a in extra):
        return [a.replace(DATA_TOKEN, data_in) for a in extra]
    return [data_in] + list(extra)


def instrumented(*, results_in: str, run_id: str, script_in: str, args: list[str], timing: dict) -> list[str]:
    """`-m dnnbench.workloads.instrument ... SCRIPT ARGS`: what follows the Python (or torchrun)."""
    out = ["-m", "dnnbench.workloads.instrument", "--results", results_in, "--run-id", run_id]
    for name in ("warmup", "number", "repeat", "items_per_step"):
        if timing.get(name) is not None:
            out += ["--" + name.replace("_", "-"), str(int(timing[name]))]
    if timing.get("unit"):
        out += ["--unit", str(timing["unit"])]
    if timing.get("run_to_end"):
        out.append("--run-to-end")
    return out + [script_in] + list(args)
