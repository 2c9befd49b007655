"""Nsight Systems: the top kernels of `nsys stats` (cuda_gpu_kern_sum, or the old gpukernsum)
and the share of the timed window the GPU was busy (from the GPU trace)."""
from __future__ import annotations

from collections import defaultdict

from .common import TOP, NoProfileData, Profiler, RunFolder, kernels_table, number, read_text, table

def nsys_summary(kern_sum: str, trace: str | None = None, window_s: float | None = None) -> dict:
    """Top kernels from `cuda_gpu_kern_sum` (or the old `gpukernsum`), and the GPU-busy share:
    the union of kernel intervals from the trace over the timed window (per device, averaged)."""
    rows = table(kern_sum, "time%")
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
        out.update(_busy(table(trace, "startns"), window_s))
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


def read(f: RunFolder) -> None:
    folder = f.folder
    kern = next((p for p in (folder / "nsys_cuda_gpu_kern_sum.csv", folder / "nsys_gpukernsum.csv") if p.is_file()), None)
    if kern is not None:
        trace = next((p for p in (folder / "nsys_cuda_gpu_trace.csv", folder / "nsys_gputrace.csv") if p.is_file()), None)
        f.attempt("nsys", lambda: nsys_summary(read_text(kern), read_text(trace) if trace else None, f.window_s))
    elif f.launch.get("nsys_problem"):
        f.problems.append(f"nsys: {f.launch['nsys_problem']}")
    elif folder.is_dir() and any(folder.glob("nsys.*rep")):
        f.problems.append("nsys: a report but no `nsys stats` CSV (see log.txt)")


def show(key: str, nsys: dict, top: int) -> None:
    from dnnbench.console import out
    busy = nsys.get("busy_pct")
    note = f"; GPU busy {busy:.1f}% of the {nsys.get('busy_of')}" if busy is not None else ""
    out.print(kernels_table(f"nsys: top kernels of {nsys['kernel_names']}{note}", nsys["kernels"], top))


PROFILER = Profiler("nsys", vendor="nvidia", window="cuda", wraps=True, read=read, show=show)
