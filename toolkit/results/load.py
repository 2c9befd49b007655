"""What the machine was doing while a run was timed, from its windows (workloads/windows.py
records each window's 1-minute load average, the run's own CPU seconds and the steal share),
and the one explanation of a wide interval (report, compare-images, reproduce) instead of
printing it bare."""
from __future__ import annotations

import statistics

WIDE_PCT = 10.0      # a 95 % CI half-width (% of the figure) that calls for an explanation
LOAD_CHANGE = 3.0    # load averages this many times apart inside one run or job: said
APART = 3.0          # two sides' load this many times apart: a verdict between them is inconclusive
FLOOR = 1.0          # a load average below one runnable process is a quiet machine: counted as 1


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


def of_runs(runs: list[dict]) -> list[float]:
    """Each run's median 1-minute load average (runs that recorded none left out)."""
    return [x for x in (of_result(r).get("load1") for r in runs) if x is not None]


def change(loads: list[float]) -> float | None:
    """max/min of positive load averages (None with fewer than two)."""
    values = [x for x in loads if isinstance(x, (int, float)) and x > 0]
    return max(values) / min(values) if len(values) >= 2 else None


def apart(side_a: list, side_b: list) -> float | None:
    """How many times the two sides' load differed: the ratio of their median load averages,
    each at least FLOOR; None when a side recorded none (results from before it was recorded)."""
    a = [float(x) for x in side_a if isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0]
    b = [float(x) for x in side_b if isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0]
    if not a or not b:
        return None
    la, lb = max(FLOOR, statistics.median(a)), max(FLOOR, statistics.median(b))
    return max(la, lb) / min(la, lb)


def why_wide(ci_pct: float | None, runs: int, windows: list, sd_pct: float | None = None) -> str | None:
    """Why a figure's 95 % CI is wider than +-WIDE_PCT % (or missing), in a few words, or None
    when it is not: too few windows or runs to estimate the spread, runs that disagree, the load
    that changed, the hypervisor's steal. The one explanation every command prints."""
    if ci_pct is not None and ci_pct <= WIDE_PCT or runs < 1:
        return None
    reasons = []
    count = len([w for w in windows if isinstance(w, dict)])
    if count < 3 and runs < 2:
        reasons.append(f"too few windows ({count}): add --repeat or --until-ci")
    elif runs < 3:
        reasons.append(f"too few runs ({runs} run{'s' if runs != 1 else ''}, {count} timed windows) to estimate "
                       f"the spread: add --repeat or --until-ci")
    elif sd_pct is not None and sd_pct > WIDE_PCT:
        reasons.append(f"the runs disagree (sd {sd_pct:.0f} % over {runs} runs)")
    factor = change(_numbers(windows, "load1"))
    if factor is not None and factor >= LOAD_CHANGE:
        reasons.append(f"load changed {factor:.0f}x during the run{'s' if runs > 1 else ''}")
    steal = _numbers(windows, "steal")
    if steal and statistics.fmean(steal) >= 0.05:
        reasons.append(f"{statistics.fmean(steal):.0%} of the CPU stolen by the hypervisor")
    if not reasons:
        reasons.append("the windows disagree: a quieter machine or --until-ci narrows it")
    return "; ".join(reasons)


def explain(headline: dict, windows: list) -> str | None:
    """why_wide of a headline (numbers.job_headline or run_headline) over its windows."""
    return why_wide(headline.get("ci95_pct"), int(headline.get("runs") or 0), windows, headline.get("sd_pct"))
