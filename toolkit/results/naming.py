"""What a result is called in every output: its job and its GPU model (the report, the run
summary and the history all name results the same way)."""
from __future__ import annotations


def job_name(data: dict) -> str:
    opts = data.get("options") or {}
    if data.get("job"):
        return data["job"]
    amp = opts.get("amp") or "none"
    return (f"{data['workload']}-bs{opts.get('batch_size', '?')}" + ("" if amp == "none" else f"-{amp}")
            + (f"-x{data.get('world_size')}" if data.get("world_size", 1) > 1 else ""))


def gpu_model(data: dict) -> str:
    gpus = (data.get("system") or {}).get("gpus") or []
    return ", ".join(sorted({g.get("name", "?") for g in gpus})) or "CPU"


def gpu_name(data: dict) -> str:
    gpus = (data.get("system") or {}).get("gpus") or []
    return f"{len(gpus)} x {gpu_model(data)}" if gpus else "CPU"


def image_digest(data: dict) -> str | None:
    """The image by digest, as the host's manifest recorded it (docker id or .sif sha256), or None."""
    def of(value) -> dict:
        return value if isinstance(value, dict) else {}
    image = of(of(of(data.get("manifest")).get("host")).get("image"))
    found = image.get("id") or image.get("sha256") or next(iter(image.get("repo_digests") or []), None)
    return None if found is None or found == "" else str(found)
