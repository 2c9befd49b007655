"""Lasting changes in a job's series of results (one point per result, in release or time order).

Method: binary segmentation. Each segment (at first the whole series) is cut where `ruptures`
puts its best single split (L2 cost on log throughput: the split that most reduces the squared
error of two means, each side at least MIN_SIZE points, so one outlier is never a segment of its
own); the cut is kept only when a permutation test says it is real, as e-divisive means does in
Apache Otava: the share of shufflings of the segment whose best split gains as much (so choosing
the best split is part of the null, not a free lunch); then both halves are searched again. The
size of a change comes with a 95 % CI from Welch's t, each point's variance at least its own CI's
(a noisy run weighs less). Why ruptures and not Otava: Otava pins numpy to one minor release and
pulls in BigQuery, Slack and pg8000 clients; ruptures needs numpy and scipy only, and the
significance step that makes e-divisive robust is the few lines below.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

MIN_SIZE = 3          # a change lasts at least this many points on each side
ALPHA = 0.05
PERMUTATIONS = 299
# A segment of a few points has too few distinct orderings for a permutation test to ever reach
# ALPHA (6 points split 3 + 3: 20, so p >= 0.1 whatever the step); there Welch's t at the split,
# each point's variance at least its own CI's, Bonferroni-corrected for the splits looked at.
ARRANGEMENTS = 200
Z95 = 1.959964


@dataclass
class Change:
    index: int                     # first point after the change
    ratio: float                   # after / before (medians of the log means)
    low: float                     # 95 % CI of the ratio
    high: float
    p: float
    before: dict = field(default_factory=dict)   # the last point before, the first after
    after: dict = field(default_factory=dict)
    facts: list[str] = field(default_factory=list)

    @property
    def pct(self) -> float:
        return (self.ratio - 1) * 100


def _t(y, var, k: int) -> tuple[float, float, float]:
    """Welch's t between y[:k] and y[k:] (log values; var: each point's variance floor), with
    the difference and its standard error."""
    import numpy as np
    a, b = y[:k], y[k:]
    va = max(float(np.var(a, ddof=1)) if len(a) > 1 else 0.0, float(np.mean(var[:k])))
    vb = max(float(np.var(b, ddof=1)) if len(b) > 1 else 0.0, float(np.mean(var[k:])))
    se = math.sqrt(va / len(a) + vb / len(b)) or 1e-12
    d = float(np.mean(b) - np.mean(a))
    return d / se, d, se


def _gain(ys):
    """For each row of ys (orderings of a segment), the most any one split reduces the squared
    error of the segment's mean (the L2 cost binary segmentation minimises), from running sums."""
    import numpy as np
    m = ys.shape[1]
    k = np.arange(MIN_SIZE, m - MIN_SIZE + 1)
    c = np.cumsum(ys - ys.mean(axis=1, keepdims=True), axis=1)[:, k - 1]
    return np.max(c * c * m / (k * (m - k)), axis=1)


def _p(y, rng) -> float:
    """Share of shufflings of the segment whose best split gains at least as much: the split's
    significance with its search accounted for (e-divisive's permutation test)."""
    import numpy as np
    order = np.argsort(rng.random((PERMUTATIONS, len(y))), axis=1)
    observed = float(_gain(y.reshape(1, -1))[0])
    hits = int(np.sum(_gain(y[order]) >= observed * (1 - 1e-9)))
    return (hits + 1) / (PERMUTATIONS + 1)


def _noise(y) -> float:
    """The per-point noise, robust to the steps themselves: the median absolute difference of
    neighbours, scaled to a standard deviation."""
    import numpy as np
    d = np.abs(np.diff(y))
    return float(np.median(d) / 0.6745 / math.sqrt(2)) if len(d) else 0.0


def detect(values: list[float], ci_pct: list[float | None] | None = None, *, alpha: float = ALPHA,
           seed: int = 0) -> list[tuple[int, float, float, float, float]]:
    """(index, ratio, low, high, p) for each lasting change in `values` (throughputs in order),
    `ci_pct` each point's 95 % CI half-width in % (None where unknown)."""
    import numpy as np
    y = np.log(np.asarray(values, dtype=float))
    n = len(y)
    if n < 2 * MIN_SIZE:
        return []
    ci = [c if isinstance(c, (int, float)) and math.isfinite(c) and c >= 0 else 0.0 for c in (ci_pct or [0.0] * n)]
    var = np.asarray([(c / 100 / Z95) ** 2 for c in ci])
    rng = np.random.default_rng(seed)
    found: list[tuple[int, float, float, float, float]] = []
    segments = [(0, n)]
    while segments:   # binary segmentation: split a segment only when the split is real
        lo, hi = segments.pop()
        if hi - lo < 2 * MIN_SIZE:
            continue
        seg, sv = y[lo:hi], var[lo:hi]
        k = _split(seg)
        t, d, se = _t(seg, sv, k)
        p = _p(seg, rng) if math.comb(len(seg), k) >= ARRANGEMENTS else _welch_p(t, len(seg))
        if p >= alpha:
            continue
        half = _t_quantile(len(seg) - 2) * se
        found.append((lo + k, math.exp(d), math.exp(d - half), math.exp(d + half), p))
        segments += [(lo, lo + k), (lo + k, hi)]
    return sorted(found)


def _split(seg) -> int:
    """Where the segment is best cut in two (ruptures' binary segmentation, L2 cost: the split
    that most reduces the squared error of two means)."""
    import ruptures
    return int(ruptures.Binseg(model="l2", min_size=MIN_SIZE, jump=1).fit(seg.reshape(-1, 1)).predict(n_bkps=1)[0])


def _welch_p(t: float, m: int) -> float:
    from scipy import stats
    return min(1.0, 2 * float(stats.t.sf(abs(t), max(m - 2, 1))) * (m - 2 * MIN_SIZE + 1))


def _t_quantile(df: int) -> float:
    from scipy import stats
    return float(stats.t.ppf(0.975, max(df, 1)))


FACTS = ("image", "pytorch", "cuda", "cudnn", "nccl", "driver", "base")


def changed_facts(before: dict, after: dict) -> list[str]:
    return [f"{k}: {before.get(k) or '-'} -> {after.get(k) or '-'}" for k in FACTS if before.get(k) != after.get(k)]


def changes(points: list[dict], **kw) -> list[Change]:
    """Changes in a series of store rows (each with throughput and ci_low/ci_high)."""
    usable = [p for p in points if isinstance(p.get("throughput"), (int, float)) and p["throughput"] > 0]
    values = [p["throughput"] for p in usable]
    ci = [((p["ci_high"] - p["ci_low"]) / 2 / p["throughput"] * 100)
          if p.get("ci_low") is not None and p.get("ci_high") is not None else None for p in usable]
    out = []
    for k, ratio, low, high, pv in detect(values, ci, **kw):
        before, after = usable[k - 1], usable[k]
        out.append(Change(k, ratio, low, high, pv, before, after, changed_facts(before, after)))
    return out


def torchbench_rule(values: list[float], threshold: float = 0.07) -> list[int]:
    """TorchBench's nightly rule, for comparison: a point more than `threshold` away from the
    one before it."""
    return [i for i in range(1, len(values)) if abs(values[i] / values[i - 1] - 1) > threshold]
