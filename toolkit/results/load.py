"""What the machine was doing while a run was timed, from its windows (workloads/windows.py
records each window's 1-minute load average, the run's own CPU seconds and the steal share),
and the words that explain a wide interval instead of printing it bare."""
from __future__ import annotations

import statistics

WIDE_PCT = 10.0      # a 95 % CI half-width (% of the figure) that calls for an explanation
LOAD_CHANGE = 3.0    # load averages this many times apart inside one run: said


def _numbers(windows: list, key: str) -> list[float]:
    return [float(w[key]) for w in windows if isinstance(w, dict) and isinstance(w.get(key), (int, float))
            and not isinstance(w.get(key), bool) and w[key] == w[key] and w[key] >= 0]


def of_windows(windows: list) -> dict:
    """{load1 (median), load_min, load_max, cpu_share (own CPU s / wall s), steal (mean share)}:
    each None where the windows do not record it (results from before it was recorded)."""
    loads = _numbers(windows, "load1")
    timed = [w for w in windows if isinstance(w, dict) and isinstance(w.get("cpu_s"), (int, float))
             and isinstance(w.get("seconds"), (int, float)) and w["seconds"] > 0]
    steal = _numbers(windows, "steal")
    return {"load1": statistics.median(loads) if loads else None,
            "load_min": min(loads) if loads else None, "load_max": max(loads) if loads else None,
            "cpu_share": (sum(w["cpu_s"] for w in timed) / sum(w["seconds"] for w in timed)) if timed else None,
            "steal": statistics.fmean(steal) if steal else None}


def of_result(data: dict) -> dict:
    return of_windows(data.get("windows") or [] if isinstance(data, dict) else [])


def change(loads: list[float]) -> float | None:
    """max/min of positive load averages (None with fewer than two)."""
    values = [x for x in loads if isinstance(x, (int, float)) and x > 0]
    return max(values) / min(values) if len(values) >= 2 else None


def why_wide(ci_pct: float | None, runs: int, windows: list) -> str | None:
    """Why a figure's interval is wide (or missing), in a few words; None when it is not."""
    if ci_pct is not None and ci_pct < WIDE_PCT:
        return None
    reasons = []
    if len([w for w in windows if isinstance(w, dict)]) < 3 and runs < 2:
        reasons.append("too few windows")
    elif runs < 3:
        reasons.append(f"too few runs ({runs})")
    factor = change(_numbers(windows, "load1"))
    if factor is not None and factor >= LOAD_CHANGE:
        reasons.append(f"load changed {factor:.0f}x during the run{'s' if runs > 1 else ''}")
    steal = _numbers(windows, "steal")
    if steal and statistics.fmean(steal) >= 0.05:
        reasons.append(f"{statistics.fmean(steal):.0%} of the CPU stolen by the hypervisor")
    return "; ".join(reasons) or None
