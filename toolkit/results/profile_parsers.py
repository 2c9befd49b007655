"""Read what the profilers left in a run folder and reduce it to summaries the result keeps:
ncu counters -> pipe utilization weighted by cycles (TBD's coreutil, fixed), nsys stats ->
top kernels and GPU-busy share of the window, nvprof and rocprof summaries -> top kernels,
a torch.profiler trace -> top ops. The real files these are tested on: tests/fixtures/profiles/."""
from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from typing import Any
from pathlib import Path

from dnnbench.workloads import fileio
from dnnbench.workloads.profile import PIPE_FIELDS

TOP = 15


class ProfileFormatError(ValueError):
    pass


class NoProfileData(ProfileFormatError):
    """The profiler ran but this file holds no GPU activity (e.g. nvprof's file for torchrun's parent)."""


def number(text) -> float | None:
    """ncu/nsys numbers: thousands separators, blanks and n/a."""
    text = str(text).strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def _csv_from(lines: list[str], header_test, quoted: bool = True) -> list[list[str]]:
    """The CSV part of a profiler's output, from the header row on. ncu and nvprof quote every
    field, and their log also holds `==PROF==` lines and the program's output: `quoted` keeps
    only quoted rows. nsys writes plain CSV files."""
    start = next((i for i, line in enumerate(lines) if header_test(line)), None)
    if start is None:
        raise ProfileFormatError("no header row found")
    kept = [line for line in lines[start:] if (line.startswith(('"', ",")) if quoted else line.strip())]
    return list(csv.reader(kept))


# Time units as profilers print them (ncu's base `nsecond`, its auto-scaled `usecond`/`msecond`,
# nvprof's `us`/`ms`), in ns. A unit not listed here is not a time: never guessed.
TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "µs": 1e3, "ms": 1e6, "msecond": 1e6,
           "s": 1e9, "second": 1e9}
# ncu scales counts with a prefix when --print-units is auto ("Kcycle", "Mcycle").
PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def _cycles(value: float | None, unit: str) -> float | None:
    m = re.fullmatch(r"([KMG]?)cycle", unit.strip())
    return value * PREFIX[m.group(1)] if m and value is not None else None


def _ns(value: float | None, unit: str) -> float | None:
    scale = TIME_NS.get(unit.strip())
    return value * scale if scale is not None and value is not None else None


# --- Nsight Compute ------------------------------------------------------------------

# ncu metric base name -> utilization field: the launcher's own table, so names live in one place.
FIELDS = ("fma", "fp16", "tensor", "sfu", "tensor_active")
# Only these suffixes are a share of peak; `.sum` etc. are counts and never shown as a percentage.
# One suffix per field, the first present in the order here (never two suffixes added together).
PCT_SUFFIXES = (".avg.pct_of_peak_sustained_elapsed", ".avg.pct_of_peak_sustained_active")
# Per-launch weights: the metric name on the raw page, the section row name on the details page.
CYCLES = ("gpc__cycles_elapsed.max", "Elapsed Cycles")      # SOL's "Elapsed Cycles" is gpc__cycles_elapsed.max
DURATION = ("gpu__time_duration.sum", "Duration")           # SOL's "Duration" is gpu__time_duration.sum


def ncu_kernels(text: str) -> list[dict]:
    """One dict per profiled launch: {"id", "name", "metrics": {name: (value, unit)}}, from either
    CSV page: raw (one row per launch, a units row under the header) or details (one row per
    metric, the unit in its own column; 2023+ adds rule columns and ends metric rows early)."""
    rows = _csv_from(text.splitlines(), lambda line: line.startswith('"ID"') and '"Kernel Name"' in line)
    header, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    launches: dict[str, dict] = {}
    if "Metric Name" in col and "Metric Value" in col:
        need = col["Metric Value"]          # rule rows and 2023+ metric rows end early: read up to the value
        for row in body:
            if len(row) <= need or not row[col["Metric Name"]] or not row[col["ID"]].strip():
                continue
            k = launches.setdefault(row[col["ID"]], {"id": row[col["ID"]], "name": row[col["Kernel Name"]], "metrics": {}})
            unit = row[col["Metric Unit"]] if "Metric Unit" in col else ""
            k["metrics"][row[col["Metric Name"]]] = (number(row[need]), unit)
        return list(launches.values())
    first = col["CC"] + 1 if "CC" in col else col.get("Stream", col["Kernel Name"]) + 1
    metrics = [name for name in header[first:] if "__" in name]
    units = {}
    for row in body:
        if len(row) < len(header):
            continue                         # a cut-off line
        if not row[col["ID"]].strip():       # the units row (--print-units base: nsecond, cycle, %)
            units = {m: row[col[m]] for m in metrics}
            continue
        launches[row[col["ID"]]] = {"id": row[col["ID"]], "name": row[col["Kernel Name"]],
                                    "metrics": {m: (number(row[col[m]]), units.get(m, "")) for m in metrics}}
    return list(launches.values())


def _weight(metrics: dict, names: tuple, convert, default_unit: str) -> float | None:
    for name in names:
        if name in metrics:
            value, unit = metrics[name]
            # No unit printed (raw page without a units row): the metric's documented base unit.
            return convert(value, unit or default_unit)
    return None


def _pipes(metrics: dict) -> dict[str, tuple[str, float]]:
    """{field: (suffix, value)} for one launch: percentage metrics only, one suffix per field."""
    found: dict[str, dict[str, float]] = defaultdict(dict)
    for name, (value, unit) in metrics.items():
        suffix = next((s for s in PCT_SUFFIXES if name.endswith(s)), None)
        field = PIPE_FIELDS.get(name[:-len(suffix)]) if suffix else None
        if field and suffix and value is not None and unit in ("", "%"):
            found[field][suffix] = found[field].get(suffix, 0.0) + value
    return {f: next((s, by[s]) for s in PCT_SUFFIXES if s in by) for f, by in found.items()}


def ncu_summary(text: str) -> dict:
    """Pipe utilization over every profiled launch (the last one included), each launch weighted
    by its cycles (gpc__cycles_elapsed.max, as coreutil), else by its duration, else unweighted,
    saying which; tensor-active cycles weighted by duration. Plus the kernels that took longest."""
    kernels = ncu_kernels(text)
    if not kernels:
        raise ProfileFormatError("the ncu output has a header but no kernel rows (was the timed window "
                                 "reached? --start-iter/--stop-iter bracket it)")
    for k in kernels:
        k["cycles"] = _weight(k["metrics"], CYCLES, _cycles, "cycle")
        k["duration_ns"] = _weight(k["metrics"], DURATION, _ns, "nsecond")
        k["pipes"] = _pipes(k["metrics"])
    if all(k["cycles"] for k in kernels):
        weighting, key = "cycles (gpc__cycles_elapsed.max)", "cycles"
    elif all(k["duration_ns"] for k in kernels):
        weighting, key = "duration (gpu__time_duration.sum)", "duration_ns"
    else:
        weighting, key = "unweighted: not every launch has cycles or a duration", None
    sums: dict[str, float] = defaultdict(float)
    weights: dict[str, float] = defaultdict(float)
    suffixes: dict[str, str] = {}
    for k in kernels:
        for field, (suffix, value) in k["pipes"].items():
            suffixes.setdefault(field, suffix)
            w = k[key] if key else 1.0
            if field == "tensor_active" and all(x["duration_ns"] for x in kernels):
                w = k["duration_ns"]
            sums[field] += value * w
            weights[field] += w
    util = {f: sums[f] / weights[f] for f in FIELDS if weights.get(f)}
    rank = "duration_ns" if all(k["duration_ns"] for k in kernels) else ("cycles" if key == "cycles" else None)
    per_name: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for k in kernels:
        per_name[k["name"]][0] += k[rank] if rank else 1
        per_name[k["name"]][1] += 1
    total = sum(v[0] for v in per_name.values())
    top = sorted(per_name.items(), key=lambda kv: -kv[1][0])[:TOP]
    out = {"launches": len(kernels), "weighted_by": weighting if util else "no pipe-utilization metrics in this output",
           "utilization_pct": util, "metrics": {f: f"{f} ({suffixes[f].split('.')[-1]})" for f in util},
           "ranked_by": {"duration_ns": "duration", "cycles": "cycles"}.get(rank or "",
                                                                           "launch count (no duration or cycles)"),
           "kernels": [{"name": name, "instances": n, "time_pct": 100 * t / total if total else None,
                        **({"total_ns": t} if rank == "duration_ns" else {})} for name, (t, n) in top]}
    if "tensor_active" in util:
        out["tensor_active_weighted_by"] = "duration" if all(x["duration_ns"] for x in kernels) else weighting
    return out


# --- Nsight Systems ------------------------------------------------------------------

def _norm(name: str) -> str:
    return re.sub(r"[\s()]", "", name).lower()


def _table(text: str, first: str) -> list[dict]:
    """CSV rows keyed by normalized column name ("Time (%)" and "Time(%)" -> "time%")."""
    rows = _csv_from(text.splitlines(), lambda line: _norm(line.split(",")[0].strip('"')) == first, quoted=False)
    keys = [_norm(h) for h in rows[0]]
    return [dict(zip(keys, r)) for r in rows[1:] if len(r) == len(keys)]


def nsys_summary(kern_sum: str, trace: str | None = None, window_s: float | None = None) -> dict:
    """Top kernels from `cuda_gpu_kern_sum` (or the old `gpukernsum`), and the GPU-busy share:
    the union of kernel intervals from the trace over the timed window (per device, averaged)."""
    rows = _table(kern_sum, "time%")
    kernels = [{"name": r.get("name"), "time_pct": number(r.get("time%")), "total_ns": number(r.get("totaltimens")),
                "instances": int(number(r.get("instances")) or 0),
                "avg_ns": number(r.get("avgns", r.get("average")))} for r in rows]
    if not kernels:
        raise NoProfileData("the capture holds no CUDA kernels (the cudaProfilerStart/Stop range was "
                            "empty or never reached)")
    kernels.sort(key=lambda k: -(k["total_ns"] or 0))
    total = sum(k["total_ns"] or 0 for k in kernels)
    for k in kernels:                   # nsys rounds Time (%) to 0.1: recomputed from the totals
        k["time_pct"] = 100 * (k["total_ns"] or 0) / total if total else k["time_pct"]
    out = {"kernels": kernels[:TOP], "kernel_names": len(kernels)}
    if trace:
        out.update(_busy(_table(trace, "startns"), window_s))
    return out


def _busy(rows: list[dict], window_s: float | None) -> dict:
    spans = defaultdict(list)
    for r in rows:
        name = r.get("name") or ""
        start, dur = number(r.get("startns")), number(r.get("durationns"))
        if start is None or dur is None or name.startswith("[CUDA "):     # memcpy/memset rows
            continue
        spans[r.get("device", "0")].append((start, start + dur))
    if not spans:
        return {"busy_pct": None}
    shares = []
    for intervals in spans.values():
        intervals.sort()
        busy, end = 0.0, None
        lo = intervals[0][0]
        hi = max(b for _, b in intervals)
        for a, b in intervals:
            if end is None or a > end:
                busy += b - a
                end = b
            elif b > end:
                busy += b - end
                end = b
        span = window_s * 1e9 if window_s else hi - lo
        shares.append(min(100.0, 100 * busy / span) if span else None)
    known = [s for s in shares if s is not None]
    return {"busy_pct": sum(known) / len(known) if known else None, "devices": len(spans),
            "busy_of": "timed window" if window_s else "first to last kernel"}


# --- nvprof, rocprof, torch.profiler -------------------------------------------------

def _with_unit(text: str) -> tuple[float | None, str]:
    """nvprof values with the unit inline when there is no units row ("542.36ms", "47.79%")."""
    m = re.fullmatch(r"\s*([-+\d.,eE]+)\s*([a-zµ%]*)\s*", str(text))
    return (number(m.group(1)), m.group(2)) if m else (None, "")


def nvprof_summary(text: str) -> dict:
    """`nvprof --csv --print-gpu-summary`: a header, usually a units row (",%,ms,..."), then rows.
    CUDA 8 and older print no `Type` column (GPU rows only) and may put units inline; memcpy and
    memset rows are GPU activities but not kernels."""
    if "Profiling result" not in text and '"Type"' not in text and "Time(%)" not in text:
        raise NoProfileData("no GPU activity recorded in this process")
    rows = _csv_from(text.splitlines(), lambda line: line.lstrip('"').startswith(("Type", "Time(%)")), quoted=False)
    header = [h.strip() for h in rows[0]]
    col = {h: i for i, h in enumerate(header)}
    body = [r for r in rows[1:] if len(r) >= len(header) and not r[0].startswith("==")]
    units = {}
    if body and number(body[0][col["Time"]]) is None and _with_unit(body[0][col["Time"]])[0] is None:
        units, body = dict(zip(header, body[0])), body[1:]       # the units row
    kernels: list[dict[str, Any]] = []
    copies = 0.0
    for r in body:
        if "Type" in col and r[col["Type"]] != "GPU activities":
            continue
        name = ",".join(r[col["Name"]:])     # unquoted names keep their commas (CUDA 8)
        value, unit = _with_unit(r[col["Time"]])
        ns = _ns(value, units.get("Time") or unit)
        if ns is None:
            raise ProfileFormatError(f"nvprof time {r[col['Time']]!r} has no known unit")
        if name.startswith("[CUDA "):
            copies += ns
            continue
        kernels.append({"name": name, "total_ns": ns, "instances": int(number(r[col["Calls"]]) or 0)})
    total = sum(k["total_ns"] for k in kernels)
    for k in kernels:
        k["time_pct"] = 100 * k["total_ns"] / total if total else None
    kernels.sort(key=lambda k: -k["total_ns"])
    return {"kernels": kernels[:TOP], "kernel_names": len(kernels), "memcpy_memset_ns": copies,
            "time_pct_of": "kernel time (memcpy/memset left out)"}


# rocprof v1 lists the AQL barrier packets RCCL/HIP insert next to kernels; rocprof 4.x an
# "Unknown command type" row. Neither is a kernel.
NOT_KERNELS = re.compile(r"^(<.*>|Unknown command type)$")


def rocprof_summary(text: str) -> dict:
    """rocprof `--stats` (v1 out.stats.csv; rocprofv3 *_kernel_stats.csv has the same first
    columns). Shares are recomputed over kernels: the file's Percentage column counts barrier
    packets. Old rocprof writes kernel names unquoted, commas and all: the numbers are the
    last four columns, the name is the rest."""
    rows = _csv_from(text.splitlines(), lambda line: _norm(line.split(",")[0].strip('"')) == "name", quoted=False)
    keys = [_norm(h) for h in rows[0]]
    kernels: list[dict[str, Any]] = []
    for r in rows[1:]:
        extra = len(r) - len(keys)
        if extra < 0:
            continue
        row = dict(zip(keys, [",".join(r[:extra + 1])] + r[extra + 1:]))
        if NOT_KERNELS.match(row["name"].strip()):
            continue
        kernels.append({"name": row["name"], "instances": int(number(row.get("calls")) or 0),
                        "total_ns": number(row.get("totaldurationns")), "avg_ns": number(row.get("averagens"))})
    total = sum(k["total_ns"] or 0 for k in kernels)
    for k in kernels:
        k["time_pct"] = 100 * (k["total_ns"] or 0) / total if total else None
    kernels.sort(key=lambda k: -(k["total_ns"] or 0))
    return {"kernels": kernels[:TOP], "kernel_names": len(kernels), "time_pct_of": "kernel time (barrier packets left out)"}


def _self_times(events: list[dict]) -> list[tuple[str, float]]:
    """(name, self µs) of CPU ops: an op's duration less its children's on the same thread
    (ops nest on a thread; the trace gives inclusive durations)."""
    out = []
    by_thread = defaultdict(list)
    for e in events:
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack: list[list] = []          # [end, name, self]
        for e in evs:
            start, dur = float(e["ts"]), float(e["dur"])
            while stack and stack[-1][0] <= start:
                out.append((stack[-1][1], stack.pop()[2]))
            if stack:
                stack[-1][2] -= dur
            stack.append([start + dur, e.get("name", "?"), dur])
        out.extend((name, own) for _, name, own in stack)
    return out


def _top(timed: list[tuple[str, float]]) -> tuple[int, list[dict]]:
    per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for name, us in timed:
        per[name][0] += us * 1e3
        per[name][1] += 1
    total = sum(v[0] for v in per.values())
    top = sorted(per.items(), key=lambda kv: -kv[1][0])[:TOP]
    return len(per), [{"name": n, "instances": c, "total_ns": t, "time_pct": 100 * t / total if total else None}
                      for n, (t, c) in top]


# torch.profiler categories: PyTorch 1.8/1.9 write "Kernel"/"Operator", 1.10+ "kernel"/"cpu_op".
KERNEL_CATS, CPU_OP_CATS = {"kernel"}, {"cpu_op", "operator"}


def torch_summary(trace: dict) -> dict:
    """Top ops of a Chrome trace from torch.profiler: GPU kernels when there are any, else CPU ops
    by self time (the trace is in µs; ns here, like the others). CPU ops are kept either way."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e and "ts" in e]
    kernels = [(e.get("name", "?"), float(e["dur"])) for e in events if str(e.get("cat", "")).lower() in KERNEL_CATS]
    ops = _self_times([e for e in events if str(e.get("cat", "")).lower() in CPU_OP_CATS])
    if not kernels and not ops:
        raise ProfileFormatError("no GPU kernels and no CPU ops in the trace")
    n_ops, top_ops = _top(ops)
    n, top = _top(kernels) if kernels else (n_ops, top_ops)
    return {"of": "GPU kernels" if kernels else "CPU ops (self time)", "kernel_names": n, "kernels": top,
            "cpu_op_names": n_ops, "cpu_ops": top_ops[:5]}


PROFILE_MAX = 1 << 30     # bytes of one profiler file read at most (nsys traces run to hundreds of MB)


def _text(path: Path) -> str:
    """A profiler's output through the file layer: no link followed, never a FIFO, bounded."""
    return fileio.read_text(str(path), max_bytes=PROFILE_MAX, errors="replace")


def _read_trace(path: Path) -> dict:
    """torch.profiler's tensorboard handler writes .json or, with use_gzip, .json.gz."""
    import zlib
    raw = fileio.read_bytes(str(path), max_bytes=PROFILE_MAX)
    if path.suffix == ".gz":
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        raw = inflate.decompress(raw, PROFILE_MAX)
        if inflate.unconsumed_tail:
            raise ValueError(f"{path.name} inflates to more than {PROFILE_MAX >> 20} MiB")
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError(f"{path.name}: JSON nested too deep") from None


# --- a run folder --------------------------------------------------------------------

def summarize(run_dir: Path, result: dict | None = None) -> dict | None:
    """Every profile found in the run folder, summarized; None when there is none. What could not
    be read is listed under "problems"; files with no GPU activity (torchrun's parent under
    nvprof) under "skipped"."""
    folder = run_dir / "profile"
    found: dict = {}
    problems, skipped = [], []

    def attempt(tool: str, fn):
        try:
            found[tool] = fn()
        except NoProfileData as exc:
            skipped.append(f"{tool}: {exc}")
        except (ProfileFormatError, ValueError, KeyError, IndexError, OSError) as exc:
            problems.append(f"{tool}: {exc}")

    launch = {}
    if (folder / "launch.json").is_file():       # what the launcher chose (kernel cap, clocks, dropped metrics)
        try:
            launch = fileio.read_json(str(folder / "launch.json"), max_bytes=1 << 20)
        except (ValueError, RecursionError, OSError) as exc:
            problems.append(f"launch.json: not readable JSON ({type(exc).__name__})")
            launch = {}
        if not isinstance(launch, dict):
            problems.append("launch.json: not a JSON object")
            launch = {}
    window = sum(w.get("seconds", 0) for w in (result or {}).get("windows") or []) or None
    if (folder / "ncu.csv").is_file():
        attempt("ncu", lambda: {**ncu_summary(_text(folder / "ncu.csv")),
                                **({"launch": launch} if launch else {})})
    kern = next((p for p in (folder / "nsys_cuda_gpu_kern_sum.csv", folder / "nsys_gpukernsum.csv") if p.is_file()), None)
    if kern is not None:
        trace = next((p for p in (folder / "nsys_cuda_gpu_trace.csv", folder / "nsys_gputrace.csv") if p.is_file()), None)
        attempt("nsys", lambda: nsys_summary(_text(kern), _text(trace) if trace else None, window))
    elif launch.get("nsys_problem"):
        problems.append(f"nsys: {launch['nsys_problem']}")
    elif folder.is_dir() and any(folder.glob("nsys.*rep")):
        problems.append("nsys: a report but no `nsys stats` CSV (see log.txt)")
    for p in sorted(folder.glob("nvprof-*.csv")) if folder.is_dir() else []:
        attempt(f"nvprof:{p.stem}", lambda p=p: nvprof_summary(_text(p)))
    # rocprof v1: rocprof.stats.csv; rocprofv3: <host>/<pid>_kernel_stats.csv (or -o name_kernel_stats.csv)
    stats = ([folder / "rocprof.stats.csv"] if (folder / "rocprof.stats.csv").is_file() else []) + \
        (sorted(folder.rglob("*kernel_stats.csv")) if folder.is_dir() else [])
    for p in stats:
        tool = "rocprof" if len(stats) == 1 else f"rocprof:{p.relative_to(folder).with_suffix('')}"
        attempt(tool, lambda p=p: rocprof_summary(_text(p)))
    trace = next((p for p in (run_dir / "torch-trace.json", run_dir / "torch-trace.json.gz") if p.is_file()), None)
    if trace is not None:
        attempt("torch", lambda: torch_summary(_read_trace(trace)))
    if problems:
        found["problems"] = problems
    if skipped and any(k.startswith("nvprof") for k in found):
        pass                                    # the GPU ranks' files were read: the parent's is expected
    elif skipped:
        found.setdefault("problems", []).extend(skipped)
    return found or None


def readable(profile: dict | None) -> list[str]:
    """The profiles in a summary that hold something (not just problems)."""
    return [k for k in (profile or {}) if k != "problems"]
