"""A result as one row of the store: its identity (run id, host, start), a hash of its content,
and the facts queries filter on, read from the result's manifest and system sections."""
from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path

from dnnbench.results.naming import image_digest


FACTS = ("pytorch", "cuda", "cudnn", "nccl", "driver")
# what the store indexes as it is (ix_results_job_gpu): PostgreSQL refuses an index entry over
# about 2.7 kB, so a longer GPU name is refused the same on every database
INDEXED_BYTES = {"gpu": 1000}
SHORT = {"status": 32}        # String(32): PostgreSQL refuses longer
WORDS = {"run_id": "run id", "job": "job name", "workload": "workload", "status": "status", "image": "image",
         "digest": "image digest", "base": "base", "host": "host name", "gpu": "GPU name", "unit": "unit",
         "pytorch": "PyTorch version", "cuda": "CUDA version", "cudnn": "cuDNN version", "nccl": "NCCL version",
         "driver": "driver version"}


class Unstorable(ValueError):
    """A result the store cannot hold as it is (on any database): named with why, left out."""


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
    """A result's ISO time as naive UTC (how the store keeps every time); None when it is not
    one; Unstorable when it is, but not in UTC (year 1 east of Greenwich, 9999 west of it)."""
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    try:
        return t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t
    except (OverflowError, ValueError):
        raise Unstorable(f"its start time {str(text)[:40]} is out of range in UTC") from None


def _checked(out: dict) -> dict:
    """The row, or Unstorable naming the first value no database can keep as it is: a NUL, a
    lone surrogate (not UTF-8), an indexed name too long to index, a status over its column."""
    for key, value in out.items():
        if not isinstance(value, str):
            continue
        what = WORDS.get(key, key)
        if "\0" in value:
            raise Unstorable(f"its {what} holds a NUL character")
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise Unstorable(f"its {what} holds a lone surrogate ({value[exc.start]!a}), which is not "
                             f"text in any encoding") from None
        if size > INDEXED_BYTES.get(key, size):
            raise Unstorable(f"its {what} is {len(value):,} characters long (at most {INDEXED_BYTES[key]:,} "
                             f"bytes: the store indexes it)")
        if len(value) > SHORT.get(key, len(value)):
            raise Unstorable(f"its {what} is {len(value):,} characters long (at most {SHORT[key]})")
    return out


def _path(path) -> str:
    """A result's path as text the store keeps: a file name that is not UTF-8 shown escaped."""
    return os.fsencode(os.path.abspath(os.fspath(path))).decode("utf-8", "backslashreplace")


def kind(data: dict) -> str:
    if isinstance(data.get("training"), dict):
        return "train"
    if isinstance(data.get("script"), dict):
        return "script"
    return "run"


def content_hash(data: dict) -> str:
    """The result's content, hashed the same from the dict finalize wrote and from the file read
    back: compact sorted JSON (the C encoder: 6x faster than the file's indented form). A NaN,
    which the file holds as a string, hashes differently, so such a result reads as `updated`."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def row(path: Path | str, data: dict) -> dict:
    """The result as a row; Unstorable (a ValueError) for one no store can hold as it is."""
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
        "digest": image_digest(data), "base": _text(host.get("base") or system.get("base") or manifest.get("base")),
        "host": machine, "gpu": gpu_model(data), "gpu_count": len(gpus),
        "started": when(data.get("started")), "throughput": head.get("value"),
        "ci_low": head.get("ci95_low"), "ci_high": head.get("ci95_high"), "unit": _text(data.get("unit")),
        # as if no other process had been runnable, and the share of the windows spent waiting for a
        # CPU (None where the windows recorded no wait: wall time only)
        "corrected": head.get("corrected"), "contention": head.get("contention"),
        "path": _path(path), "recorded": datetime.now(timezone.utc).replace(tzinfo=None),
    }
    for fact in FACTS:
        out[fact] = _text(manifest.get(fact) if manifest.get(fact) is not None else system.get(fact))
    out["series_key"] = series_key(gpu_model(data), out["image"])
    out["busy"] = busy_host(data)
    return _checked(out)


def busy_host(data: dict) -> bool | None:
    """The store's mark of a result whose host was busy (the one rule: dnnbench.workloads.busy);
    None where the result records no load (peers and series keep those)."""
    from dnnbench.workloads import busy
    f = busy.facts(data)
    return busy.judge(f["load1"], f["cpu_share"], f["cores"])


def release_key(row: dict) -> tuple:
    """Images in release order: by the numbers in the base or image name (ngc-24.10 after
    ngc-24.05), then by when the result was taken."""
    name = row.get("base") or row.get("image") or ""
    return (tuple(int(x) for x in re.findall(r"\d+", name)[:6]), name, row.get("started") or 0)
