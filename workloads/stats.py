"""The statistics behind every throughput dnnbench prints: one headline, items over seconds
summed over the timed windows (a ratio estimator), with a 95 % confidence interval, the window
median, and MLPerf-style trimmed figures over repeated runs.

Why a sum over sums: the mean of per-window rates weights a slow window as much as a fast one,
so it reads high whenever windows vary (a window twice as slow halves its rate but doubles its
time). Sum(items) / sum(seconds) is the rate of the whole timed period.

Python 3.7+, stdlib only: the harness uses it inside old images, the host for reports.
"""
import math
import statistics

STATISTIC = "sum_items/sum_seconds"
DESCRIPTION = ("items over seconds summed over the timed windows (times ranks, plus parallel copies), "
               "with a 95 % confidence interval and the window median")

# two-sided 95 % quantiles of Student's t, by degrees of freedom
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)
_Z975 = 1.959964


def fmt(value):
    """How every output rounds a throughput: 3 significant digits, at least one decimal, thousands
    separated (2,791.3; 15.7; 1.41; 0.233)."""
    if value is None:
        return "-"
    magnitude = int(math.floor(math.log10(abs(value)))) if value else 0
    digits = min(6, max(1, 2 - magnitude))
    return "{:,.{}f}".format(value, digits)


def t975(df):
    """Student's t 97.5 % quantile: a table to 30, then the Cornish-Fisher expansion (error < 1e-3)."""
    if df < 1:
        return None
    if df <= len(_T975):
        return _T975[int(df) - 1]
    z = _Z975
    return z + (z ** 3 + z) / (4.0 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96.0 * df ** 2)


def ratio(items, seconds):
    """Sum(items) / sum(seconds) of paired observations, its standard error (delta method, as for
    any ratio estimator: residuals x - R t) and degrees of freedom. se is None below 2 pairs."""
    pairs = [(float(x), float(t)) for x, t in zip(items, seconds) if t and t > 0]
    n = len(pairs)
    total_t = sum(t for _, t in pairs)
    if not n or total_t <= 0:
        return {"value": None, "se": None, "df": 0}
    value = sum(x for x, _ in pairs) / total_t
    if n < 2:
        return {"value": value, "se": None, "df": 0}
    mean_t = total_t / n
    s2 = sum((x - value * t) ** 2 for x, t in pairs) / (n - 1)
    return {"value": value, "se": math.sqrt(s2 / n) / mean_t, "df": n - 1}


MIN_WINDOWS = 3   # below this the t quantile (12.7 at 2 windows) makes any interval meaningless
TOO_FEW = "too few windows for an interval"


def interval(value, se, df, min_n=MIN_WINDOWS):
    """(low, high, half-width as % of value) of the 95 % CI; Nones when it cannot be known.

    A throughput is a positive ratio, so the interval is taken on the log scale (the delta
    method: se(log R) = se / R) and mapped back: it is never negative and is wider above the
    value than below, as the spread of a rate is. The half-width is half the interval's span.
    min_n: the fewest observations that make an interval (runs pooled as observations may ask
    for 2: the wider of their interval and the windows' is kept, so 12.7 is the point there)."""
    q = t975(df) if se is not None else None
    if value is None or q is None or value <= 0 or df + 1 < min_n:
        return None, None, None
    spread = math.exp(q * se / value)
    low, high = value / spread, value * spread
    return low, high, 100.0 * (high - low) / (2.0 * value)


def combine(parts):
    """The sum of independent ratio estimates (parallel copies): values add, variances add;
    the smallest df is kept (conservative)."""
    parts = [p for p in parts if p["value"] is not None]
    if not parts:
        return {"value": None, "se": None, "df": 0}
    ses = [p["se"] for p in parts]
    return {"value": sum(p["value"] for p in parts),
            "se": math.sqrt(sum(s * s for s in ses)) if None not in ses else None,
            "df": min(p["df"] for p in parts)}


def median(values):
    values = [float(v) for v in values]
    return statistics.median(values) if values else None


def trim(values):
    """MLPerf-style: with 5 or more values, drop the smallest and the largest (one each)."""
    values = sorted(values)
    return values[1:-1] if len(values) >= 5 else None


def headline(windows, scale=1):
    """The statistics of one stream of windows [{"items", "seconds"}], times `scale` (ranks):
    value (sum/sum), its 95 % CI, the window median and, for reference only, the old
    mean of per-window rates."""
    windows = [w for w in windows if w.get("seconds")]
    est = ratio([w["items"] for w in windows], [w["seconds"] for w in windows])
    rates = [w["items"] / w["seconds"] * scale for w in windows]
    value = est["value"] * scale if est["value"] is not None else None
    se = est["se"] * scale if est["se"] is not None else None
    low, high, pct = interval(value, se, est["df"])
    return {
        "value": value, "ci95_low": low, "ci95_high": high, "ci95_pct": pct, "se": se, "df": est["df"],
        "median": median(rates), "n": len(rates), "min": min(rates) if rates else None,
        "max": max(rates) if rates else None, "sd": statistics.stdev(rates) if len(rates) > 1 else (0.0 if rates else None),
        "mean_of_rates": statistics.mean(rates) if rates else None,
    }


KEPT = 0.05     # a window keeps at least this share of its seconds however long it waited for a CPU
WALL_ONLY = "wall time only: the windows record no wait for a CPU"


def _waited(w):
    x = w.get("run_queue_s")
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and 0 <= x <= w["seconds"]


def corrected(windows, scale=1):
    """The headline as if no other process had been runnable: items over (seconds minus the
    run's wait for a CPU, `run_queue_s`) summed over the windows, with its 95 % CI, and the
    contention share (the waits over the seconds). Value None, with why, when a window
    recorded no wait (a kernel without scheduler statistics, a result from before them)."""
    windows = [w for w in windows if w.get("seconds")]
    if not windows or not all(_waited(w) for w in windows):
        return {"value": None, "ci95_low": None, "ci95_high": None, "ci95_pct": None, "se": None, "df": 0,
                "contention": None, "why": WALL_ONLY if windows else "no timed window"}
    seconds = sum(w["seconds"] for w in windows)
    fixed = [{"items": w["items"], "seconds": max(w["seconds"] - w["run_queue_s"], KEPT * w["seconds"])}
             for w in windows]
    h = headline(fixed, scale)
    return {"value": h["value"], "ci95_low": h["ci95_low"], "ci95_high": h["ci95_high"], "ci95_pct": h["ci95_pct"],
            "se": h["se"], "df": h["df"], "contention": sum(w["run_queue_s"] for w in windows) / seconds,
            "why": None}


def ci_met(windows, pct):
    """Whether the 95 % CI half-width of the headline is within `pct` % of it."""
    h = headline(windows)
    return h["ci95_pct"] is not None and h["ci95_pct"] <= pct
