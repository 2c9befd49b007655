"""`--gpus`: parse it, and check it names GPUs this machine has, before anything starts."""
from __future__ import annotations

import os
import re
import shutil

from dnnbench import lists
from dnnbench.errors import DnnbenchError

# ASCII digits only: Python's \d also takes Arabic-Indic and other digits, which CUDA would not
_ID = re.compile(r"[0-9]+|GPU-[0-9a-fA-F-]+", re.ASCII)


def parse(spec: str | None) -> list[str] | None:
    """None/''/'none' -> CPU only; 'all' -> ['all']; '0,1' -> ['0', '1'] (UUIDs allowed)."""
    if spec is None:
        return None
    spec = spec.strip().replace(" ", "")
    if spec in ("", "none", "cpu"):
        return None
    if spec == "all":
        return ["all"]
    ids = lists.members(spec, "--gpus")
    if not all(_ID.fullmatch(i) for i in ids):
        raise DnnbenchError(f"--gpus {spec!r} is malformed: use all, none, or indices "
                            f"like 0 or 0,1 in ASCII digits (GPU UUIDs also work)")
    if len(set(ids)) != len(ids):
        raise DnnbenchError(f"--gpus {spec!r} names a GPU twice")
    return ids


def visible(accelerator: str) -> list[dict] | None:
    """The GPUs this machine shows ([{index, name, uuid}]), or None if it cannot tell."""
    if accelerator == "amd":
        if not os.path.exists("/dev/kfd"):
            return []
        nodes = sorted(p for p in os.listdir("/dev/dri") if p.startswith("renderD")) if os.path.isdir("/dev/dri") else []
        return [{"index": str(i), "name": "AMD GPU", "uuid": None} for i in range(len(nodes))]
    if not shutil.which("nvidia-smi"):
        return []
    from dnnbench import external
    from dnnbench.errors import DnnbenchError
    try:
        res = external.call(["nvidia-smi", "--query-gpu=index,name,uuid", "--format=csv,noheader"],
                            what="nvidia-smi", timeout=30)
    except DnnbenchError:
        return None
    if res.returncode != 0:
        return []
    gpus = []
    for line in res.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3:
            gpus.append({"index": parts[0], "name": parts[1], "uuid": parts[2]})
    return gpus


def check(ids: list[str] | None, accelerator: str) -> list[dict]:
    """The GPUs a run gets; a clear error when the request cannot be met on this machine."""
    if not ids:
        return []
    if accelerator == "none":
        raise DnnbenchError("this image has no GPU support (a CPU base): drop --gpus, or build an "
                            "ngc-* or rocm-* base")
    seen = visible(accelerator)
    if seen is None:  # nvidia-smi hung or failed oddly: let the engine decide
        return []
    if not seen:
        what = "AMD GPU (/dev/kfd missing)" if accelerator == "amd" else "NVIDIA GPU (nvidia-smi finds none)"
        raise DnnbenchError(f"--gpus {','.join(ids)} asks for GPUs but this machine shows no {what}; "
                            f"drop --gpus to run on the CPU")
    if ids == ["all"]:
        return seen
    known = {g["index"]: g for g in seen} | {g["uuid"]: g for g in seen if g["uuid"]}
    missing = [i for i in ids if i not in known]
    if missing:
        have = ", ".join(g["index"] for g in seen)
        raise DnnbenchError(f"--gpus names GPU {', '.join(missing)} but this machine has GPU {have}")
    return [known[i] for i in ids]
