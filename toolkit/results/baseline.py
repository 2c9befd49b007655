"""Baseline targets with ReFrame-style tolerances, and the verdict of a job against them.

A job's target is a number (passes at >= target x (1 - --tolerance)), or a mapping:
  {target: 2790, lower: -0.05, upper: null}   relative bounds: [target x (1 + lower), target x (1 + upper)]
  {floor: 2600}                               an absolute lower bound (target, if given, for diff% only)
A results folder as the baseline gives each job its runs there (`Measured`).

The verdict is the one rule's (results/rounds.py), over runs, never windows (windows share the
load of their moment): against a target, the interval of the runs' figure (`rounds.target`; one
run: its own interval widened by the largest spread between runs measured, rounds.RUN_SPREAD);
against a baseline folder, the interval of B/A over the runs of both sides, measured apart, so
inconclusive when their recorded load differed by results/load.APART or a side has one run
(`rounds.apart_gate`). pass: all of it inside the bounds; fail: all of it outside; else
inconclusive, with why.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from dnnbench.errors import DnnbenchError
from dnnbench.results import numbers

KEYS = {"target", "lower", "upper", "floor", "ceiling"}


@dataclass
class Bounds:
    target: float | None
    low: float | None       # absolute lower bound
    high: float | None      # absolute upper bound

    def describe(self) -> str:
        parts = ([f">= {numbers.fmt(self.low)}"] if self.low is not None else []) + \
            ([f"<= {numbers.fmt(self.high)}"] if self.high is not None else [])
        return ", ".join(parts) or "-"


@dataclass
class Measured:
    """A baseline job's runs (a results folder): each run's figure and load average."""
    values: list[float]
    loads: list[float]
    target: float | None      # their pooled figure (diff % is against it)

    def describe(self) -> str:
        return f"{len(self.values)} run{'s' if len(self.values) != 1 else ''}"


def is_bounds(value) -> bool:
    """A mapping in the tolerance form (rather than a plain number or {throughput: x})."""
    return isinstance(value, dict) and bool(KEYS & set(value))


def _number(path: Path, job: str, key: str, value, *, positive: bool) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or (positive and value <= 0):
        kind = "a positive number" if positive else "a finite number"
        raise DnnbenchError(f"baseline {path}: job {job!r}: {key} must be {kind} or null, got {value!r}")
    return float(value)


def parse(path: Path, job: str, value: dict) -> Bounds:
    unknown = set(value) - KEYS
    if unknown:
        raise DnnbenchError(f"baseline {path}: job {job!r}: unknown key {sorted(unknown)[0]!r} "
                            f"({', '.join(sorted(KEYS))})")
    target = _number(path, job, "target", value.get("target"), positive=True)
    lower = _number(path, job, "lower", value.get("lower"), positive=False)
    upper = _number(path, job, "upper", value.get("upper"), positive=False)
    floor = _number(path, job, "floor", value.get("floor"), positive=True)
    ceiling = _number(path, job, "ceiling", value.get("ceiling"), positive=True)
    if (lower is not None or upper is not None) and target is None:
        raise DnnbenchError(f"baseline {path}: job {job!r}: lower/upper are fractions of a target: add target:")
    if lower is not None and lower > 0 or upper is not None and upper < 0:
        raise DnnbenchError(f"baseline {path}: job {job!r}: lower is a fraction <= 0 (-0.05 = 5 % below), "
                            f"upper a fraction >= 0")
    lows = [x for x in (target * (1 + lower) if target is not None and lower is not None else None, floor)
            if x is not None]
    highs = [x for x in (target * (1 + upper) if target is not None and upper is not None else None, ceiling)
             if x is not None]
    if not lows and not highs:
        raise DnnbenchError(f"baseline {path}: job {job!r}: give lower/upper with target, or floor/ceiling")
    return Bounds(target=target if target is not None else floor, low=max(lows) if lows else None,
                  high=min(highs) if highs else None)


def judge(target, runs: list[dict], headline: dict, tolerance: float) -> dict:
    """The baseline columns of a report row: target, bounds, diff%, verdict (and pass: True,
    False or None when inconclusive or without a target), and target_why: what would decide an
    inconclusive one."""
    from dnnbench.results import load, rounds
    if target is None:
        return {"target": None, "bounds": None, "diff_pct": None, "target_verdict": None, "pass": None,
                "target_why": None}
    if isinstance(target, Measured):
        bounds = Bounds(target=target.target, low=None if target.target is None else target.target * (1 - tolerance),
                        high=None)
    else:
        bounds = target if isinstance(target, Bounds) else Bounds(target=target, low=target * (1 - tolerance), high=None)
    value = headline.get("value")
    if value is None:       # no run of the job finished: the gate cannot pass what did not run
        return {"target": bounds.target, "bounds": bounds.describe(), "diff_pct": None, "target_verdict": "missing",
                "pass": False, "target_why": None}
    heads = [h for h in (numbers.run_headline(r) for r in runs) if h["value"]]
    if isinstance(target, Measured):    # its runs were judged on wall time: so are these
        j = rounds.apart_gate(target.values, [h["value"] for h in heads], tolerance, loads_base=target.loads,
                              loads_runs=load.of_runs(runs))
    else:
        key, note = rounds.basis(heads)
        prefix = "" if key == "value" else "corrected_"
        one = (heads[0][prefix + "ci95_low"], heads[0][prefix + "ci95_high"]) if len(heads) == 1 else None
        j = rounds.target([h[key] for h in heads], bounds.low, bounds.high, loads=load.of_runs(runs),
                          one_run=one, basis=note)
    return {"target": bounds.target, "bounds": bounds.describe(),
            "diff_pct": 100 * (value / bounds.target - 1) if bounds.target else None,
            "target_verdict": j.verdict, "pass": {"pass": True, "fail": False}.get(j.verdict),
            "target_why": j.why or None if j.verdict == "inconclusive" else j.basis or None}
