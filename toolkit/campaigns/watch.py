"""`dnnbench watch`: find the release that made a job slower.

1. Survey: the newest release is measured (its result names the job and GPU model), then every
   `every`-th release of the list in order; a release the history already holds for this job
   and GPU model is not run again, its recorded results stand in for it.
2. Suspects: each lasting change change detection (history/changes.py) finds in the survey, and
   the newest releases, where a change leaves too few points after it to be found (a newest
   release measured below the release MIN_SIZE - 1 places before it by half the tolerance).
3. Verdicts: each suspected slowdown judged as bisect judges (campaigns/bisect.py, the one rule of
   results/rounds.py): its two ends in alternated rounds, and when they are decidedly apart, the
   releases between them halved until the first slower one is named. Change detection only
   chooses where to look; the verdict is always the rounds'.

Every run is recorded in the history when it ends; a finished run is read back from its folder
(and recorded again, which adds nothing when the store has it), so a watch resumes after Ctrl-C.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING

from dnnbench.errors import DnnbenchError

if TYPE_CHECKING:
    from dnnbench.history.store import Store
    from dnnbench.campaigns import bisect


@dataclasses.dataclass
class Verdict:
    """One suspected slowdown judged: lo..hi of the list, the rounds' verdict on them."""
    lo: int
    hi: int
    why: str                           # "change detection" or "newest release"
    verdict: str = ""                  # the rounds' (results/rounds.py): slower (then lo, hi are the
                                       # last good and first slower), same, faster, inconclusive
    pct: str = "-"
    stuck: str = ""                    # a midpoint that stayed undecided: the range holds the change
    facts: list[str] = dataclasses.field(default_factory=list)


def survey_order(n: int, every: int) -> list[int]:
    """The newest release first, then every `every`-th of the list (the first included)."""
    return [n - 1] + [i for i in range(0, n - 1, every)]


def suspects(points: dict[int, list[dict]], tolerance: float) -> list[tuple[int, int, str]]:
    """Where to look, as (lo, hi, why): slowdowns change detection finds between two surveyed
    releases, and the newest release when it measured slower than the release MIN_SIZE - 1
    surveyed places before it (a change there leaves too few points after it to be found)."""
    from dnnbench.history.changes import MIN_SIZE, changes
    order = sorted(points)
    flat = [p for i in order for p in points[i]]
    found = []
    for c in changes(flat):
        lo, hi = c.before["index"], c.after["index"]
        if lo < hi and c.ratio < 1:
            found.append((lo, hi, "change detection"))
    if len(order) >= 2:
        ref, newest = order[max(0, len(order) - MIN_SIZE)], order[-1]
        covered = any(hi > ref for _, hi, _ in found)
        if not covered and _mean(points[newest]) < _mean(points[ref]) * (1 - tolerance / 2):
            found.append((ref, newest, "newest release"))
    return sorted(set(found))


def _mean(rows: list[dict]) -> float:
    values = [r["throughput"] for r in rows if isinstance(r.get("throughput"), (int, float))]
    return sum(values) / len(values) if values else 0.0


class History:
    """The store as the watch uses it: a release's recorded results for this job and GPU model.
    A store that fails mid-watch is said once and left alone (the result files stay the truth)."""

    def __init__(self) -> None:
        from dnnbench.history import store
        self.store: Store | None = store.Store(create=True)   # refused here, before any run: exit 2

    def held(self, job: str, gpu: str, image: str, base: str | None) -> list[dict]:
        if self.store is None:
            return []
        try:
            rows = self.store.select(job=job, gpu=gpu, status="ok", image=image) 
            if not rows and base:
                rows = self.store.select(job=job, gpu=gpu, status="ok", base=base)
        except DnnbenchError as exc:
            from dnnbench.console import warn
            warn(f"history not read: {exc}; releases are measured instead")
            self.close()
            return []
        return [r for r in rows if isinstance(r.get("throughput"), (int, float))]

    def close(self) -> None:
        if self.store is not None:
            self.store.close()  
            self.store = None


def survey(listed: list[tuple[str, str | None]], template, folder: Path, every: int,
           history: History, budget=None) -> tuple[dict[int, list[dict]], int]:
    """Each surveyed release's points (store rows, or the row of its run now), and how many of
    them the history held; the releases surveyed before the budget (--max-runs, --deadline) ran
    out."""
    from dnnbench.console import info
    from dnnbench.history.facts import row
    from dnnbench.history.record import record
    from dnnbench.campaigns import bisect
    from dnnbench.workloads import schema
    from dnnbench.containers import same_image
    points: dict[int, list[dict]] = {}
    job = gpu = None
    held = 0
    same = same_image.firsts(template.runtime, [img for img, _ in listed])
    for i in survey_order(len(listed), every):
        image, base = listed[i]
        twin = next((j for j in points if same.get(j, j) == same.get(i, i)), None)
        if twin is not None:     # one image under two names: its points, not another run
            info(f"[survey] {same_image.said(listed[twin][0], image, template.runtime)}")
            points[i] = [dict(r, image=image, index=i) for r in points[twin]]
            continue
        rows: list[dict] = history.held(job, gpu, image, base) if job is not None and gpu is not None else []
        if rows:
            info(f"[survey] {image}: {len(rows)} result(s) of {job} in the history, not run, "
                 f"{figure(rows)}")
            points[i] = [dict(r, index=i) for r in rows]
            held += 1
            continue
        if budget is not None:
            try:
                budget.check()
            except bisect.Enough as stop:
                info(f"[survey] stopped ({stop}) after {len(points)} releases")
                break
        step = bisect.measure(bisect.Step(i, image, folder / bisect.step_slug(i, image)), base, template,
                              dataset=bisect.dataset_identity(template))
        assert step.result is not None    # measure() raises on a step it could not measure
        if budget is not None and not step.reused:
            budget.ran += 1
        path = step.run_dir / schema.RESULT_FILE
        if step.reused:
            record(path, step.result)     # a store that missed it (it was down) catches up
        made = row(path, step.result)
        info(f"[survey] {image}: {figure([made])}" + (" (read back)" if step.reused else ""))
        points[i] = [dict(made, image=image, index=i)]
        job, gpu = job or made["job"], gpu or made["gpu"]
    return points, held


def figure(rows: list[dict]) -> str:
    """A surveyed release's figure as its survey line says it: the value with its unit, and its
    95 % interval (one result's own; several results: their mean and the range of their values)."""
    from dnnbench.results.numbers import fmt
    values = [r["throughput"] for r in rows if isinstance(r.get("throughput"), (int, float))]
    unit = next((r.get("unit") for r in rows if r.get("unit")), "items/s")
    if not values:
        return "no figure"
    if len(values) == 1:
        lo, hi = rows[0].get("ci_low"), rows[0].get("ci_high")
        span = f" (95 % CI {fmt(lo)}-{fmt(hi)})" if lo is not None and hi is not None else " (no 95 % CI)"
        return f"{fmt(values[0])} {unit}{span}"
    return f"{fmt(sum(values) / len(values))} {unit} (mean of {len(values)}, range {fmt(min(values))}-{fmt(max(values))})"


def judge(listed, template, folder: Path, lo: int, hi: int, why: str, tolerance: float,
          max_rounds: int, budget=None) -> tuple[Verdict, bisect.Rounds]:
    """One suspect as bisect judges it: the ends in rounds, then the releases between halved."""
    import math

    from dnnbench.history.record import record
    from dnnbench.campaigns import bisect
    from dnnbench.workloads import schema
    steps = max(1, math.ceil(math.log2(hi - lo))) if hi - lo > 1 else 0
    session = bisect.Rounds(folder / f"judged-{lo:02d}-{hi:02d}", listed, template, max_rounds * (2 + 3 * steps),
                            budget)
    v = Verdict(lo, hi, why)
    found = bisect.search(session.round, lo, hi, tolerance, max_rounds)
    ends = found.ends
    v.verdict, v.pct = ends.verdict, ends.pct()
    if found.how == "stopped":    # --max-runs, --deadline: the verdict so far
        v.lo, v.hi = found.lo, found.hi
        v.stuck = bisect.stopped_line(found, [img for img, _ in listed])
    elif found.how == "range":      # a midpoint undecided: the range the evidence supports
        assert found.mid is not None
        v.lo, v.hi = found.lo, found.hi
        v.stuck = (f"{listed[found.mid][0]} stayed inconclusive against both ends after {found.last.rounds} "
                   f"rounds ({found.last.why})")
    elif found.how == "found":
        v.lo, v.hi, v.pct = found.lo, found.hi, found.last.pct()
        at = {s.index: s for s in session.steps}
        v.facts = [f"image: {listed[v.lo][0]} -> {listed[v.hi][0]}", *bisect.changed_facts(at[v.lo], at[v.hi])]
    elif ends.why:
        v.stuck = ends.why
    for s in session.steps:
        if s.reused and s.result is not None:
            record(s.run_dir / schema.RESULT_FILE, s.result)
    return v, session


def watch_command(opts, images: list[str] | None, bases: str | None, tolerance: float, rounds: int | None = None,
                  every: int = 1, judged: list[Verdict] | None = None, push: str | None = None,
                  budget=None) -> int:
    from dnnbench.console import info
    from dnnbench.history.changes import MIN_SIZE
    from dnnbench.campaigns import bisect
    listed = bisect.image_list(images, bases)
    max_rounds = bisect.rounds_limit(rounds)
    if every < 1:
        raise DnnbenchError(f"--every {every}: give 1 or more")
    template = bisect.job_template(opts, tolerance)
    folder = bisect.comparison_folder(opts, "watch")
    template = dataclasses.replace(template, run_id=folder.name)
    if not bisect.check_first(template, listed, folder):
        return 0
    started = time.monotonic()
    history = History()        # a watch without a usable store is refused before any run
    try:
        points, held = survey(listed, template, folder, every, history, budget)
    finally:
        history.close()
    found = suspects(points, tolerance)
    verdicts, sessions = [], []
    for lo, hi, why in found:
        v, session = judge(listed, template, folder, lo, hi, why, tolerance, max_rounds, budget)
        verdicts.append(v)
        sessions.append(session)
    for v in verdicts:
        _say(listed, v)
    if judged is not None:       # a suite's watch list names the slower releases in its summary
        judged.extend(verdicts)
    if not found:
        info(f"no slowdown suspected over {len(points)} surveyed releases of {len(listed)} (change detection "
             f"and the newest release against the one {MIN_SIZE - 1} surveyed before it)")
    runs = [s for session in sessions for s in session.steps]
    ran = sum(1 for s in runs if not s.reused)
    info(f"{len(listed)} releases: {len(points)} surveyed ({held} from the history), {len(runs)} runs in rounds "
         f"({ran} run now) in {time.monotonic() - started:.0f} s; results in {folder}")
    code = 1 if any(v.verdict == "slower" for v in verdicts) else 0
    return _export(listed, verdicts, opts.workload, code, push)


def _export(listed, verdicts: list[Verdict], workload: str, code: int, push: str | None) -> int:
    """The verdicts to the step summary and the Pushgateway (dnnbench.exports)."""
    from dnnbench.exports import watch_out
    return watch_out(workload, [{"before": listed[v.lo][0], "after": listed[v.hi][0], "why": v.why,
                                 "verdict": v.verdict, "pct": v.pct, "stuck": v.stuck} for v in verdicts], code, push)


def _say(listed, v: Verdict) -> None:
    from rich.text import Text

    from dnnbench.console import out, visible
    a, b = listed[v.lo][0], listed[v.hi][0]
    if v.verdict == "slower" and not v.stuck:
        lines = [f"slower: {v.pct} from {b}, after {a} (rounds; suspected by {v.why})"]
        lines += [f"  {fact}" for fact in v.facts]
    elif v.verdict == "slower":
        lines = [f"slower: {v.pct}: the first slower release is after {a}, up to {b}; {v.stuck}"]
    else:
        lines = [f"not confirmed: {b} against {a} is {v.verdict} in rounds ({v.pct}; suspected by {v.why})"
                 + (f"; {v.stuck}" if v.stuck else "")]
    for line in lines:    # wrapped at the terminal's width between words, as bisect's verdict is
        out.print(Text(visible(line, one_line=True)))
