"""The host's part of a result's reproducibility manifest: the image by digest (a tag moves, a
digest does not), dnnbench's version and git commit, the host's command line and dataset path.
It travels in the plan (plan.json), where the harness reads it into the result's `manifest`."""
from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import dnnbench
from dnnbench.containers.engines import lookup


def git_commit() -> dict | None:
    """The commit of the dnnbench source this runs from, and whether it has local changes."""
    root = Path(dnnbench.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def host_manifest(runtime: str, image: str | None, base: str | None, data: Path | None) -> dict:
    engine = lookup(runtime)
    # no image (the host runtime): the container side records this Python's and PyTorch's versions
    digest = engine.digest(image) if engine is not None and image else None
    return {
        "runtime": runtime, "image": digest, "base": base, "dnnbench_version": dnnbench.__version__,
        "git": git_commit(), "data": str(data) if data else None,
        "command_line": shlex.join(["dnnbench"] + sys.argv[1:]),
        "python": sys.executable,
    }
