"""A result against the published references: the ones that measured the same thing (same
dnnbench workload, unit, precision, GPU model through the alias table, GPU count, and global
batch where the source states one), where the result stands against each, and otherwise the
nearest ones with what differs. Nothing unlike is ever placed against the result."""
from __future__ import annotations

import math
from dataclasses import dataclass

from dnnbench.refs import reference as ref
from dnnbench.refs import tables

NEAREST = 5


@dataclass
class Mine:
    """What a result says about itself, as the references are compared on it."""
    workload: str | None
    unit: str | None
    precision: str | None
    gpu: str | None
    gpu_count: int | None
    batch: int | None        # the global batch: per-GPU batch x ranks
    value: float


def mine(data: dict, row: dict) -> Mine:
    """A result file's facts (data) and its store row (facts.row)."""
    found = data.get("options")
    options: dict = found if isinstance(found, dict) else {}
    per_gpu = options.get("batch_size")
    ranks = data.get("world_size") if isinstance(data.get("world_size"), int) else None
    ranks = ranks or row.get("gpu_count") or 1
    batch = per_gpu * ranks if isinstance(per_gpu, int) and not isinstance(per_gpu, bool) else None
    return Mine(workload=row.get("workload"), unit=row.get("unit"), precision=tables.precision(options.get("amp")),
                gpu=row.get("gpu"), gpu_count=row.get("gpu_count") or None, batch=batch, value=row["throughput"])


def differences(m: Mine, r: dict) -> list[str]:
    """What a reference measured otherwise than the result, each as `theirs vs mine`; [] when
    it is comparable."""
    out = []
    if r.get("workload") != m.workload:
        out.append(f"{r.get('source_workload')} vs {m.workload}")
    if ref.kind_of(r.get("unit")) != ref.kind_of(m.unit) or r.get("unit") != m.unit:
        out.append(f"{r.get('unit') or 'no unit'} vs {m.unit or 'no unit'}")
    if r.get("precision") is None:
        out.append("precision not stated")
    elif r["precision"] != m.precision:
        out.append(f"{r['precision']} vs {m.precision or 'unknown precision'}")
    theirs, ours = tables.gpu_model(r.get("gpu")), tables.gpu_model(m.gpu)
    if not m.gpu_count:          # a CPU run: no GPU to look up, no GPU count to say
        out.append(f"{r.get('gpu')} vs no GPU" + (f" ({m.gpu})" if m.gpu else ""))
    elif theirs is None or ours is None or theirs != ours:
        unknown = [str(n) for n, model in ((m.gpu, ours), (r.get("gpu"), theirs)) if model is None]
        out.append(f"{r.get('gpu')} vs {m.gpu}" + (f" (not in the GPU alias table: {' nor '.join(unknown)})"
                                                   if unknown else ""))
    if r.get("gpu_count") is None:
        out.append("GPU count not stated")
    elif r["gpu_count"] != m.gpu_count:
        out.append(f"{r['gpu_count']} vs {m.gpu_count or 'no'} GPUs")
    if r.get("batch_size") is not None and r["batch_size"] != m.batch:
        out.append(f"batch {r['batch_size']} vs {m.batch if m.batch is not None else 'unknown'}")
    return out


def standing(m: Mine, r: dict) -> dict:
    """Where the result stands against one comparable reference: percent above (+) or below
    (-) its value, and against its spread when it has one."""
    pct = (m.value / r["value"] - 1) * 100 if r["value"] else None
    out = {"vs_reference_pct": pct}
    lo, hi = r.get("spread_low"), r.get("spread_high")
    if lo is not None and hi is not None:
        out["spread"] = [lo, hi]
        out["in_spread"] = "below" if m.value < lo else "above" if m.value > hi else "within"
    return out


def compare(m: Mine, references: list[dict]) -> dict:
    """{"matched": [reference + standing], "nearest": [reference + differences]}: nearest only
    when nothing matched, the references of the same workload with the fewest differences."""
    matched, others = [], []
    for r in references:
        found = differences(m, r)
        if found:
            others.append((len(found), r, found))
        else:
            matched.append(dict(_shown(r), **standing(m, r)))
    nearest = []
    if not matched:
        same = [o for o in others if o[1].get("workload") == m.workload and m.workload is not None]
        nearest = [dict(_shown(r), differs=found)
                   for _, r, found in sorted(same, key=lambda o: (o[0], _distance(m, o[1])))[:NEAREST]]
    return {"matched": matched, "nearest": nearest}


def _distance(m: Mine, r: dict) -> float:
    """Among references differing as much: the closest batch and GPU count first (by ratio)."""
    far = 0.0
    for theirs, ours in ((r.get("batch_size"), m.batch), (r.get("gpu_count"), m.gpu_count)):
        if theirs and ours:
            far += abs(math.log(theirs / ours))
    return far


def _shown(r: dict) -> dict:
    return {k: r.get(k) for k in ref.FIELDS}
