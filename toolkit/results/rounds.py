"""The one verdict rule: right or inconclusive, never confidently wrong on a shared machine.

The unit of evidence is a round: every side of a comparison measured once, the order reversed
each round (A B, B A, ...), so a load that grows or fades weighs on both sides alike. A round
gives one paired log-ratio (log B - log A); windows only make each side's figure within a round
(windows that follow each other share the load of their moment, so they are not independent
samples, and an interval over them is far too narrow).

The rule: Student's t interval of the mean log-ratio over the rounds, looked at after every
round from FIRST_LOOK rounds on, up to `max_rounds`. The confidence is split over the planned
looks (Bonferroni: each look at 1 - (1 - CONFIDENCE) / looks), so the chance that any look's
interval misses the true ratio is at most 1 - CONFIDENCE, extra looks included. A verdict is
wrong only when an interval misses the truth (faster needs the whole interval above 1 +
tolerance, slower below 1 - tolerance, same inside the band): P(wrong verdict) <= 1 - CONFIDENCE
= 1 % per comparison, when the rounds' log-ratios are independent draws around the true one
(a load that drifts makes neighbouring rounds alike: benchmarks/verdict_errors.py measures the
rate under steps, ramps, bursts and two hogs; BENCHMARKS.md has the figures).

The rounds stop as soon as the interval clears the band (faster, slower) or lies inside it
(same); at `max_rounds` it is "inconclusive", with what would decide it.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import statistics

CONFIDENCE = 0.99   # all looks together: a wrong verdict at most 1 % of the time
FIRST_LOOK = 3      # rounds before the first look (2 give a t quantile in the hundreds)
MAX_ROUNDS = 8      # the default --rounds: looks at 3, 4, ... 8 rounds
EDGE = 1e-9         # rounding: a ratio computed on the tolerance's edge is not beyond it
LOAD_CHANGE = 3.0   # a load that moved by this factor between rounds is said with the verdict
CONTENTION = 0.10   # a run that waited for a CPU this share of its timed windows: judged on corrected time


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """Student's t quantile (0.5 < p < 1), by bisection on the CDF: exact to 1e-9."""
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


def looks(max_rounds: int, first: int = FIRST_LOOK) -> list[int]:
    """The rounds after which the rule looks: from `first` (or max_rounds, when fewer) on."""
    start = min(max(2, first), max_rounds)
    return list(range(start, max_rounds + 1)) if max_rounds >= 2 else []


@dataclasses.dataclass
class Judgement:
    """What the rounds say: verdict, the geometric-mean ratio and its interval (Nones below two
    rounds), how many rounds, whether to stop, and a line on why when inconclusive."""
    verdict: str            # faster, slower, same (compare); good, bad (a bisect midpoint); inconclusive
    ratio: float | None
    low: float | None
    high: float | None
    rounds: int
    done: bool
    why: str = ""
    alternated: bool = True     # False: the sides were measured apart (a recorded run, a baseline)
    basis: str = ""             # the note of `basis` when the corrected figures were judged

    def pct(self) -> str:
        """'-12.3 % (-15.0 .. -9.4)': the ratio as a change with its interval."""
        if self.ratio is None:
            return "-"
        span = "" if self.low is None or self.high is None else \
            f" ({(self.low - 1) * 100:+.1f} .. {(self.high - 1) * 100:+.1f} %)"
        return f"{(self.ratio - 1) * 100:+.1f} %{span}"


def interval(logs: list[float], max_rounds: int, confidence: float = CONFIDENCE,
             first: int = FIRST_LOOK) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high) of the log-ratios at this look; low/high None before the first look."""
    n = len(logs)
    if not n:
        return None, None, None
    mean = statistics.fmean(logs)
    planned = looks(max(max_rounds, n), first)
    if n not in planned or n < 2:
        return mean, None, None
    alpha = (1.0 - confidence) / len(planned)
    half = t_quantile(1.0 - alpha / 2.0, n - 1) * statistics.stdev(logs) / math.sqrt(n)
    return mean, mean - half, mean + half


def basis(headlines: list) -> tuple[str, str]:
    """Which figure of the runs (numbers.run_headline's) every verdict between them judges, and
    the line that says so: the wall-clock `value` while every run was quiet; the contention-
    corrected figure (`corrected`: as if no other process had been runnable) once a run waited
    for a CPU CONTENTION of its timed windows or more and every run has one, the same basis for
    all sides; wall time, said, when a busy run has no corrected figure."""
    heads = [h for h in headlines if isinstance(h, dict)]
    shares = [h["contention"] for h in heads if isinstance(h.get("contention"), (int, float))]
    busiest = max(shares) if shares else None
    if busiest is None or busiest < CONTENTION:
        return "value", ""
    if any(not h.get("corrected") for h in heads):
        return "value", (f"judged on wall time: a run waited for a CPU {busiest * 100:.0f} % of its windows, "
                         f"but not every run recorded its wait")
    return "corrected", f"judged on contention-corrected time: {busiest * 100:.0f} % of the windows waited for a CPU"


def on_basis(j: Judgement, note: str) -> Judgement:
    """The judgement with the basis note said first in its why."""
    if note:
        j.basis = note
        j.why = f"{note}; {j.why}" if j.why else note
    return j


def _load_note(loads: list[float] | None) -> str:
    """'load changed 4.2x during the rounds' when the rounds' loads spread by LOAD_CHANGE or more."""
    values = [x for x in loads or [] if isinstance(x, (int, float)) and x > 0]
    if len(values) < 2 or max(values) / min(values) < LOAD_CHANGE:
        return ""
    return f"load changed {max(values) / min(values):.1f}x during the rounds"


def _undecided(logs: list[float], mean: float, low: float | None, high: float | None, edges: list[float],
               max_rounds: int, confidence: float) -> str:
    """What would decide it: roughly how many rounds at this spread, or why none would."""
    n = len(logs)
    if n < 2:
        return f"{n} round: a round alternates both sides once; {FIRST_LOOK} or more (--rounds) decide"
    if n < min(FIRST_LOOK, max_rounds) or low is None:
        return f"{n} rounds: the first look is after {FIRST_LOOK} (--rounds {max(FIRST_LOOK, max_rounds)})"
    gap = min(abs(mean - e) for e in edges)
    sd = statistics.stdev(logs)
    if gap < 1e-9 or sd == 0:
        return "the ratio sits on the tolerance's edge: no number of rounds decides it at this --tolerance"
    need = n
    while need < 1000:
        need += 1
        q = t_quantile(1.0 - (1.0 - confidence) / (2.0 * len(looks(need))), need - 1)
        if q * sd / math.sqrt(need) < gap:
            break
    spread = (math.exp(sd) - 1) * 100
    if need >= 1000:
        return f"the rounds disagree by {spread:.0f} % (sd): a quieter machine, not more rounds, would decide it"
    return f"the rounds disagree by {spread:.0f} % (sd): about {need} rounds (--rounds {need}) would decide it"


def _band(low: float | None, high: float | None, tolerance: float) -> str:
    """faster/slower when the log interval clears 1 +- tolerance, same inside it, else inconclusive."""
    up, down = math.log1p(tolerance), math.log1p(-tolerance)
    if low is None or high is None:
        return "inconclusive"
    if low > up + EDGE:     # EDGE: a ratio computed on the band's edge is not beyond it
        return "faster"
    if high < down - EDGE:
        return "slower"
    return "same" if low >= down and high <= up else "inconclusive"


def judge(logs: list[float], tolerance: float, max_rounds: int = MAX_ROUNDS, *, loads: list[float] | None = None,
          confidence: float = CONFIDENCE, first: int = FIRST_LOOK, basis: str = "") -> Judgement:
    """B against A from the rounds' log(B/A): faster, slower, same (inside 1 +- tolerance) or
    inconclusive; done when decided or at max_rounds. `basis`: the note of `basis()` when the
    figures are the corrected ones."""
    n = len(logs)
    mean, low, high = interval(logs, max_rounds, confidence, first)
    if mean is None:
        return Judgement("inconclusive", None, None, None, 0, max_rounds <= 0, "no rounds")
    up, down = math.log1p(tolerance), math.log1p(-tolerance)
    verdict = _band(low, high, tolerance)
    done = verdict != "inconclusive" or n >= max_rounds
    why = ""
    if verdict == "inconclusive":
        why = _undecided(logs, mean, low, high, [up, down], max_rounds, confidence)
    note = _load_note(loads)
    if note:
        why = f"{why}; {note}" if why else note
    return on_basis(Judgement(verdict, math.exp(mean), None if low is None else math.exp(low),
                              None if high is None else math.exp(high), n, done, why), basis)


def side(logs: list[float], max_rounds: int = MAX_ROUNDS, *, loads: list[float] | None = None,
         confidence: float = CONFIDENCE, first: int = FIRST_LOOK, basis: str = "") -> Judgement:
    """A bisect midpoint from the rounds' log(mid / geometric middle of the ends): good when the
    interval lies wholly above 0 (mid nearer the good end), bad when wholly below, else
    inconclusive. Its ratio is mid over the ends' geometric middle."""
    n = len(logs)
    mean, low, high = interval(logs, max_rounds, confidence, first)
    if mean is None:
        return Judgement("inconclusive", None, None, None, 0, max_rounds <= 0, "no rounds")
    verdict = "inconclusive"
    if low is not None and low > 0:
        verdict = "good"
    elif high is not None and high < 0:
        verdict = "bad"
    done = verdict != "inconclusive" or n >= max_rounds
    why = "" if verdict != "inconclusive" else _undecided(logs, mean, low, high, [0.0], max_rounds, confidence)
    note = _load_note(loads)
    if note:
        why = f"{why}; {note}" if why else note
    return on_basis(Judgement(verdict, math.exp(mean), None if low is None else math.exp(low),
                              None if high is None else math.exp(high), n, done, why), basis)


def log_ratios(a: list[float], b: list[float]) -> list[float]:
    """Per round log(b / a) of paired figures (a round with a missing or zero figure is left out)."""
    return [math.log(y / x) for x, y in zip(a, b) if x and y and x > 0 and y > 0]


def order(items: list, round_index: int) -> list:
    """The order of round `round_index` (0-based): as given, then reversed, and so on."""
    return list(items) if round_index % 2 == 0 else list(items)[::-1]


def _unpaired(a: list[float], b: list[float], tolerance: float, confidence: float = CONFIDENCE) -> Judgement:
    """B against A from runs that were not alternated (two result sets measured apart): each run
    one observation, Welch's interval of the difference of the mean log figures, one look. Fewer
    than two runs a side: inconclusive (one run cannot tell a change from the load of its moment)."""
    la = [math.log(x) for x in a if x and x > 0]
    lb = [math.log(x) for x in b if x and x > 0]
    if not la or not lb:
        return Judgement("inconclusive", None, None, None, 0, True, "no figure on one side")
    ratio = math.exp(statistics.fmean(lb) - statistics.fmean(la))
    if len(la) < 2 or len(lb) < 2:
        return Judgement("inconclusive", ratio, None, None, min(len(la), len(lb)), True,
                         f"{len(la)} run(s) of A, {len(lb)} of B: two or more a side make an interval; "
                         f"alternated rounds (compare-images) pair them")
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    se = math.sqrt(va + vb)
    df = (len(la) + len(lb) - 2) if se == 0 else \
        se ** 4 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    half = t_quantile(1.0 - (1.0 - confidence) / 2.0, max(1.0, df)) * se
    mean = math.log(ratio)
    verdict = _band(mean - half, mean + half, tolerance)
    why = "" if verdict != "inconclusive" else \
        f"runs of each side disagree by {(math.exp(math.sqrt(max(va * len(la), vb * len(lb)))) - 1) * 100:.0f} % (sd)"
    return Judgement(verdict, ratio, math.exp(mean - half), math.exp(mean + half), min(len(la), len(lb)), True, why)


# --- sides measured apart: runs as the unit, the load of each side compared -------------------
# A baseline from last week, a result set from another day, the recorded run `reproduce` starts
# from: the sides cannot be alternated, so a load that differed between their moments would be
# the verdict. The unit is a run (never a window), the interval says it is not alternated, and a
# verdict turns inconclusive when the sides' recorded load differs by load.APART or more, or
# when a side has too few runs to show its spread.

def _apart_loads(j: Judgement, loads_a: list | None, loads_b: list | None, classify) -> Judgement:
    """The sides' recorded load in the verdict: differing by load.APART or more, inconclusive;
    by a smaller factor f, the interval is widened f times each way (a CPU run slowed by a load
    f times as high at most f times) and judged again with `classify(low, high)`, so a verdict
    stands only beyond what the load could have made."""
    from dnnbench.results import load
    j.alternated = False
    factor = load.apart(loads_a or [], loads_b or [])
    if factor is None:
        return j
    said = f"the load differed {factor:.1f}x between the sides (not alternated: measure them in rounds)"
    if factor < load.APART - 1e-9:      # rounding: a factor of APART is APART
        if factor > 1.0 and j.low is not None and j.high is not None:
            j.low, j.high = j.low / factor, j.high * factor
            verdict = classify(j.low, j.high)
            if verdict != j.verdict:
                j.verdict, j.why = verdict, said + (f"; {j.why}" if j.why else "")
        return j
    if j.verdict != "inconclusive":
        j.verdict = "inconclusive"
        j.why = said
    elif said not in j.why:
        j.why = f"{j.why}; {said}" if j.why else said
    return j


def apart(a: list[float], b: list[float], tolerance: float, *, loads_a: list | None = None,
          loads_b: list | None = None, confidence: float = CONFIDENCE, basis: str = "") -> Judgement:
    """B against A from two sets of runs measured apart (`compare`, a baseline folder): each run
    one observation, Welch's interval of the mean log figures (one look at `confidence`):
    faster, slower, same or inconclusive; the interval widened by the factor the sides' load
    differed by, and inconclusive whatever the interval when that is load.APART or more, or a
    side has fewer than two runs."""
    return on_basis(_apart_loads(_unpaired(a, b, tolerance, confidence), loads_a, loads_b,
                                 lambda low, high: _band(math.log(low), math.log(high), tolerance)), basis)


GATE = {"faster": "pass", "same": "pass", "slower": "fail", "inconclusive": "inconclusive"}


def apart_gate(base: list[float], runs: list[float], tolerance: float, *, loads_base: list | None = None,
               loads_runs: list | None = None, confidence: float = CONFIDENCE, basis: str = "") -> Judgement:
    """Runs against a baseline's runs (a results folder, measured apart): pass when B/A's
    interval lies wholly above 1 - tolerance, fail when wholly below it, else inconclusive; the
    loads and the run counts as `apart`."""
    j = _unpaired(base, runs, tolerance, confidence)
    if j.low is not None and j.high is not None:
        j.verdict = _within(j.low, j.high, 1 - tolerance, None)
        j.why = "" if j.verdict != "inconclusive" else \
            f"the interval of runs/baseline ({j.low:.3f}-{j.high:.3f}) straddles {1 - tolerance:.3g}"
    else:
        j.verdict = "inconclusive"
    return on_basis(_apart_loads(j, loads_base, loads_runs, lambda low, high: _within(low, high, 1 - tolerance, None)),
                    basis)


def _within(low: float, high: float, lower: float | None, upper: float | None) -> str:
    """pass when [low, high] lies within the bounds, fail when wholly outside one, else
    inconclusive (it straddles a bound)."""
    if lower is not None and high < lower or upper is not None and low > upper:
        return "fail"
    if (lower is None or low >= lower) and (upper is None or high <= upper):
        return "pass"
    return "inconclusive"


# The largest run-to-run spread measured (benchmarks/run_spread.py over benchmarks/recorded/, in
# BENCHMARKS.md): runs of the default 10 windows of one job on a VM loaded 10-14x came out up to
# 4.55x apart. One run's own interval, widened this many times each way, holds where another
# run of the job could land: beyond it, one run decides against a fixed target.
RUN_SPREAD = 4.6


def target(values: list[float], lower: float | None, upper: float | None, *, loads: list | None = None,
           confidence: float = CONFIDENCE, one_run: tuple | None = None, basis: str = "") -> Judgement:
    """Runs against fixed bounds (a baseline file's target): Student's t interval of the runs'
    mean log figure, each run one observation (never its windows), one look at `confidence`;
    pass, fail or inconclusive (the interval straddles a bound). One run is evidence too:
    `one_run` is its own 95 % interval over its windows (low, high), widened RUN_SPREAD times
    each way for the spread between runs that one run cannot show; without it (fewer than 3
    windows), one run is inconclusive. Its ratio is the figure over the bounds' middle, its
    low/high the interval of the figure."""
    logs = [math.log(x) for x in values if x and x > 0]
    if not logs:
        return on_basis(Judgement("inconclusive", None, None, None, 0, True, "no run finished", alternated=False),
                        basis)
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        low, high = one_run if one_run else (None, None)
        if not low or not high or low <= 0:
            return on_basis(Judgement("inconclusive", math.exp(mean), None, None, 1, True,
                                      "1 run without an interval over its windows: --repeat 3 or more, or "
                                      "two or more runs", alternated=False), basis)
        low, high = low / RUN_SPREAD, high * RUN_SPREAD
        verdict = _within(low, high, lower, upper)
        why = "" if verdict != "inconclusive" else \
            f"1 run: its interval widened {RUN_SPREAD:g}x each way for the spread between runs straddles a bound " \
            f"(more runs narrow it)"
        return on_basis(Judgement(verdict, math.exp(mean), low, high, 1, True, why, alternated=False), basis)
    half = t_quantile(1.0 - (1.0 - confidence) / 2.0, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    low, high = math.exp(mean - half), math.exp(mean + half)
    verdict = _within(low, high, lower, upper)
    why = ""
    if verdict == "inconclusive":
        why = f"the {len(logs)} runs' interval straddles a bound (more runs narrow it)"
    note = _load_note(loads)
    if note:
        why = f"{why}; {note.replace('rounds', 'runs')}" if why else note.replace("rounds", "runs")
    return on_basis(Judgement(verdict, math.exp(mean), low, high, len(logs), True, why, alternated=False), basis)


def single_sided(new: list[float], recorded: float, tolerance: float, max_rounds: int = MAX_ROUNDS, *,
                 loads_new: list | None = None, load_recorded: float | None = None,
                 confidence: float = CONFIDENCE, first: int = FIRST_LOOK, basis: str = "") -> Judgement:
    """New runs against one recorded run that cannot be measured again (`reproduce` without a
    second image): the recorded run is one draw with the new runs' spread, so the interval of
    log(mean new / recorded) is the t interval with se = sd x sqrt(1/n + 1) (a prediction
    interval), looked at as `judge` looks (from `first` runs on, Bonferroni over the looks); the
    verdict turns inconclusive when the recorded load and the new runs' differ by load.APART."""
    lr = math.log(recorded) if recorded and recorded > 0 else None
    logs = [math.log(x) - lr for x in new if x and x > 0] if lr is not None else []
    n = len(logs)
    if not n:
        return Judgement("inconclusive", None, None, None, 0, True, "no figure on one side", alternated=False)
    mean = statistics.fmean(logs)
    planned = looks(max(max_rounds, n), first)
    low = high = None
    if n in planned and n >= 2:
        alpha = (1.0 - confidence) / len(planned)
        half = t_quantile(1.0 - alpha / 2.0, n - 1) * statistics.stdev(logs) * math.sqrt(1.0 / n + 1.0)
        low, high = mean - half, mean + half
    verdict = _band(low, high, tolerance)
    done = verdict != "inconclusive" or n >= max_rounds
    why = "" if verdict != "inconclusive" else (
        f"{n} run(s): the first look is after {first}" if low is None else
        "the new runs' spread, with the one recorded run's, straddles the tolerance: "
        "--image with the original image alternates the two")
    j = Judgement(verdict, math.exp(mean), None if low is None else math.exp(low),
                  None if high is None else math.exp(high), n, done, why)
    return on_basis(_apart_loads(j, [load_recorded] if load_recorded is not None else [], loads_new,
                                 lambda low, high: _band(math.log(low), math.log(high), tolerance)), basis)


def slowdown(change: dict) -> bool:
    """A lasting change (history.changes) is a slowdown when its whole 95 % CI lies below no
    change: `history changes` exits 1 on one, and its metrics count them."""
    return change["ci95_high_pct"] < 0


def against_band(value: float, low: float, high: float) -> str:
    """A figure against the band of what is normal (a result among its peers: their median
    +- a few spreads): slower below it, faster above it, else normal."""
    return "slower" if value < low else "faster" if value > high else "normal"
