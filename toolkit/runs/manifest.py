"""The host's part of a result's reproducibility manifest: the image by digest (a tag moves, a
digest does not), dnnbench's version and git commit, the host's command line and dataset path.
It travels in the plan (plan.json), where the harness reads it into the result's `manifest`."""
from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import dnnbench
from dnnbench.workloads import fileio


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


def docker_digest(ref: str) -> dict:
    """The image's id and repo digests (the id is what `docker run` takes to get this exact image)."""
    from dnnbench.containers.engines import docker
    try:
        attrs = docker.client().images.get(ref).attrs
    except Exception as exc:  # noqa: BLE001 - a manifest without a digest beats no run
        return {"ref": ref, "id": None, "repo_digests": [], "problem": str(exc)[:200]}
    return {"ref": ref, "id": attrs.get("Id"), "repo_digests": list(attrs.get("RepoDigests") or [])}


def _digest_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dnnbench" / "sif-sha256.json"


def sif_digest(path: str) -> dict:
    """SHA-256 of a .sif, computed once per (path, size, mtime) and cached: a large image takes
    seconds to hash."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        return {"ref": path, "sha256": None, "problem": exc.strerror}
    key = f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}"
    cache_file = _digest_cache()
    try:
        cache = fileio.read_json(cache_file)
    except (OSError, ValueError):
        cache = {}
    if not isinstance(cache, dict) or not isinstance(cache.get(key), str):
        h = hashlib.sha256()
        try:
            with fileio.open_input(p) as fh:   # a FIFO or device is refused, not read forever
                for block in iter(lambda: fh.read(1 << 22), b""):
                    h.update(block)
        except OSError as exc:
            return {"ref": path, "sha256": None, "problem": exc.strerror}
        cache = cache if isinstance(cache, dict) else {}
        cache[key] = h.hexdigest()
        try:
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            fileio.write_json(cache_file, cache)
        except OSError:
            pass
    return {"ref": path, "sha256": cache[key], "bytes": st.st_size}


def host_manifest(runtime: str, image: str | None, base: str | None, data: Path | None) -> dict:
    if runtime == "docker" and image:
        digest = docker_digest(image)
    elif runtime == "singularity" and image:
        digest = sif_digest(image)
    else:
        digest = None   # host runtime: the container side records this Python's and PyTorch's versions
    return {
        "runtime": runtime, "image": digest, "base": base, "dnnbench_version": dnnbench.__version__,
        "git": git_commit(), "data": str(data) if data else None,
        "command_line": shlex.join(["dnnbench"] + sys.argv[1:]),
        "python": sys.executable,
    }
