"""The one result schema, written in the container and read on the host.

Python 3.7+ and stdlib only: this module runs inside old base images and on the host alike.
"""
import json
import math
import os
import statistics
import tempfile

SCHEMA_VERSION = 1
RESULT_FILE = "result.json"
STATUSES = ("ok", "nan", "oom", "error", "interrupted", "timeout", "running")
# field -> type(s) every result carries
REQUIRED = {
    "schema_version": int, "run_id": str, "workload": str, "status": str, "message": (str, type(None)),
    "options": dict, "unit": str, "throughput": dict, "windows": list, "loss": list,
    "system": dict, "started": str, "ended": (str, type(None)), "world_size": int, "ranks": list,
}


def summarize(rates):
    """mean, median, min, max, sd (sample) and n of a list of rates."""
    rates = [float(r) for r in rates]
    if not rates:
        return {"n": 0, "mean": None, "median": None, "min": None, "max": None, "sd": None}
    return {
        "n": len(rates), "mean": statistics.mean(rates), "median": statistics.median(rates),
        "min": min(rates), "max": max(rates), "sd": statistics.stdev(rates) if len(rates) > 1 else 0.0,
    }


def throughput(windows, world_size=1):
    """Throughput statistics from timed windows [{"items": n, "seconds": t}, ...] of one rank.

    `total` counts every rank (each rank runs the same windows in lockstep under DDP);
    `per_gpu` is per rank. `overall` is sum(items) / sum(seconds), robust to uneven windows.
    """
    rates = [w["items"] / w["seconds"] for w in windows if w.get("seconds")]
    total = summarize([r * world_size for r in rates])
    seconds = sum(w["seconds"] for w in windows)
    items = sum(w["items"] for w in windows)
    total["overall"] = items * world_size / seconds if seconds else None
    per = summarize(rates)
    per["overall"] = items / seconds if seconds else None
    return {"total": total, "per_gpu": per}


def scaling(result, reference):
    """Scaling efficiency: total throughput at N ranks / (N x the reference's per-rank throughput)."""
    n = int(result.get("world_size") or 1)
    total = ((result.get("throughput") or {}).get("total") or {}).get("mean")
    ref = ((reference.get("throughput") or {}).get("total") or {}).get("mean")
    if not total or not ref:
        return {"error": "no throughput to compare"}
    per_rank = ref / int(reference.get("world_size") or 1)
    return {"world_size": n, "reference_run": reference.get("run_id"), "reference_per_rank": per_rank,
            "efficiency": total / (n * per_rank)}


def _clean(value):
    """JSON has no NaN/Inf: write them as strings so the file stays valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write_atomic(path, data):
    """Write JSON so a reader never sees half a file, even if the writer dies midway."""
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(_clean(data), fh, indent=1, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def problems(data):
    """What makes `data` not a valid result (empty list when valid)."""
    if not isinstance(data, dict):
        return ["not a JSON object"]
    out = []
    for key, kind in REQUIRED.items():
        if key not in data:
            out.append("missing field %r" % key)
        elif not isinstance(data[key], kind):
            out.append("field %r has type %s" % (key, type(data[key]).__name__))
    if data.get("schema_version") not in (None, SCHEMA_VERSION) and isinstance(data.get("schema_version"), int):
        if data["schema_version"] > SCHEMA_VERSION:
            out.append("schema_version %s is newer than this dnnbench reads (%s)" % (data["schema_version"], SCHEMA_VERSION))
    if data.get("status") not in STATUSES:
        out.append("status %r is not one of %s" % (data.get("status"), ", ".join(STATUSES)))
    tp = data.get("throughput")
    if isinstance(tp, dict) and "total" not in tp:
        out.append("throughput has no 'total'")
    return out


def read(path):
    """Load and validate a result file; raises ValueError with every problem found."""
    with open(path) as fh:
        try:
            data = json.load(fh)
        except ValueError as exc:
            raise ValueError("%s: not valid JSON (%s)" % (path, exc))
    found = problems(data)
    if found:
        raise ValueError("%s: %s" % (path, "; ".join(found)))
    return data
