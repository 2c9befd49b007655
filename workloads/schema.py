"""The one result schema, written in the container and read on the host.

Python 3.7+ and stdlib only: this module runs inside old base images and on the host alike.
"""
import json
import math
import os
import statistics

from . import fileio, stats

# 2: throughput is the headline statistic (sum_items/sum_seconds, "value") with its CI, no longer a mean of rates
# 3: windows may carry run_queue_s (the run's wait for a CPU) and cpu_s, device_s; throughput has a
#    `corrected` block (items over seconds less that wait, its CI, the contention share)
SCHEMA_VERSION = 3
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
    lockstep under DDP); `per_gpu` is per rank. `corrected` is the total as if no other process
    had been runnable (stats.corrected), beside the headline, never instead of it.
    """
    return {"statistic": stats.STATISTIC, "total": stats.headline(windows, world_size),
            "per_gpu": stats.headline(windows), "corrected": stats.corrected(windows, world_size)}


def empty_throughput():
    return throughput([])


def upgrade(data):
    """A result of an older schema with its throughput recomputed from its raw windows (the old
    `mean` was a mean of per-window rates: never shown beside the new headline; before 3 no
    window recorded a wait for a CPU, so `corrected` says wall time only)."""
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
    # the two were measured apart: their load goes with the efficiency (verdict.py judges by it)
    return {"world_size": n, "reference_run": reference.get("run_id"), "reference_per_rank": per_rank,
            "efficiency": total / (n * per_rank), "load1": _median_load(result),
            "reference_load1": _median_load(reference)}


def _median_load(data):
    """The median 1-minute load average its windows recorded (None where they recorded none)."""
    loads = sorted(float(w["load1"]) for w in data.get("windows") or [] if isinstance(w, dict)
                   and isinstance(w.get("load1"), (int, float)) and not isinstance(w.get("load1"), bool)
                   and w["load1"] == w["load1"] and w["load1"] >= 0)
    if not loads:
        return None
    k = len(loads) // 2
    return loads[k] if len(loads) % 2 else (loads[k - 1] + loads[k]) / 2.0


_clean = fileio.clean_json


def write_atomic(path, data):
    """Write JSON so a reader never sees half a file, even if the writer dies midway; a link
    at `path` is replaced, never written through (the file layer's rules)."""
    path = os.fspath(path)
    fileio.make_dirs(os.path.dirname(path) or ".")
    fileio.write_json(path, data)


MAX_BYTES = 256 * 2**20    # a result is KiBs; a long loss trace a few MiB
# a window's bounds: items exact in a float; seconds from a microsecond to a year, so that
# rates and their sums stay finite
MAX_ITEMS, MIN_SECONDS, MAX_SECONDS = 2**53, 1e-6, 3.2e7
MAX_RANKS, MAX_COPIES = 2**20, 4096      # processes of one run; parallel copies of one suite job
WINDOW_SECONDS = ("run_queue_s", "cpu_s", "device_s")   # a window's optional counters, in seconds


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


METRICS = {"top1": "top-1", "hr10": "HR@10"}   # a training run's evaluation metric, as reports name it


def metric_name(metric):
    """The name of a training result's metric (results before there was one: top-1)."""
    return METRICS.get(metric or "top1", str(metric))


def finite(value):
    """A real number, not a bool, neither NaN nor infinite: what a figure read from a file must be."""
    return _number(value) and math.isfinite(value)


def _optional(data, key, kinds, what):
    """A problem when data[key] is present, not None and not of `kinds`."""
    value = data.get(key)
    if value is not None and not isinstance(value, kinds):
        return ["field %r must be %s, not %s" % (key, what, type(value).__name__)]
    return []


def _window_problems(windows, where):
    out = []
    for i, w in enumerate(windows):
        if not isinstance(w, dict):
            out.append("%s[%d] is not an object" % (where, i))
            continue
        items, seconds = w.get("items"), w.get("seconds")
        if not (isinstance(items, int) and not isinstance(items, bool) and 0 <= items < MAX_ITEMS):
            out.append("%s[%d].items must be a whole number from 0 to 2**53, not %r" % (where, i, items))
        if not (finite(seconds) and MIN_SECONDS <= seconds < MAX_SECONDS):
            out.append("%s[%d].seconds must be a finite number of seconds > 0, not %r" % (where, i, seconds))
        for key in WINDOW_SECONDS:
            value = w.get(key)
            if value is not None and not (finite(value) and 0 <= value < MAX_SECONDS):
                out.append("%s[%d].%s must be a finite number of seconds >= 0, not %r" % (where, i, key, value))
    return out


def validate(data, copy=False):
    """What makes `data` unusable to the host's readers (report, compare, profile show,
    suites): types and ranges of every field they read. Empty when valid."""
    if not isinstance(data, dict):
        return ["not a JSON object"]
    out = []
    for key, kind in REQUIRED.items():
        if key not in data:
            out.append("missing field %r" % key)
        elif not isinstance(data[key], kind) or isinstance(data[key], bool):
            out.append("field %r has type %s" % (key, type(data[key]).__name__))
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool):
        if version > SCHEMA_VERSION:
            out.append("schema_version %s is newer than this dnnbench reads (%s)" % (version, SCHEMA_VERSION))
        elif version < 1:
            out.append("schema_version %s was never written by dnnbench" % version)
    if data.get("status") not in STATUSES:
        out.append("status %r is not one of %s" % (data.get("status"), ", ".join(STATUSES)))
    if isinstance(data.get("world_size"), int) and not 1 <= data["world_size"] <= MAX_RANKS:
        out.append("world_size must be from 1 to %d, not %r" % (MAX_RANKS, data["world_size"]))
    if isinstance(data.get("windows"), list):
        out += _window_problems(data["windows"], "windows")
    tp = data.get("throughput")
    if isinstance(tp, dict):
        if not isinstance(tp.get("total"), dict):
            out.append("throughput has no 'total' object")
        else:
            for key in ("value", "ci95_low", "ci95_high", "mean", "sd", "median", "min", "max"):
                value = tp["total"].get(key)
                if value is not None and not finite(value):
                    out.append("throughput.total.%s must be a finite number, not %r" % (key, value))
    opts = data.get("options")
    if isinstance(opts, dict):
        b = opts.get("batch_size")
        if b is not None and not (isinstance(b, int) and not isinstance(b, bool) and 1 <= b < 2**31):
            out.append("options.batch_size must be a whole number from 1 to 2**31, not %r" % (b,))
        out += ["options." + p for p in _optional(opts, "amp", str, "text")]
    for key in ("job", "system_label", "copy_of"):
        out += _optional(data, key, str, "text")
    system = data.get("system")
    if isinstance(system, dict):
        gpus = system.get("gpus")
        if gpus is not None and not (isinstance(gpus, list) and all(
                isinstance(g, dict) and isinstance(g.get("name", ""), str) for g in gpus)):
            out.append("system.gpus must be a list of objects with a text name")
    scaling = data.get("scaling")
    if scaling is not None:
        if not isinstance(scaling, dict):
            out.append("field 'scaling' must be an object")
        elif scaling.get("efficiency") is not None and not (finite(scaling["efficiency"])
                                                           and scaling["efficiency"] > 0):
            out.append("scaling.efficiency must be a finite number > 0, not %r" % (scaling["efficiency"],))
    for key in ("telemetry", "profile", "cool_down", "host", "manifest"):
        out += _optional(data, key, dict, "an object")
    copies = data.get("copies")
    if copies is not None:
        if copy or not isinstance(copies, list) or len(copies) > MAX_COPIES:
            out.append("field 'copies' must be a list of at most %d results, one level deep" % MAX_COPIES)
        else:
            for i, c in enumerate(copies):
                out += ["copies[%d]: %s" % (i, p) for p in validate(c, copy=True)]
    return out


problems = validate   # the older name

SCHEMA_FILE = "result.schema.json"   # beside this module, in the package: json_schema() written out


def json_schema():
    """The result as a JSON Schema (draft 2020-12) for readers that do not import dnnbench: the
    same fields, types and ranges validate() checks, made from the same tables. Fields a result
    may carry beyond these are allowed (results grow); `python -m dnnbench.workloads.schema`
    prints it, and the package ships it as result.schema.json."""
    text = {"type": "string"}
    number = {"type": "number"}            # JSON has no NaN or Infinity: finite by construction
    kinds = {int: {"type": "integer"}, str: text, dict: {"type": "object"}, list: {"type": "array"},
             type(None): {"type": "null"}}

    def of(kind):
        if isinstance(kind, tuple):
            return {"anyOf": [kinds[k] for k in kind]}
        return dict(kinds[kind])

    window = {"type": "object", "required": ["items", "seconds"], "properties": dict({
        "items": {"type": "integer", "minimum": 0, "exclusiveMaximum": MAX_ITEMS},
        "seconds": {"type": "number", "minimum": MIN_SECONDS, "exclusiveMaximum": MAX_SECONDS}},
        **dict((k, {"anyOf": [{"type": "number", "minimum": 0, "exclusiveMaximum": MAX_SECONDS}, {"type": "null"}]})
               for k in WINDOW_SECONDS))}
    headline = {"type": "object", "properties": dict(
        (k, {"anyOf": [number, {"type": "null"}]})
        for k in ("value", "ci95_low", "ci95_high", "mean", "sd", "median", "min", "max"))}
    optional_object = {"anyOf": [{"type": "object"}, {"type": "null"}]}
    optional_text = {"anyOf": [text, {"type": "null"}]}
    props = dict((key, of(kind)) for key, kind in REQUIRED.items())
    props.update({
        "schema_version": {"type": "integer", "minimum": 1, "maximum": SCHEMA_VERSION},
        "status": {"enum": list(STATUSES)},
        "world_size": {"type": "integer", "minimum": 1, "maximum": MAX_RANKS},
        "windows": {"type": "array", "items": window},
        "throughput": {"type": "object", "required": ["total"], "properties": {
            "total": headline, "per_gpu": headline, "corrected": {"type": "object", "properties": dict(
                [(k, {"anyOf": [number, {"type": "null"}]}) for k in ("value", "ci95_low", "ci95_high", "ci95_pct")]
                + [("contention", {"anyOf": [{"type": "number", "minimum": 0, "maximum": 1}, {"type": "null"}]}),
                   ("why", optional_text)])}}},
        "options": {"type": "object", "properties": {
            "batch_size": {"anyOf": [{"type": "integer", "minimum": 1, "exclusiveMaximum": 2**31},
                                     {"type": "null"}]},
            "amp": optional_text}},
        "job": optional_text, "system_label": optional_text, "copy_of": optional_text,
        "system": {"type": "object", "properties": {"gpus": {"anyOf": [
            {"type": "array", "items": {"type": "object", "properties": {"name": text}}}, {"type": "null"}]}}},
        "scaling": {"anyOf": [{"type": "object", "properties": {"efficiency": {"anyOf": [
            {"type": "number", "exclusiveMinimum": 0}, {"type": "null"}]}}}, {"type": "null"}]},
        "telemetry": optional_object, "profile": optional_object, "cool_down": optional_object,
        "host": optional_object,
        # what a second run must match (workloads/manifest.py); a script's carries its path and SHA-256
        "manifest": {"anyOf": [{"type": "null"}, {"type": "object", "required": ["manifest_version", "command_line"],
                                                  "properties": {
            "manifest_version": {"type": "integer", "minimum": 1},
            "command_line": {"type": "array", "items": text},
            "seed": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "host": optional_object,
            "script": {"type": "object", "required": ["path", "sha256"], "properties": {
                "path": text, "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}}}}]},
        "training": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {
            "metric": {"enum": sorted(METRICS)}, "reached": {"type": "boolean"},
            "time_to_target_s": {"anyOf": [number, {"type": "null"}]},
            "best": {"anyOf": [number, {"type": "null"}]},
            "epochs": {"type": "array", "items": {"type": "object"}},
            "segments": {"type": "array", "items": {"type": "object"}}}}]},
        # the MLPerf compliance checker's verdict on the run's mlperf_log.txt (dnnbench mlperf check)
        "mlperf": {"anyOf": [{"type": "null"}, {"type": "object", "required": ["verdict", "ruleset"], "properties": {
            "verdict": {"enum": ["pass", "fail", "unchecked"]}, "ruleset": text,
            "messages": {"type": "array", "items": text}, "segments": {"type": "integer", "minimum": 0},
            "time_to_train_s": {"anyOf": [number, {"type": "null"}]}}}]},
    })
    result = {"type": "object", "required": sorted(REQUIRED), "properties": props}
    copies = {"type": "array", "maxItems": MAX_COPIES, "items": {"$ref": "#/$defs/copy"}}
    top = dict(result, properties=dict(props, copies=copies))
    # a copy is a result one level deep: no copies of its own
    copy = dict(result, properties=dict(props), **{"not": {"required": ["copies"]}})
    return dict({"$schema": "https://json-schema.org/draft/2020-12/schema",
                 "$id": "urn:dnnbench:result:%d" % SCHEMA_VERSION,
                 "title": "dnnbench result.json, schema version %d" % SCHEMA_VERSION,
                 "description": "One run's result, written by dnnbench in its run folder "
                                "(RESULTS/<run-id>/result.json). Generated from dnnbench.workloads.schema.",
                 "$defs": {"copy": copy}}, **top)


if __name__ == "__main__":
    print(json.dumps(json_schema(), indent=1, sort_keys=True))


NotRegularFile, FileTooLarge = fileio.NotRegularFile, fileio.FileTooLarge


def read_regular(path, max_bytes):
    """The bytes of a file a user or a run handed over: a regular file, not a link, of at most
    `max_bytes` (the file layer's bounded read)."""
    return fileio.read_bytes(path, max_bytes)


def read(path):
    """Load and validate a result file. Raises ValueError with every problem found (naming
    the file), OSError when it cannot be opened. Only regular files are read: a FIFO named
    result.json would block forever, a device never end."""
    path = os.fspath(path)
    try:
        raw = read_regular(path, MAX_BYTES)
    except FileTooLarge as exc:
        raise ValueError("%s: %d bytes, more than a result holds (%d)" % (path, exc.size, MAX_BYTES))
    except NotRegularFile as exc:
        raise ValueError("%s: %s" % (path, exc.strerror))
    if not raw.strip():
        raise ValueError("%s: empty file" % path)
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ValueError("%s: JSON nested too deep" % path)
    except ValueError as exc:   # JSONDecodeError and UnicodeDecodeError alike
        raise ValueError("%s: not valid JSON (%s)" % (path, exc))
    found = validate(data)
    if found:
        raise ValueError("%s: %s" % (path, "; ".join(found[:5]) + ("; ..." if len(found) > 5 else "")))
    return data
