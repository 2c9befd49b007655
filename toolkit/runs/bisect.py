"""Which release made it slower: the same job on an ordered list of images (`compare-images`),
and a binary search of that list between a good and a bad end (`bisect`).

Every step is an ordinary run under one folder (RESULTS/<name>/<NN>-<image>/), so `report` and
`compare` read them, and a step that already has a good result is read back instead of run
again: an interrupted bisect resumes where it stopped. Each image is measured until the 95 % CI
of its throughput is within half the tolerance (`--until-ci`), so two images whose CIs cannot
be told apart are called the same, never guessed.
"""
from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

from dnnbench.console import Column, escape, info, out, print_table
from dnnbench.errors import DnnbenchError
from dnnbench.runs.options import RunOptions

# the facts a manifest records that can explain a change between two images
FACTS = ("pytorch", "torchvision", "cuda", "cudnn", "nccl", "python", "driver", "base")


@dataclasses.dataclass
class Step:
    """One image measured: its run folder, result and headline (value, CI, se, df)."""
    index: int
    image: str
    run_dir: Path
    result: dict | None = None
    headline: dict | None = None
    reused: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.result and self.result.get("status") == "ok" and self.headline
                    and self.headline.get("value"))

    @property
    def figure(self) -> dict:
        """The headline of a step that was measured (measure() refuses one that was not)."""
        if self.headline is None:
            raise DnnbenchError(f"{self.image}: not measured")
        return self.headline


def image_list(images: list[str] | None, bases: str | None) -> list[tuple[str, str | None]]:
    """The ordered list as (image ref, base name or None): given images in order, or the
    catalog's bases of one family from one end of a range to the other (`ngc-24.01..ngc-25.06`)."""
    if bool(images) == bool(bases):
        raise DnnbenchError("give the images in order (--images A,B,C) or a range of bases (--bases X..Y), "
                            "one of the two")
    if images:
        if len(images) < 2:
            raise DnnbenchError("--images needs at least two images, in release order")
        if len(set(images)) != len(images):
            raise DnnbenchError("--images names an image twice")
        return [(i, None) for i in images]
    from dnnbench.containers import catalog
    ends = (bases or "").split("..")
    if len(ends) != 2 or not all(ends):
        raise DnnbenchError(f"--bases {bases!r}: give a range FIRST..LAST, e.g. ngc-24.01..ngc-25.06")
    known = catalog.catalog()
    for end in ends:
        if end not in known:
            raise DnnbenchError(f"--bases: {end!r} is not in the catalog (`dnnbench bases` lists them)")
    first, last = (known[e] for e in ends)
    if first.family != last.family:
        raise DnnbenchError(f"--bases: {first.name} and {last.name} are of different families")
    family = [b.name for b in known.values() if b.family == first.family]
    order = sorted(family, key=_release_key)
    i, j = order.index(first.name), order.index(last.name)
    if i >= j:
        raise DnnbenchError(f"--bases: {first.name} must be older than {last.name}")
    return [(known[n].tag, n) for n in order[i:j + 1]]


def _release_key(name: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", name))


def _slug(index: int, image: str) -> str:
    tail = re.sub(r"[^A-Za-z0-9_.-]+", "_", image.rsplit("/", 1)[-1]).strip("._-")[:60] or "image"
    return f"{index:02d}-{tail}"


def _interrupted(image: str) -> DnnbenchError:
    return DnnbenchError(f"interrupted while measuring {image}: the same command resumes, reading back the "
                         f"steps that finished", exit_code=130)


def measure(step: Step, base: str | None, template: RunOptions, *, windows_scale: int = 1) -> Step:
    """Run the job on one image (or read back a finished run), and take its headline."""
    from dnnbench.results import numbers
    from dnnbench.runs.launch import build_plan, execute
    from dnnbench.workloads import schema
    run_dir = step.run_dir if windows_scale == 1 else step.run_dir.with_name(f"{step.run_dir.name}-more")
    result_file = run_dir / schema.RESULT_FILE
    if result_file.is_file() and not result_file.is_symlink():   # resumed: a finished step is read back
        try:
            data = schema.read(str(result_file))
        except (OSError, ValueError):
            data = None
        if data and data.get("status") == "ok":
            step.result, step.headline, step.reused = data, numbers.run_headline(data), True
            return step
    opts = dataclasses.replace(template, image=None if base else step.image, base=base, build=True if base else False,
                               run_dir=run_dir, run_id=f"{template.run_id}.{run_dir.name}", quiet=True,
                               repeat=(template.repeat or 5) * windows_scale,
                               # more windows: the bound on them grows with them
                               max_windows=template.max_windows and template.max_windows * windows_scale)
    plan = build_plan(opts, resume=True)
    info(f"[{step.index}] {step.image}: measuring" + (" again, with more windows" if windows_scale > 1 else ""))
    data, _ = execute(plan, quiet=True)
    step.result, step.headline = data, numbers.run_headline(data) if data.get("status") == "ok" else None
    if data.get("status") == "interrupted":
        raise _interrupted(step.image)
    if not step.ok:
        raise DnnbenchError(f"{step.image}: the run ended {data.get('status')}: {data.get('message')} "
                            f"(its log: {run_dir / 'log.txt'})")
    return step


def verdict(a: Step, b: Step, tolerance: float) -> tuple[str, dict]:
    """b against a: same, faster, slower or inconclusive, with b/a and its CI."""
    from dnnbench.results import numbers
    r = numbers.ratio(a.figure, b.figure)
    return numbers.compare_verdict(r, tolerance), r


def side(good: Step, bad: Step, mid: Step) -> str:
    """A midpoint judged against both ends: the 95 % CI of mid/good wholly above the geometric
    middle of good and bad is `good`, wholly below it `bad`, across it `inconclusive`."""
    from dnnbench.results import numbers
    middle = (bad.figure["value"] / good.figure["value"]) ** 0.5
    r = numbers.ratio(good.figure, mid.figure)
    if r["low"] is None:
        return "inconclusive"
    return "good" if r["low"] > middle else "bad" if r["high"] < middle else "inconclusive"


def _pct(r: dict) -> str:
    if r.get("value") is None:
        return "-"
    half = None if r.get("low") is None else (r["high"] - r["low"]) / 2 * 100
    return f"{(r['value'] - 1) * 100:+.1f} %" + ("" if half is None else f" +- {half:.1f} %")


def facts(step: Step) -> dict:
    system = (step.result or {}).get("system") or {}
    return {k: system.get(k) for k in FACTS if system.get(k) is not None}


def changed_facts(a: Step, b: Step) -> list[str]:
    fa, fb = facts(a), facts(b)
    return [f"{k}: {fa.get(k, '?')} -> {fb.get(k, '?')}" for k in FACTS if fa.get(k) != fb.get(k)]


def _template(opts: RunOptions, tolerance: float) -> RunOptions:
    if not 0 < tolerance < 1:
        raise DnnbenchError(f"--tolerance {tolerance}: give a fraction above 0 and below 1, e.g. 0.05")
    # windows until the CI is within half the tolerance: two images closer than that are `same`
    return dataclasses.replace(opts, until_ci=opts.until_ci or round(tolerance * 100 / 2, 3),
                               max_windows=opts.max_windows or 30)


def _folder(opts: RunOptions, kind: str) -> Path:
    from dnnbench import names
    name = opts.run_id or f"{kind}-{opts.workload}"
    names.path_component(name, "--run-id")
    return Path(opts.results) / name


def _check_first(opts: RunOptions, listed: list[tuple[str, str | None]], folder: Path) -> bool:
    """Every image's plan checked (workload, options, data, runtime) before the first run; with
    --dry-run, the list and the first step's command line shown instead. True: go on."""
    from dnnbench.runs import plan as plan_mod
    from dnnbench.runs.launch import build_plan
    plans = [build_plan(dataclasses.replace(opts, image=None if base else image, base=base, dry_run=True,
                                            run_dir=folder / _slug(i, image), run_id=f"{folder.name}.{_slug(i, image)}"))
             for i, (image, base) in enumerate(listed)]
    if opts.dry_run:
        out.print(f"{len(listed)} images, in order; steps in {escape(str(folder))}/NN-image/:")
        for i, (image, base) in enumerate(listed):
            out.print(f"  {i:2d}  {escape(image)}" + (f"  (base {escape(base)})" if base else ""))
        out.print(plan_mod.command_line(plans[0]), markup=False, highlight=False, soft_wrap=True)
    return not opts.dry_run


def _rounds_pooled(runs: list[Step]) -> Step:
    """One image's rounds as one step: the first round's result (its facts), the headline of
    all its rounds pooled as `report` pools a job's runs (the wider of the runs' and the
    windows' CIs), so a machine whose load moved between rounds widens the CI instead of
    turning into a verdict."""
    from dnnbench.results import numbers
    if len(runs) == 1:
        return runs[0]
    return dataclasses.replace(runs[0], headline=numbers.job_headline([s.result for s in runs if s.result]),
                               reused=all(s.reused for s in runs))


def compare_images_command(opts: RunOptions, images: list[str] | None, bases: str | None, tolerance: float,
                           wide: bool = False, rounds: int = 1) -> int:
    listed = image_list(images, bases)
    template = _template(opts, tolerance)
    folder = _folder(opts, "images")
    template = dataclasses.replace(template, run_id=folder.name)
    if not _check_first(template, listed, folder):
        return 0
    # Round 1 in list order, round 2 reversed, and so on (A B, B A, A B...): a load that grows or
    # fades while the images are measured weighs on each of them alike.
    order = list(enumerate(listed))
    runs: dict[int, list[Step]] = {i: [] for i, _ in order}
    for n in range(rounds):
        for i, (img, base) in (order if n % 2 == 0 else order[::-1]):
            name = _slug(i, img) + ("" if n == 0 else f"-round{n + 1}")
            runs[i].append(measure(Step(i, img, folder / name), base, template))
    steps = [_rounds_pooled(runs[i]) for i, _ in order]
    rows = []
    for s in steps:
        v, r = verdict(steps[0], s, tolerance) if s is not steps[0] else ("first", {"value": 1.0})
        f = facts(s)
        rows.append([escape(s.image), escape(str(f.get("pytorch", "-"))), escape(str(f.get("cuda", "-"))),
                     escape(str(f.get("cudnn", "-"))), escape(str(f.get("nccl", "-"))),
                     f"{s.figure['value']:,.2f}", _ci(s.figure), f"{r['value']:.3f}", v])
    print_table(f"{escape(opts.workload)} on {len(steps)} images (verdict against the first, tolerance "
                f"{tolerance:g}" + (f", {rounds} rounds in alternating order" if rounds > 1 else "")
                + f"; results in {escape(str(folder))})",
                [Column("image", key=True), Column("pytorch", rank=5), Column("cuda", rank=4),
                 Column("cudnn", rank=2), Column("nccl", rank=2), Column("throughput", right=True, rank=9),
                 Column("+-95%", right=True, rank=7), Column("ratio", right=True, rank=8), Column("verdict", decides=True)],
                rows, wide=wide)
    return 0


def _ci(h: dict) -> str:
    return "-" if h.get("ci95_pct") is None else f"{h['ci95_pct']:.1f} %"


def bisect_command(opts: RunOptions, good: str | None, bad: str | None, images: list[str] | None,
                   bases: str | None, tolerance: float) -> int:
    """Measure both ends, then halve the list until the first slower image is found; exit 0 with
    the answer, 1 when the ends are the same within noise or a midpoint stays inconclusive."""
    started = time.monotonic()
    if images is None and bases is None:
        if not (good and bad):
            raise DnnbenchError("give --good and --bad, and the list between them (--images or --bases)")
        images = [good, bad]
    listed = image_list(images, bases)
    refs = [img for img, _ in listed]
    bases_named = [b for _, b in listed]

    def position(end: str | None, default: int, flag: str) -> int:
        if end is None:
            return default
        for i, (img, base) in enumerate(listed):
            if end in (img, base):
                return i
        raise DnnbenchError(f"{flag} {end!r} is not in the list ({', '.join(b or i for i, b in listed)})")
    lo, hi = position(good, 0, "--good"), position(bad, len(listed) - 1, "--bad")
    if lo >= hi:
        raise DnnbenchError("--good must come before --bad in the list (oldest first)")
    template = _template(opts, tolerance)
    folder = _folder(opts, "bisect")
    template = dataclasses.replace(template, run_id=folder.name)
    if not _check_first(template, listed[lo:hi + 1], folder):
        return 0
    steps: dict[int, Step] = {}

    def at(i: int, scale: int = 1) -> Step:
        step = steps.get(i) or Step(i, refs[i], folder / _slug(i, refs[i]))
        try:
            steps[i] = measure(step, bases_named[i], template, windows_scale=scale)
        except KeyboardInterrupt:    # between two steps' runs: the same word as within one
            raise _interrupted(refs[i]) from None
        return steps[i]

    g, b = at(lo), at(hi)
    v, r = verdict(g, b, tolerance)
    if v == "inconclusive":
        g, b = at(lo, 2), at(hi, 2)
        v, r = verdict(g, b, tolerance)
    if v != "slower":
        out.print(f"the ends are {'the same within noise' if v == 'same' else v}: {escape(refs[hi])} vs "
                  f"{escape(refs[lo])} {_pct(r)} (tolerance {tolerance:g}); nothing to bisect")
        _footer(steps, started, folder)
        return 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        m = at(mid)
        v = side(g, b, m)
        if v == "inconclusive":
            m = at(mid, 2)
            v = side(g, b, m)
        if v == "bad":
            hi, b = mid, m
        elif v == "good":
            lo, g = mid, m
        else:
            out.print(f"{escape(refs[mid])} stays inconclusive against {escape(refs[lo])} after a re-run: the "
                      f"first slower image is {escape(refs[mid])} or one after it, up to {escape(refs[hi])}")
            _footer(steps, started, folder)
            return 1
    _, r = verdict(g, b, tolerance)
    out.print(f"first slower: {escape(refs[hi])} ({_pct(r)}), last good: {escape(refs[lo])}")
    changes = changed_facts(g, b)
    out.print("what changed: " + (escape("; ".join(changes)) if changes else "none of " + ", ".join(FACTS)))
    _footer(steps, started, folder)
    return 0


def _footer(steps: dict, started: float, folder: Path) -> None:
    ran = sum(1 for s in steps.values() if not s.reused)
    out.print(f"{len(steps)} images measured ({ran} run now, {len(steps) - ran} read back) in "
              f"{time.monotonic() - started:.0f} s; results in {escape(str(folder))} (`dnnbench report` reads them)")
