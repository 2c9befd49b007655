"""The one result schema, written in the container and read on the host.

Python 3.7+ and stdlib only: this module runs inside old base images and on the host alike.
"""
import json
import math
import os
import statistics
import tempfile

from . import stats

# 2: throughput is the headline statistic (sum_items/sum_seconds, "value") with its CI, no longer a mean of rates
SCHEMA_VERSION = 2
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

    The headline `value` is sum(items) / sum(seconds) (the `statistic`), with its 95 % CI and the
    window median beside it. `total` counts every rank (each rank runs the same windows in
    lockstep under DDP); `per_gpu` is per rank.
    """
    return {"statistic": stats.STATISTIC, "total": stats.headline(windows, world_size),
            "per_gpu": stats.headline(windows)}


def empty_throughput():
    return throughput([])


def upgrade(data):
    """A result of an older schema with its throughput recomputed from its raw windows (the old
    `mean` was a mean of per-window rates: never shown beside the new headline)."""
    if not isinstance(data.get("schema_version"), int) or data["schema_version"] >= SCHEMA_VERSION:
        return data
    data = dict(data)
    data["throughput"] = throughput(data.get("windows") or [], int(data.get("world_size") or 1))
    data["recomputed_from_schema"] = data["schema_version"]
    data["schema_version"] = SCHEMA_VERSION
    return data


def scaling(result, reference):
    """Scaling efficiency: total throughput at N ranks / (N x the reference's per-rank throughput)."""
    n = int(result.get("world_size") or 1)
    total = throughput(result.get("windows") or [], n)["total"]["value"]
    ref = throughput(reference.get("windows") or [], int(reference.get("world_size") or 1))["total"]["value"]
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
