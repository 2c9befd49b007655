"""torch.profiler: the workload traces its own timed window (--profile-window torch) into
torch-trace.json(.gz); top GPU kernels, or CPU ops by self time on a CPU run."""
from __future__ import annotations

from collections import defaultdict

from .common import TOP, Profiler, ProfileFormatError, RunFolder, kernels_table, read_trace

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


def read(f: RunFolder) -> None:
    trace = next((p for p in (f.run_dir / "torch-trace.json", f.run_dir / "torch-trace.json.gz") if p.is_file()), None)
    if trace is not None:
        f.attempt("torch", lambda: torch_summary(read_trace(trace)))


def show(key: str, torch: dict, top: int) -> None:
    from dnnbench.console import out
    out.print(kernels_table(f"torch.profiler: top {torch['of']} of {torch['kernel_names']}", torch["kernels"], top))


PROFILER = Profiler("torch", vendor=None, window="torch", wraps=False, read=read, show=show)
