"""Apptainer / SingularityCE: builds, pulls and inspects .sif files.

spython hard-codes the `singularity` binary, defaults builds to sudo and returns None when one
fails, and its default streaming leaves stderr unread (a deadlock on chatty builds). So the
binary is resolved here, and commands are streamed through spython's `stream_command` with
stdout and stderr merged, which raises on a non-zero exit.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Literal, overload

from dnnbench.containers.engines.common import Mounted, Plan, chain, pinned
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


def apptainer_env(plan: Plan) -> dict:
    """Variables passed into `apptainer exec --cleanenv` (APPTAINERENV_ reaches the container)."""
    # The home folder is mounted: packages in ~/.local must not shadow the image's.
    env = {"PYTHONNOUSERSITE": "1", **plan.env}
    if plan.gpus and plan.gpus != ["all"]:
        key = "HIP_VISIBLE_DEVICES" if plan.accelerator == "amd" else "CUDA_VISIBLE_DEVICES"
        env[key] = ",".join(plan.gpus)
    return env


def apptainer_bind(m: Mounted) -> str:
    """A mount as `--bind src:dst[:ro]`. The spec has no quoting: a ',' would start another
    bind and a ':' shift the fields, so such paths are refused rather than mis-mounted."""
    for path in (m.source, m.target):
        if "," in path or ":" in path:
            raise DnnbenchError(f"Apptainer cannot bind {path!r}: its --bind spec has no way to quote ',' or ':'; "
                                "use a path without them (a symlink to it works)")
    return f"{m.source}:{m.target}" + (":ro" if m.read_only else "")


def apptainer_command(plan: Plan, exe: str = "apptainer") -> list[str]:
    cmd = [exe, "exec", "--cleanenv", "--pwd", plan.workdir]
    if plan.gpus:
        cmd += ["--rocm"] if plan.accelerator == "amd" else ["--nv"]
    for m in plan.mounts:
        cmd += ["--bind", apptainer_bind(m)]
    for k, v in apptainer_env(plan).items():
        cmd += ["--env", env_arg(k, v)]
    return pinned(plan, cmd + [plan.image or "IMAGE.sif"] + chain(plan))


def env_arg(name: str, value) -> str:
    """One `--env` argument that Apptainer reads back as NAME=value. Its flag (a map of strings)
    keeps an argument with one '=' whole (commas too), but reads one with more as a CSV line,
    split at commas: NCCL_IB_HCA==mlx5_0,mlx5_1 would lose its second HCA. That one goes as a
    single quoted CSV field."""
    item = f"{name}={value}"
    return '"' + item.replace('"', '""') + '"' if item.count("=") > 1 else item


# --cleanenv drops the step's CUDA_VISIBLE_DEVICES (and ROCm's), so a Slurm step would see every
# GPU of the node: these pass the ones Slurm gave this step, read where the step runs.
STEP_DEVICES = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")
_STEP_SCRIPT = "".join(f'[ -z "${{{v}+x}}" ] || export APPTAINERENV_{v}="${v}"; ' for v in STEP_DEVICES) + 'exec "$@"'


def slurm_step(argv: list[str]) -> list[str]:
    """An `apptainer exec --cleanenv` line as a Slurm step that keeps the GPUs Slurm assigned it."""
    return ["sh", "-c", _STEP_SCRIPT, "dnnbench-step"] + list(argv)


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
