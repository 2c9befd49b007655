"""Apptainer / SingularityCE: builds, pulls and inspects .sif files.

spython hard-codes the `singularity` binary, defaults builds to sudo and returns None when one
fails, and its default streaming leaves stderr unread (a deadlock on chatty builds). So the
binary is resolved here, and commands are streamed through spython's `stream_command` with
stdout and stderr merged, which raises on a non-zero exit.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Literal, overload

from dnnbench.errors import DnnbenchError, EngineUnavailable
from dnnbench import external
from dnnbench.workloads import fileio

HINT_MISSING = ("neither apptainer nor singularity is on PATH; install Apptainer "
                "(`sudo bash scripts/setup-engines.sh` on Debian) or load its module on your cluster")


@overload
def binary(required: Literal[True] = True) -> str: ...
@overload
def binary(required: bool) -> str | None: ...


def binary(required: bool = True) -> str | None:
    """The apptainer (or singularity) on PATH; required: EngineUnavailable where there is none."""
    found = shutil.which("apptainer") or shutil.which("singularity")
    if not found and required:
        raise EngineUnavailable(HINT_MISSING)
    return found


def available() -> str | None:
    exe = binary(required=False)
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _stream(cmd: list[str], log_path: Path, on_line: Callable[[str], None], env: dict | None,
            what: str, cwd: Path | None = None) -> None:
    from spython.utils.terminal import stream_command

    log_path.parent.mkdir(parents=True, exist_ok=True)
    if env:  # stream_command takes no env: pass variables through env(1)
        cmd = ["env"] + [f"{k}={v}" for k, v in env.items()] + cmd
    old_cwd = os.getcwd()
    tail: list[str] = []
    with fileio.open_write(str(log_path)) as log:    # a planted link is refused, not written through
        log.write("$ " + " ".join(cmd) + "\n")
        try:
            if cwd:
                os.chdir(cwd)  # %files sources are relative to the build's working directory
            for line in stream_command(cmd, output_type="both", no_newline_regexp=r"^\x00$"):
                log.write(line)
                tail = (tail + [line.rstrip()])[-5:]
                on_line(line.rstrip())
        except subprocess.CalledProcessError as exc:
            last = next((t for t in reversed(tail) if "FATAL" in t or "ERROR" in t), tail[-1] if tail else "")
            raise DnnbenchError(f"{what} failed (exit {exc.returncode}): {last.strip()}", log=str(log_path)) from None
        except OSError as exc:
            raise DnnbenchError(f"{what} could not start: {exc}") from None
        finally:
            os.chdir(old_cwd)


def build(source: str, sif: Path, *, log_path: Path, cwd: Path | None = None, force: bool = True,
          on_line: Callable[[str], None] = lambda s: None, env: dict | None = None,
          compression: str | None = None, fakeroot: bool = False) -> Path:
    """Build `sif` from a definition file or a URI (docker-daemon://tag, docker://ref).

    compression: squashfs compressor (gzip default; lz4/zstd build several times faster).
    fakeroot: only for a definition whose %post needs root; it needs subuid ranges on the node."""
    exe = binary()
    sif.parent.mkdir(parents=True, exist_ok=True)
    cmd = [exe, "build"] + (["--fakeroot"] if fakeroot else []) + (["--force"] if force else [])
    if compression:
        cmd += ["--mksquashfs-args", f"-comp {compression}"]
    cmd += [str(sif), source]
    _stream(cmd, log_path, on_line, env, f"{Path(exe).name} build", cwd)
    if not sif.exists():
        raise DnnbenchError(f"{Path(exe).name} build reported success but wrote no {sif}", log=str(log_path))
    return sif


def pull(uri: str, sif: Path, *, log_path: Path, force: bool = False, env: dict | None = None,
         on_line: Callable[[str], None] = lambda s: None) -> Path:
    exe = binary()
    if sif.exists() and not force:
        raise DnnbenchError(f"{sif} exists; pass --force to overwrite it")
    sif.parent.mkdir(parents=True, exist_ok=True)
    cmd = [exe, "pull"] + (["--force"] if force else []) + [str(sif), uri]
    _stream(cmd, log_path, on_line, env, f"{Path(exe).name} pull")
    return sif


INSPECT_S = 60


def regular_sif(path) -> Path:
    """A .sif to run: a regular file (links followed) that apptainer can read as an image; one
    error line otherwise. A FIFO, a device or a junk file never reaches `apptainer exec`."""
    path = Path(path).expanduser()
    if not path.exists():
        raise DnnbenchError(f"{path} does not exist (`dnnbench images` lists the .sif files built here)")
    if not path.is_file():
        raise DnnbenchError(f"{path} is {fileio.kind_at(os.path.realpath(path))}, not a .sif image file")
    try:
        with fileio.open_input(path) as fh:
            head = fh.read(256)
    except OSError as exc:
        raise DnnbenchError(f"cannot read {path}: {exc.strerror or exc}") from None
    if b"SIF_MAGIC" not in head and not head.startswith(b"#!"):
        raise DnnbenchError(f"{path} is not a SIF image (no SIF header): rebuild or pull it")
    return path


def labels(sif: Path) -> dict:
    """The %labels of a .sif ({} when it cannot be read)."""
    exe = binary(required=False)
    if not exe:
        return {}
    if not os.path.isfile(sif):      # a FIFO or device handed to `apptainer inspect` blocks it for good
        return {}
    try:
        out = external.call([exe, "inspect", "--labels", "--json", str(sif)], what=f"apptainer inspect {sif}",
                            timeout=INSPECT_S)
    except DnnbenchError:
        return {}
    if out.returncode != 0:
        return {}
    try:
        data = json.loads(out.stdout)
        return data.get("data", {}).get("attributes", {}).get("labels", {}) or {}
    except (ValueError, AttributeError):
        return {}
