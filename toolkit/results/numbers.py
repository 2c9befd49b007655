"""The headline of a run and of a job (its repeated runs), recomputed from raw windows: the one
figure every output prints (run summary, report in every format, compare, suite table, plots).

One run: sum(items) / sum(seconds) over its timed windows (times ranks), plus its parallel
copies'; the 95 % CI from the spread of its windows. Several runs of a job: the same sum over
all their windows; the CI the wider of the one from the spread between runs (each run one
observation of a ratio estimator: runs often vary more than windows do) and the one from all
the windows pooled. The window median sits beside it; with 5 or
more runs, MLPerf-style trimmed figures drop the fastest and the slowest run.
"""
from __future__ import annotations

import statistics

from dnnbench.workloads import stats

STATISTIC = stats.STATISTIC
DESCRIPTION = stats.DESCRIPTION


fmt = stats.fmt    # how every output rounds a throughput


def streams(data: dict) -> list[tuple[int, list[dict]]]:
    """(ranks, windows) of a run and of each of its parallel copies."""
    out = [(int(data.get("world_size") or 1), [w for w in data.get("windows") or [] if w.get("seconds")])]
    for copy in data.get("copies") or []:
        out += streams(copy)
    return out


def essentials(data: dict) -> dict:
    """What the statistics read from a result (a report keeps only this of each run)."""
    training = data.get("training")
    kept = None
    if isinstance(training, dict):   # what the report's time-to-target and accuracy curve read
        kept = {k: training.get(k) for k in ("reached", "time_to_target_s", "best", "target", "metric")}
        metric = training.get("metric") or "top1"
        kept["curve"] = [(e.get("on_clock_s"), (e.get("eval") or {}).get(metric))
                         for e in training.get("epochs") or [] if isinstance(e, dict)]
    return {"world_size": data.get("world_size"), "windows": data.get("windows") or [],
            "host": (data.get("system") or {}).get("host") if isinstance(data.get("system"), dict) else None,
            "copies": [essentials(c) for c in data.get("copies") or []],
            **({"training": kept} if kept is not None else {})}


def _finish(est: dict, median, min_n: int = stats.MIN_WINDOWS, **more) -> dict:
    low, high, pct = stats.interval(est["value"], est["se"], est["df"], min_n)
    return {"value": est["value"], "ci95_low": low, "ci95_high": high, "ci95_pct": pct, "se": est["se"],
            "df": est["df"], "median": median, **more}


def corrected(parts: list[tuple[int, list[dict]]]) -> dict:
    """The contention-corrected figure of (ranks, windows) streams (stats.corrected, copies
    added), with its CI and the contention share of all their windows: `corrected`,
    `corrected_ci95_low/high/pct`, `contention` (Nones where a window recorded no wait)."""
    blocks = [stats.corrected(windows, ranks) for ranks, windows in parts]
    if not blocks or any(b["value"] is None for b in blocks):
        return {"corrected": None, "corrected_ci95_low": None, "corrected_ci95_high": None,
                "corrected_ci95_pct": None, "contention": None}
    est = stats.combine(blocks)
    low, high, pct = stats.interval(est["value"], est["se"], est["df"])
    seconds = sum(w["seconds"] for _, windows in parts for w in windows)
    waited = sum(w["run_queue_s"] for _, windows in parts for w in windows)
    return {"corrected": est["value"], "corrected_ci95_low": low, "corrected_ci95_high": high,
            "corrected_ci95_pct": pct, "contention": waited / seconds if seconds else None}


def run_headline(data: dict) -> dict:
    """The figure of one run, with its CI over windows and its window median, and beside it the
    contention-corrected figure (`corrected`)."""
    parts = [stats.headline(windows, ranks) for ranks, windows in streams(data)]
    medians = [p["median"] for p in parts]
    return _finish(stats.combine(parts), None if None in medians else sum(medians),
                   windows=parts[0]["n"], runs=1, **corrected(streams(data)))


def _pooled(runs: list[dict]) -> dict:
    """Sum over sums across runs, per stream (copy). Its CI is the wider of two: from the spread
    of the runs (each run one observation; run-to-run noise) and from the spread of all the
    windows (with few runs the first can come out narrow by luck)."""
    if len(runs) == 1:
        return run_headline(runs[0])
    per_run = [streams(r) for r in runs]
    width = min(len(s) for s in per_run)
    # the corrected figure of the runs' windows pooled, stream by stream
    more = corrected([(per_run[0][k][0], [w for one in per_run for w in one[k][1]]) for k in range(width)])
    by_runs, by_windows, medians = [], [], []
    for k in range(width):
        totals = [(sum(w["items"] for w in s[k][1]) * s[k][0], sum(w["seconds"] for w in s[k][1])) for s in per_run]
        by_runs.append(stats.ratio([x for x, _ in totals], [t for _, t in totals]))
        pooled = [(w["items"] * s[k][0], w["seconds"]) for s in per_run for w in s[k][1]]
        by_windows.append(stats.ratio([x for x, _ in pooled], [t for _, t in pooled]))
        medians.append(stats.median([x / t for x, t in pooled]))
    by_runs, by_windows = stats.combine(by_runs), stats.combine(by_windows)
    if by_runs["se"] is None or by_windows["se"] is None:
        est = by_runs
    else:   # the wider CI; on a tie, the windows'
        est = max((by_windows, by_runs), key=lambda e: stats.interval(e["value"], e["se"], e["df"], 2)[2] or 0)
    return _finish(est, None if None in medians else sum(medians), 2 if est is by_runs else stats.MIN_WINDOWS,
                   windows=sum(len(s[0][1]) for s in per_run), runs=len(runs), **more)


def job_headline(runs: list[dict]) -> dict:
    """The figure of a job: its ok runs pooled; sd over runs; trimmed figures from 5 runs on."""
    valued = [(run_headline(r)["value"], r) for r in runs]
    valued = [(v, r) for v, r in valued if v is not None]
    if not valued:
        return {"value": None, "ci95_low": None, "ci95_high": None, "ci95_pct": None, "se": None, "df": 0,
                "median": None, "windows": 0, "runs": 0, "sd": None, "sd_pct": None, "trimmed": None,
                "trimmed_n": None, **corrected([])}
    values, runs = [v for v, _ in valued], [r for _, r in valued]
    out = _pooled(runs)
    out["sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
    out["sd_pct"] = 100 * out["sd"] / out["value"] if out["value"] else None
    ranked = [r for _, r in sorted(valued, key=lambda pair: pair[0])]
    kept = ranked[1:-1] if stats.trim(values) is not None else None
    out["trimmed"] = _pooled(kept)["value"] if kept else None
    out["trimmed_n"] = len(kept) if kept else None
    return out
