"""Read what the profilers left in a run folder and reduce it to summaries the result keeps:
ncu counters -> pipe utilization weighted by cycles (TBD's coreutil, fixed), nsys stats ->
top kernels and GPU-busy share of the window, nvprof and rocprof summaries -> top kernels,
a torch.profiler trace -> top ops. Formats: shared/reference/profiling.md."""
from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

TOP = 15
# ncu metric base name -> utilization field. Tensor pipes are split by op type from Ampere on
# (hmma; Hopper adds gmma); a kernel uses one of them, so the field sums what is there.
PIPE_FIELDS = {
    "sm__inst_executed_pipe_fma": "fma",
    "sm__inst_executed_pipe_fp16": "fp16", "sm__inst_executed_pipe_fma_type_fp16": "fp16",
    "sm__inst_executed_pipe_tensor": "tensor", "sm__inst_executed_pipe_tensor_op_hmma": "tensor",
    "sm__inst_executed_pipe_tensor_op_gmma": "tensor",
    "sm__inst_executed_pipe_xu": "sfu",
    "sm__pipe_tensor_cycles_active": "tensor_active", "sm__pipe_tensor_op_hmma_cycles_active": "tensor_active",
    "sm__pipe_tensor_op_gmma_cycles_active": "tensor_active",
}
FIELDS = ("fma", "fp16", "tensor", "sfu", "tensor_active")


class ProfileFormatError(ValueError):
    pass


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


# --- Nsight Compute ------------------------------------------------------------------

def ncu_kernels(text: str) -> list[dict]:
    """One dict per profiled launch: {"id", "name", <metric>: value}, from either CSV page:
    raw (one row per launch, a units row under the header) or details (one row per metric)."""
    rows = _csv_from(text.splitlines(), lambda line: line.startswith('"ID"') and '"Kernel Name"' in line)
    header, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    launches: dict[str, dict] = {}
    if "Metric Name" in col and "Metric Value" in col:
        for row in body:
            if len(row) < len(header) or not row[col["Metric Name"]]:
                continue
            k = launches.setdefault(row[col["ID"]], {"id": row[col["ID"]], "name": row[col["Kernel Name"]]})
            k[row[col["Metric Name"]]] = number(row[col["Metric Value"]])
        return list(launches.values())
    metrics = [name for name in header[col["CC"] + 1 if "CC" in col else col["Kernel Name"] + 1:] if "__" in name]
    for row in body:
        if len(row) < len(header) or not row[col["ID"]].strip():
            continue            # the units row, or a cut-off line
        launches[row[col["ID"]]] = {"id": row[col["ID"]], "name": row[col["Kernel Name"]],
                                    **{m: number(row[col[m]]) for m in metrics}}
    return list(launches.values())


def ncu_summary(text: str) -> dict:
    """Pipe utilization over every profiled launch (the last one included), each launch weighted
    by its cycles (gpc__cycles_elapsed.max, as coreutil), or by its duration when ncu gave no
    cycles; tensor-active cycles weighted by duration. Plus the kernels that took longest."""
    kernels = ncu_kernels(text)
    if not kernels:
        raise ProfileFormatError("no kernels in the ncu output (was the window reached? "
                                 "--start-iter/--stop-iter bracket it)")
    sums = defaultdict(float)
    weights = defaultdict(float)
    per_name: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    present = set()
    for k in kernels:
        cycles = k.get("gpc__cycles_elapsed.max")
        duration = k.get("gpu__time_duration.sum")
        by_field = defaultdict(float)
        for metric, value in k.items():
            field = PIPE_FIELDS.get(metric.split(".")[0]) if isinstance(metric, str) else None
            if field and value is not None:
                by_field[field] += value
                present.add(field)
        for field, value in by_field.items():
            w = duration if field == "tensor_active" else (cycles if cycles is not None else duration)
            if w:
                sums[field] += value * w
                weights[field] += w
        if duration is not None:
            per_name[k["name"]][0] += duration
        per_name[k["name"]][1] += 1
    total = sum(v[0] for v in per_name.values())
    top = sorted(per_name.items(), key=lambda kv: -kv[1][0])[:TOP]
    return {
        "launches": len(kernels),
        "weighted_by": "gpc__cycles_elapsed.max" if any(k.get("gpc__cycles_elapsed.max") for k in kernels)
        else "gpu__time_duration.sum",
        "utilization_pct": {f: (sums[f] / weights[f] if weights[f] else None) for f in FIELDS if f in present},
        "kernels": [{"name": name, "instances": n, "total_ns": t or None,
                     "time_pct": 100 * t / total if total else None} for name, (t, n) in top],
    }


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
    kernels.sort(key=lambda k: -(k["total_ns"] or 0))
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

_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def nvprof_summary(text: str) -> dict:
    """`nvprof --csv --print-gpu-summary`: a header, a units row ("",%,ms,...), then rows."""
    rows = _csv_from(text.splitlines(), lambda line: line.startswith('"Type"'))
    header, units = rows[0], rows[1]
    col = {h: i for i, h in enumerate(header)}
    scale = _UNIT_NS.get(units[col["Time"]], 1.0)
    kernels = [{"name": r[col["Name"]], "time_pct": number(r[col["Time(%)"]]),
                "total_ns": (number(r[col["Time"]]) or 0) * scale, "instances": int(number(r[col["Calls"]]) or 0)}
               for r in rows[2:] if len(r) == len(header) and r[col["Type"]] == "GPU activities"]
    kernels.sort(key=lambda k: -k["total_ns"])
    return {"kernels": kernels[:TOP], "kernel_names": len(kernels)}


def rocprof_summary(text: str) -> dict:
    """rocprof `--stats` (v1 out.stats.csv; rocprofv3 *_kernel_stats.csv has the same first columns)."""
    rows = _table(text, "name")
    kernels = [{"name": r["name"], "instances": int(number(r.get("calls")) or 0),
                "total_ns": number(r.get("totaldurationns")), "avg_ns": number(r.get("averagens")),
                "time_pct": number(r.get("percentage"))} for r in rows]
    kernels.sort(key=lambda k: -(k["total_ns"] or 0))
    return {"kernels": kernels[:TOP], "kernel_names": len(kernels)}


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


def torch_summary(trace: dict) -> dict:
    """Top ops of a Chrome trace from torch.profiler: GPU kernels when there are any, else CPU ops
    by self time (the trace is in µs; ns here, like the others)."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e and "ts" in e]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    timed = [(e.get("name", "?"), float(e["dur"])) for e in kernels] if kernels else \
        _self_times([e for e in events if e.get("cat") == "cpu_op"])
    per = defaultdict(lambda: [0.0, 0])
    for name, us in timed:
        per[name][0] += us * 1e3
        per[name][1] += 1
    total = sum(v[0] for v in per.values())
    top = sorted(per.items(), key=lambda kv: -kv[1][0])[:TOP]
    return {"of": "GPU kernels" if kernels else "CPU ops (self time)", "kernel_names": len(per),
            "kernels": [{"name": n, "instances": c, "total_ns": t, "time_pct": 100 * t / total if total else None}
                        for n, (t, c) in top]}


# --- a run folder --------------------------------------------------------------------

def summarize(run_dir: Path, result: dict | None = None) -> dict | None:
    """Every profile found in the run folder, summarized; None when there is none."""
    folder = run_dir / "profile"
    found: dict = {}
    problems = []

    def attempt(tool: str, fn, *args):
        try:
            found[tool] = fn(*args)
        except (ProfileFormatError, ValueError, KeyError, IndexError, OSError) as exc:
            problems.append(f"{tool}: {exc}")

    window = sum(w.get("seconds", 0) for w in (result or {}).get("windows") or []) or None
    if (folder / "ncu.csv").is_file():
        attempt("ncu", lambda: ncu_summary((folder / "ncu.csv").read_text(errors="replace")))
    kern = next((p for p in (folder / "nsys_cuda_gpu_kern_sum.csv", folder / "nsys_gpukernsum.csv") if p.is_file()), None)
    if kern is not None:
        trace = next((p for p in (folder / "nsys_cuda_gpu_trace.csv", folder / "nsys_gputrace.csv") if p.is_file()), None)
        attempt("nsys", lambda: nsys_summary(kern.read_text(), trace.read_text() if trace else None, window))
    elif folder.is_dir() and any(folder.glob("nsys.*rep")):
        problems.append("nsys: a report but no `nsys stats` CSV (see log.txt)")
    for p in sorted(folder.glob("nvprof-*.csv")) if folder.is_dir() else []:
        attempt(f"nvprof:{p.stem}", lambda p=p: nvprof_summary(p.read_text(errors="replace")))
    rocprof = next((p for p in [folder / "rocprof.stats.csv", *sorted(folder.glob("*kernel_stats.csv"))] if p.is_file()),
                   None) if folder.is_dir() else None
    if rocprof is not None:
        attempt("rocprof", lambda: rocprof_summary(rocprof.read_text()))
    trace = run_dir / "torch-trace.json"
    if trace.is_file():
        attempt("torch", lambda: torch_summary(json.loads(trace.read_text())))
    if problems:
        found["problems"] = problems
    return found or None

