"""Nsight Compute: pipe utilization weighted by cycles (TBD's coreutil, fixed) and the kernels
that took longest, from `ncu --csv --page raw` (or the details page)."""
from __future__ import annotations

from collections import defaultdict

from dnnbench.workloads.profile import PIPE_FIELDS

from .common import TOP, Profiler, ProfileFormatError, RunFolder, csv_from, kernels_table, number, read_text, to_cycles, to_ns


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
    rows = csv_from(text.splitlines(), lambda line: line.startswith('"ID"') and '"Kernel Name"' in line)
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
        k["cycles"] = _weight(k["metrics"], CYCLES, to_cycles, "cycle")
        k["duration_ns"] = _weight(k["metrics"], DURATION, to_ns, "nsecond")
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



PIPES = {"fma": "FMA (FP32)", "fp16": "FP16", "tensor": "Tensor", "sfu": "SFU (xu)",
         "tensor_active": "Tensor pipe active (duration-weighted)"}


def read(f: RunFolder) -> None:
    if (f.folder / "ncu.csv").is_file():
        f.attempt("ncu", lambda: {**ncu_summary(read_text(f.folder / "ncu.csv")), **({"launch": f.launch} if f.launch else {})})


def show(key: str, ncu: dict, top: int) -> None:
    from rich.table import Table

    from dnnbench.console import escape, number as num, out
    if ncu["utilization_pct"]:
        t = Table(title=escape(f"ncu: pipe utilization, % of peak, {ncu['launches']} launches, "
                               f"weighted by {ncu['weighted_by']}"))
        t.add_column("pipe")
        t.add_column("utilization %", justify="right")
        for field, value in ncu["utilization_pct"].items():
            suffix = ncu["metrics"][field].rstrip(")").rsplit("_", 1)[-1]         # elapsed | active
            t.add_row(escape(f"{PIPES.get(field, field)}, {suffix}"), num(value, 2))
        out.print(t)
    else:
        out.print(f"ncu: {ncu['launches']} kernel launches, {ncu['weighted_by']}", markup=False)
    launch = ncu.get("launch") or {}
    if launch:
        out.print(f"ncu: at most {launch.get('launch_count')} kernels profiled (--launch-count), clock control "
                  f"{launch.get('clock_control')}" + (f"; metrics ncu lacks here, left out: "
                                                       f"{', '.join(launch['dropped_metrics'])}"
                                                       if launch.get("dropped_metrics") else ""), markup=False)
    out.print(kernels_table(f"ncu: kernels by {ncu.get('ranked_by', 'duration')}", ncu["kernels"], top))


PROFILER = Profiler("ncu", vendor="nvidia", window="cuda", wraps=True, read=read, show=show)
