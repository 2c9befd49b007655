"""How often a comparison's verdict is wrong, and how often inconclusive, per rule, on replayed
window series with a known true ratio under drifting machine load.

Each replay compares image A with image B, whose true throughput ratio B/A is known (0.67, 0.95,
1.0, 1.05). Time runs on one clock: every run is a series of timed windows (windows added until
the 95 % CI is within half the tolerance, at most 30, as compare-images and bisect measure a
step), with a start-up gap between runs, and each window's seconds are its work times the
machine's slowdown at that moment, times noise that persists from window to window (an AR(1) in
log space: windows that follow each other share the load of their moment). Load patterns:

  quiet      slowdown 1, noise 2 %
  step       the slowdown jumps from 1 to 2-4x at a random moment of the comparison
  ramp       the slowdown grows from 1 to 3x over the comparison
  bursts     bursts of 2-10x, a few windows long, at random
  two-hogs   two CPU hogs beside it: slowdown about 2x with heavy noise (30 %, AR 0.8) and
             rare 10-50x stalls (the 75 vs 3,800 items/s of one tiny run on this machine)

Rules:
  windows    today's compare-images (one run each, B after A): B/A with the CI from the two
             runs' windows (window_ratio), window_verdict: main's rule before the rounds, kept
             here only to replay it
  windows-3r today's opt-in --rounds 3: A B, B A, A B, each image's runs pooled as report pools
             a job's runs (the wider of the runs' and the windows' CIs), then the same verdict
  rounds     the new rule (results/rounds.py): per-round paired log-ratios, a t interval over
             rounds, looks from 3 rounds to 8, confidence 99 % split over the looks
  apart-runs two sides measured apart (3 runs of A, then 3 of B: `compare A B`, a baseline
             folder): Welch's interval over runs, 99 %, the loads not read (main's compare)
  apart      the same with the loads the windows recorded (a stand-in: the load that slows a
             run, not a few seconds' burst): inconclusive when the sides' differ 3x or more
  one-run    one run against a fixed target (`report --baseline targets.yaml`): the run's own
             interval widened by rounds.RUN_SPREAD each way; pass / fail / inconclusive, the
             ratio being the job's true figure over the target

Wrong: faster/slower when the truth is within the tolerance or the other way; same when the
truth is outside it. Prints per rule and pattern: wrong %, inconclusive %, mean runs.

  recN       (--recorded RESULT) a real run's window series replayed: each replayed window
             takes the next recorded window's seconds (scaled by the work), so the runs get
             what the machine really did

Bisect (--bisect): a list of IMAGES images whose true figure drops by the ratio from a random
image on (0.67, 0.9; 1.0: no drop), bisected under each pattern by two searches, counted as one
replay each: wrong = a first slower image that is not the true one, a range that does not hold
it, or ends called faster/same when the drop is beyond the tolerance (slower when there is none);
inc = the ends undecided or a range (allowed; with no drop the right answer is the ends
"same"); runs = runs a bisect took.

  bisect         campaigns/bisect.py's search: the ends in rounds of their own (good bad, bad good,
                 ...) until decided, then each midpoint in rounds with both ends of its range
  bisect-merged  a candidate to cut runs: the first midpoint's rounds (good bad mid, mid bad
                 good, ...) judge the ends too (measured, not adopted: BENCHMARKS.md)

Usage: python benchmarks/verdict_errors.py [--replays 1000] [--tolerance 0.05] [--seed 1]
           [--recorded result.json] [--bisect]
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dnnbench.results import load, numbers, rounds  # noqa: E402
from dnnbench.workloads import stats  # noqa: E402

RATIOS = (0.67, 0.95, 1.0, 1.05)
PATTERNS = ("quiet", "step", "ramp", "bursts", "two-hogs")
GAP = 3.0            # seconds between two runs (container start, plan, result)
WINDOW = 1.0         # seconds of one window of A on a quiet machine


class Machine:
    """The load over one comparison: slowdown(t) and the window noise's persistent state."""

    def __init__(self, pattern: str, rng: random.Random, span: float):
        self.pattern, self.rng, self.span = pattern, rng, span
        self.noise, self.ar, self.state = 0.02, 0.5, 0.0
        self.step_at, self.step_to = rng.uniform(0, span), rng.uniform(2, 4)
        self.bursts = []
        if pattern == "bursts":
            t = 0.0
            while t < span:
                t += rng.expovariate(1 / 40.0)
                self.bursts.append((t, t + rng.uniform(1, 6), rng.uniform(2, 10)))
        if pattern == "two-hogs":
            self.noise, self.ar = 0.30, 0.8

    def slowdown(self, t: float) -> float:
        if self.pattern == "step":
            return self.step_to if t >= self.step_at else 1.0
        if self.pattern == "ramp":
            return 1.0 + 2.0 * min(1.0, t / self.span)
        if self.pattern == "bursts":
            return max([f for a, b, f in self.bursts if a <= t < b] or [1.0])
        if self.pattern == "two-hogs":
            return 2.0 * (self.rng.uniform(10, 50) if self.rng.random() < 0.01 else 1.0)
        return 1.0

    def window(self, t: float, work: float) -> float:
        self.state = self.ar * self.state + math.sqrt(1 - self.ar ** 2) * self.rng.gauss(0, self.noise)
        return work * self.slowdown(t) * math.exp(self.state)

    def load1(self, t: float) -> float | None:
        """What a window's 1-minute load average would read: the run itself (1) and the load that
        slows it, but not a burst of a few seconds nor a rare stall (the average is a minute's)."""
        if self.pattern == "step":
            return self.step_to if t >= self.step_at else 1.0
        if self.pattern == "ramp":
            return self.slowdown(t)
        return 3.0 if self.pattern == "two-hogs" else 1.0


class Recorded:
    """A recorded run's window series as the machine: each window replays the next recorded one
    (scaled by the work), from a random start, wrapping around; what the machine did between
    the recorded windows is what the replayed runs get."""

    def __init__(self, seconds: list[float], rng: random.Random):
        self.seconds, self.i = seconds, rng.randrange(len(seconds))
        self.median = sorted(seconds)[len(seconds) // 2]

    def window(self, t: float, work: float) -> float:
        self.i = (self.i + 1) % len(self.seconds)
        return work * self.seconds[self.i] / self.median


def run(machine, clock: list, work: float, tolerance: float) -> dict:
    """One run: windows until the CI is within half the tolerance (3 to 30), as a step is measured."""
    windows = []
    clock[0] += GAP
    while len(windows) < 30:
        seconds = machine.window(clock[0], work)
        clock[0] += seconds
        load1 = machine.load1(clock[0]) if hasattr(machine, "load1") else None
        windows.append({"items": 8, "seconds": seconds, **({} if load1 is None else {"load1": load1})})
        if len(windows) >= 3:
            h = numbers.run_headline({"windows": windows, "world_size": 1})
            if h["ci95_pct"] is not None and h["ci95_pct"] <= tolerance * 100 / 2:
                break
    return {"status": "ok", "windows": windows, "world_size": 1}


def window_ratio(a: dict, b: dict) -> dict:
    """The old rule's B/A of two headlines with a 95 % CI from their windows (relative standard
    errors added in quadrature, the smaller df kept): the interval the rounds replaced."""
    if not a.get("value") or not b.get("value"):
        return {"value": None, "low": None, "high": None}
    r = b["value"] / a["value"]
    if a.get("se") is None or b.get("se") is None:
        return {"value": r, "low": None, "high": None}
    rel = ((a["se"] / a["value"]) ** 2 + (b["se"] / b["value"]) ** 2) ** 0.5
    low, high, _ = stats.interval(r, r * rel, min(a["df"], b["df"]))
    return {"value": r, "low": low, "high": high}


def window_verdict(r: dict, tolerance: float) -> str:
    """The old rule's verdict on window_ratio's interval."""
    if r["low"] is None:
        return "inconclusive"
    if r["low"] >= 1 - tolerance and r["high"] <= 1 + tolerance:
        return "same"
    if r["low"] > 1 + tolerance:
        return "faster"
    return "slower" if r["high"] < 1 - tolerance else "inconclusive"


def rule_windows(machine, clock, ratio, tolerance):
    a, b = run(machine, clock, WINDOW, tolerance), run(machine, clock, WINDOW / ratio, tolerance)
    return window_verdict(window_ratio(numbers.run_headline(a), numbers.run_headline(b)), tolerance), 2


def rule_windows_3r(machine, clock, ratio, tolerance):
    runs = {"a": [], "b": []}
    for n in range(3):
        for side in rounds.order(["a", "b"], n):
            runs[side].append(run(machine, clock, WINDOW if side == "a" else WINDOW / ratio, tolerance))
    r = window_ratio(numbers.job_headline(runs["a"]), numbers.job_headline(runs["b"]))
    return window_verdict(r, tolerance), 6


def rule_rounds(machine, clock, ratio, tolerance, max_rounds=rounds.MAX_ROUNDS, confidence=None):
    a, b = [], []
    for n in range(max_rounds):
        got = {}
        for side in rounds.order(["a", "b"], n):
            got[side] = numbers.run_headline(run(machine, clock, WINDOW if side == "a" else WINDOW / ratio,
                                                 tolerance))["value"]
        a.append(got["a"])
        b.append(got["b"])
        j = rounds.judge(rounds.log_ratios(a, b), tolerance, max_rounds,
                         confidence=confidence or rounds.CONFIDENCE)
        if j.done:
            return j.verdict, 2 * len(a)
    return j.verdict, 2 * len(a)


def _apart(machine, clock, ratio, tolerance, runs=3):
    """Each side's runs one after the other, B after A (two result sets, a baseline and now)."""
    sides = {}
    for side, work in (("a", WINDOW), ("b", WINDOW / ratio)):
        sides[side] = [run(machine, clock, work, tolerance) for _ in range(runs)]
    return ([numbers.run_headline(r)["value"] for r in sides["a"]], [numbers.run_headline(r)["value"] for r in sides["b"]],
            load.of_runs(sides["a"]), load.of_runs(sides["b"]))


def rule_apart_runs(machine, clock, ratio, tolerance):
    """main's `compare A B` of sides measured apart: Welch's interval over runs, loads unread."""
    a, b, _, _ = _apart(machine, clock, ratio, tolerance)
    return rounds.apart(a, b, tolerance).verdict, 6


def rule_apart(machine, clock, ratio, tolerance):
    """The rule for sides measured apart: the same, inconclusive when their load differed 3x."""
    a, b, la, lb = _apart(machine, clock, ratio, tolerance)
    return rounds.apart(a, b, tolerance, loads_a=la, loads_b=lb).verdict, 6


def rule_one_run(machine, clock, ratio, tolerance):
    """One run of the job against a fixed target it beats by `ratio` (its true figure over the
    target): `report --baseline` with a target file, rounds.target with the run's own interval
    widened by rounds.RUN_SPREAD. pass / fail / inconclusive (wrong(): pass below the bound, fail
    at or above it)."""
    h = numbers.run_headline(run(machine, clock, WINDOW, tolerance))
    target = 8 / WINDOW / ratio
    j = rounds.target([h["value"]], target * (1 - tolerance), None, one_run=(h["ci95_low"], h["ci95_high"]))
    return j.verdict, 1


RULES = {"windows": rule_windows, "windows-3r": rule_windows_3r, "rounds": rule_rounds,
         "apart-runs": rule_apart_runs, "apart": rule_apart, "one-run": rule_one_run}

IMAGES = 8
BISECT_RATIOS = (0.67, 0.9, 1.0)


class Figure:
    """A step as bisect's search reads it: its figure and load."""

    def __init__(self, value: float):
        self.figure, self.load = {"value": value}, None


def _round_of(machine, clock, work: list[float], tolerance: float, count: list):
    def round_of(members: list[int], n: int, of: int) -> dict:
        out = {}
        for i in rounds.order(members, n):
            out[i] = Figure(numbers.run_headline(run(machine, clock, work[i], tolerance))["value"])
            count[0] += 1
        return out
    return round_of


def search_merged(round_of, lo: int, hi: int, tolerance: float, max_rounds: int):
    """The candidate: the first midpoint's rounds (good bad mid, mid bad good, ...) judge the ends
    too, so the ends take no rounds of their own; then the midpoints as `search` goes on."""
    from dnnbench.campaigns import bisect
    mid = (lo + hi) // 2 if hi - lo > 1 else None
    ends, middle, table = bisect._stage(round_of, lo, mid, hi, tolerance, max_rounds, True)
    if ends.verdict != "slower":
        return bisect.Search("ends", lo, hi, ends, ends)
    last = ends
    while mid is not None:
        if middle.verdict == "bad":
            last, hi = rounds.judge(bisect._logs(table, lo, mid), tolerance, len(table)), mid
        elif middle.verdict == "good":
            last, lo = rounds.judge(bisect._logs(table, mid, hi), tolerance, len(table)), mid
        else:
            return bisect.Search("range", lo, hi, ends, middle, mid)
        mid = (lo + hi) // 2 if hi - lo > 1 else None
        if mid is not None:
            _, middle, table = bisect._stage(round_of, lo, mid, hi, tolerance, max_rounds, False)
    return bisect.Search("found", lo, hi, ends, last)


def bisect_replays(args, rng) -> None:
    from dnnbench.campaigns import bisect
    searches = {k: v for k, v in {"bisect": bisect.search, "bisect-merged": search_merged}.items()
                if k in args.searches.split(",")}
    print(f"bisect over {IMAGES} images, {args.replays} replays per cell, tolerance {args.tolerance}, "
          f"true drop {BISECT_RATIOS} from a random image on, at most {args.max_rounds} rounds a judgement")
    print(f"{'search':<13} {'pattern':<9} " + " ".join(f"{'r=' + str(r):>18}" for r in BISECT_RATIOS)
          + f" {'runs':>5}")
    for name, find in searches.items():
        totals = {"wrong": 0, "n": 0, "runs": 0}
        for pattern in [x for x in args.patterns.split(",") if x]:
            cells, runs = [], 0
            for ratio in BISECT_RATIOS:
                w = inc = 0
                before = runs
                for _ in range(args.replays):
                    slow = rng.randrange(1, IMAGES)
                    work = [WINDOW / (ratio if i >= slow else 1.0) for i in range(IMAGES)]
                    count = [0]
                    machine = Machine(pattern, rng, span=600.0)
                    found = find(_round_of(machine, [0.0], work, args.tolerance, count), 0, IMAGES - 1,
                                 args.tolerance, args.max_rounds)
                    drop = ratio < 1 - args.tolerance
                    if found.how == "found":
                        bad = not drop or found.hi != slow
                    elif found.how == "range":
                        bad = not drop or not found.lo < slow <= found.hi
                    else:           # the ends not decidedly apart: wrong only when they are
                        v = found.ends.verdict
                        bad = v == "faster" or (drop and v == "same")
                    w += bad
                    inc += found.how == "range" or found.ends.verdict == "inconclusive"
                    runs += count[0]
                cells.append(f"{100 * w / args.replays:4.1f}w {100 * inc / args.replays:5.1f}i "
                             f"{(runs - before) / args.replays:4.1f}r")
                totals["wrong"] += w
                totals["n"] += args.replays
            totals["runs"] += runs
            print(f"{name:<13} {pattern:<9} " + " ".join(f"{c:>18}" for c in cells)
                  + f" {runs / (args.replays * len(BISECT_RATIOS)):5.1f}", flush=True)
        print(f"{name:<13} {'all':<9} wrong {100 * totals['wrong'] / totals['n']:.2f} %, mean runs "
              f"{totals['runs'] / totals['n']:.1f}")
    print("w: wrong answers %, i: inconclusive (ends undecided or a range) %, r and runs: mean runs per bisect")


def wrong(verdict: str, ratio: float, tolerance: float) -> bool:
    if verdict in ("inconclusive", "-"):
        return False
    if verdict in ("pass", "fail"):     # against a target: pass is right from 1 - tolerance up
        return (verdict == "pass") != (ratio >= 1 - tolerance - 1e-12)
    inside = 1 - tolerance - 1e-12 <= ratio <= 1 + tolerance + 1e-12
    right = "same" if inside else ("faster" if ratio > 1 else "slower")
    return verdict != right


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replays", type=int, default=1000, help="comparisons per rule, pattern and ratio")
    p.add_argument("--tolerance", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rules", default="windows,windows-3r,rounds")
    p.add_argument("--patterns", default=",".join(PATTERNS), help="the synthetic patterns (empty: none)")
    p.add_argument("--recorded", action="append", default=[], metavar="RESULT_JSON",
                   help="also replay the windows of a recorded run (a long one: --repeat 400)")
    p.add_argument("--confidence", type=float, default=None, help="the rounds rule's (default: its own)")
    p.add_argument("--max-rounds", type=int, default=rounds.MAX_ROUNDS, help="the rounds rule's --rounds")
    p.add_argument("--ratios", default=None, help="true ratios, comma-separated (default: %s)"
                   % ",".join(map(str, RATIOS)))
    p.add_argument("--bisect", action="store_true", help="replay bisects instead of comparisons")
    p.add_argument("--searches", default="bisect,bisect-merged", help="with --bisect: which searches")
    args = p.parse_args()
    if args.bisect:
        bisect_replays(args, random.Random(args.seed))
        return
    RULES["rounds"] = lambda m, c, r, t: rule_rounds(m, c, r, t, args.max_rounds, args.confidence)
    rng = random.Random(args.seed)
    ratios = tuple(float(x) for x in args.ratios.split(",")) if args.ratios else RATIOS
    print(f"{args.replays} replays per cell, tolerance {args.tolerance}, true ratios {ratios}; rounds rule: "
          f"confidence {args.confidence or rounds.CONFIDENCE}, at most {args.max_rounds} rounds")
    print(f"{'rule':<11} {'pattern':<9} " + " ".join(f"{'r=' + str(r):>17}" for r in ratios)
          + f" {'all wrong':>9} {'runs':>5}")
    recorded = {}
    for path in args.recorded:
        data = json.loads(Path(path).read_text())
        recorded[f"rec{len(recorded) + 1}"] = [w["seconds"] for w in data["windows"]]
        print(f"rec{len(recorded)}: {path}: {len(data['windows'])} windows, "
              f"{min(recorded[f'rec{len(recorded)}']):.3g}-{max(recorded[f'rec{len(recorded)}']):.3g} s")
    for name in args.rules.split(","):
        rule = RULES[name]
        totals = {"wrong": 0, "n": 0}
        for pattern in (*[x for x in args.patterns.split(",") if x], *recorded):
            cells, runs = [], 0
            for ratio in ratios:
                w = inc = 0
                for _ in range(args.replays):
                    machine = Recorded(recorded[pattern], rng) if pattern in recorded else \
                        Machine(pattern, rng, span=200.0)
                    verdict, used = rule(machine, [0.0], ratio, args.tolerance)
                    w += wrong(verdict, ratio, args.tolerance)
                    inc += verdict == "inconclusive"
                    runs += used
                cells.append(f"{100 * w / args.replays:5.1f}w {100 * inc / args.replays:5.1f}i")
                totals["wrong"] += w
                totals["n"] += args.replays
            print(f"{name:<11} {pattern:<9} " + " ".join(f"{c:>17}" for c in cells)
                  + f" {'':>9} {runs / (args.replays * len(ratios)):5.1f}", flush=True)
        print(f"{name:<11} {'all':<9} {'':>{18 * len(ratios) - 1}} {100 * totals['wrong'] / totals['n']:8.2f}%")
    print("w: wrong verdicts %, i: inconclusive %, runs: mean runs per comparison")


if __name__ == "__main__":
    main()
