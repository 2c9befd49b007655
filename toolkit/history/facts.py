"""A result as one row of the store: its identity (run id, host, start), a hash of its content,
and the facts queries filter on, read from the result's manifest and system sections."""
from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path


FACTS = ("pytorch", "cuda", "cudnn", "nccl", "driver")


def _text(value) -> str | None:
    return None if value is None or value == "" else str(value)


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def job_key(job: str | None) -> str:
    return hashlib.sha1((job or "").encode("utf-8", "surrogatepass")).hexdigest()


def series_key(gpu: str | None, image: str | None) -> str:
    """One series point's group: a GPU model and an image, hashed to index any name's length."""
    return hashlib.sha1(f"{gpu or ''}\0{image or ''}".encode("utf-8", "surrogatepass")).hexdigest()


def when(text) -> datetime | None:
    """A result's ISO time as naive UTC (how the store keeps every time)."""
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t


def kind(data: dict) -> str:
    if isinstance(data.get("training"), dict):
        return "train"
    if isinstance(data.get("script"), dict):
        return "script"
    return "run"


def digest(data: dict) -> str | None:
    """The image by digest, as the host's manifest recorded it (docker id or .sif sha256)."""
    image = _dict(_dict(_dict(data.get("manifest")).get("host")).get("image"))
    return _text(image.get("id") or image.get("sha256") or next(iter(image.get("repo_digests") or []), None))


def content_hash(data: dict) -> str:
    """The result's content, hashed the same from the dict finalize wrote and from the file read
    back: compact sorted JSON (the C encoder: 6x faster than the file's indented form). A NaN,
    which the file holds as a string, hashes differently, so such a result reads as `updated`."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def row(path: Path | str, data: dict) -> dict:
    from dnnbench.results import numbers
    from dnnbench.results.naming import gpu_model, job_name

    system, manifest, host = _dict(data.get("system")), _dict(data.get("manifest")), _dict(data.get("host"))
    machine = _text(system.get("host"))
    identity = "\0".join(str(x) for x in (data.get("run_id"), machine, data.get("started")))
    try:
        head = numbers.run_headline(data)
    except (TypeError, ValueError, KeyError, ZeroDivisionError):
        head = {}
    job = _text(job_name(data)) if data.get("workload") is not None else _text(data.get("job"))
    listed = system.get("gpus")
    gpus = listed if isinstance(listed, list) else []
    out: dict = {
        "identity": hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest(),
        "content_hash": content_hash(data),
        "run_id": _text(data.get("run_id")), "kind": kind(data), "job": job, "job_key": job_key(job),
        "workload": _text(data.get("workload")), "status": _text(data.get("status")),
        "image": _text(host.get("image") or system.get("image") or manifest.get("image")),
        "digest": digest(data), "base": _text(host.get("base") or system.get("base") or manifest.get("base")),
        "host": machine, "gpu": gpu_model(data), "gpu_count": len(gpus),
        "started": when(data.get("started")), "throughput": head.get("value"),
        "ci_low": head.get("ci95_low"), "ci_high": head.get("ci95_high"), "unit": _text(data.get("unit")),
        # as if no other process had been runnable, and the share of the windows spent waiting for a
        # CPU (None where the windows recorded no wait: wall time only)
        "corrected": head.get("corrected"), "contention": head.get("contention"),
        "path": os.path.abspath(os.fspath(path)), "recorded": datetime.now(timezone.utc).replace(tzinfo=None),
    }
    for fact in FACTS:
        out[fact] = _text(manifest.get(fact) if manifest.get(fact) is not None else system.get(fact))
    out["series_key"] = series_key(gpu_model(data), out["image"])
    return out


def release_key(row: dict) -> tuple:
    """Images in release order: by the numbers in the base or image name (ngc-24.10 after
    ngc-24.05), then by when the result was taken."""
    name = row.get("base") or row.get("image") or ""
    return (tuple(int(x) for x in re.findall(r"\d+", name)[:6]), name, row.get("started") or 0)
