"""Which release made it slower: the same job on an ordered list of images (`compare-images`),
and a binary search of that list between a good and a bad end (`bisect`).

Every step is an ordinary run under one folder (RESULTS/<name>/<NN>-<image>[-roundK]/), so
`report` and `compare` read them. The evidence is rounds (results/rounds.py): the images
measured in alternating order (A B, B A, ...), judged on the rounds' paired ratios with the
sequential rule there; a verdict the rounds do not support is "inconclusive", never a guess.

A step that already has a good result is read back instead of run again (an interrupted bisect
resumes where it stopped), but only when what defines it matches: the workload, every option
that changes the work, the image by digest (the .sif by SHA-256) and the dataset's fingerprint,
kept in the step's `step.json`. Otherwise it is measured again beside it, the reason said.
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import time
from pathlib import Path

from dnnbench.campaigns import threads
from dnnbench.console import Column, escape, info, out, print_table, warn
from dnnbench.containers import same_image
from dnnbench.errors import DnnbenchError
from dnnbench.results import rounds as rounds_mod
from dnnbench.runs.options import RunOptions
from dnnbench.workloads import fileio

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
    seconds: float = 0.0          # wall time of the run made now (0 when read back)
    load: float | None = None     # the machine's 1-minute load average over the run

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


def step_slug(index: int, image: str) -> str:
    tail = re.sub(r"[^A-Za-z0-9_.-]+", "_", image.rsplit("/", 1)[-1]).strip("._-")[:60] or "image"
    return f"{index:02d}-{tail}"


def _interrupted(image: str) -> DnnbenchError:
    return DnnbenchError(f"interrupted while measuring {image}: the same command resumes, reading back the "
                         f"steps that finished", exit_code=130)


# --- identity before reuse ---------------------------------------------------------------------

# the options that change the work a step measures (the rest only change how long it is timed)
WORK_OPTIONS = ("batch_size", "workers", "loader", "amp", "channels_last", "compile", "fused", "no_cudnn_benchmark",
                "malloc_defaults", "seed", "lr", "start_iter", "stop_iter", "gpus", "nproc", "runtime", "data")
STEP_FILE = "step.json"


def image_digest(runtime: str, image: str | None) -> str | None:
    """The image by digest as the result's manifest records it (docker: the image id; a .sif:
    its SHA-256); None when it cannot be read (not pulled or built yet)."""
    from dnnbench.runs.manifest import host_manifest
    if not image:
        return None
    digest = host_manifest(runtime, image, None, None).get("image") or {}
    return digest.get("id") or digest.get("sha256")


def identity(template: RunOptions, image: str, dataset: dict | None) -> dict:
    """What defines a step: workload, the options that change the work, the workload's own
    arguments, the run's --env, the dataset's fingerprint (the image's digest is checked against
    the result's own manifest)."""
    opts = {k: getattr(template, k) for k in WORK_OPTIONS}
    opts["data"] = None if opts["data"] is None else str(opts["data"])
    return {"workload": template.workload, "image": image, "options": opts, "extra": list(template.extra),
            "env": {k: str(v) for k, v in sorted((template.env or {}).items())},
            "dataset": (dataset or {}).get("sha256") if isinstance(dataset, dict) else None}


def dataset_identity(template: RunOptions) -> dict | None:
    from dnnbench.workloads.manifest import dataset_fingerprint
    return dataset_fingerprint(str(template.data)) if template.data else None


def _recorded_digest(data: dict) -> str | None:
    host = ((data.get("manifest") or {}).get("host") or {}) if isinstance(data.get("manifest"), dict) else {}
    image = host.get("image") if isinstance(host, dict) else None
    return (image.get("id") or image.get("sha256")) if isinstance(image, dict) else None


def mismatch(data: dict, stored: object, want: dict, digest: str | None) -> str | None:
    """Why a finished step is not this step (one line), or None when it is."""
    if data.get("workload") != want["workload"]:
        return f"it measured {data.get('workload')!r}, not {want['workload']!r}"
    if not isinstance(stored, dict):
        return f"it records no identity ({STEP_FILE})"
    for key in ("image", "extra", "env", "dataset"):
        if stored.get(key) != want[key]:
            what = {"image": "the image", "extra": "the workload's arguments", "env": "--env",
                    "dataset": "the dataset's fingerprint"}[key]
            return f"{what} differ{'s' if key != 'extra' else ''}: {stored.get(key)!r}, now {want[key]!r}"
    old: dict = stored["options"] if isinstance(stored.get("options"), dict) else {}
    for key, value in want["options"].items():
        if old.get(key) != value:
            return f"--{key.replace('_', '-')} was {old.get(key)!r}, now {value!r}"
    recorded = _recorded_digest(data)
    if digest is None or recorded != digest:
        return f"the image's digest was {str(recorded)[:19]}, now {str(digest)[:19]}"
    return None


def _read_result(run_dir: Path) -> dict | None:
    from dnnbench.workloads import schema
    result_file = run_dir / schema.RESULT_FILE
    if not fileio.is_regular(str(result_file)):
        return None
    try:
        return schema.read(str(result_file))
    except (OSError, ValueError):
        return None


def place(slot: Path, want: dict, digest: str | None) -> tuple[Path, dict | None, str]:
    """Where this measurement goes: (folder, its finished result to read back or None, why the
    slot itself was passed over). A slot holding a step of another identity is kept as it is;
    the measurement goes beside it (SLOT-again2, -again3, ...)."""
    why = ""
    for n in range(1, 10):
        folder = slot if n == 1 else slot.with_name(f"{slot.name}-again{n}")
        data = _read_result(folder)
        if data is None or data.get("status") != "ok":
            return folder, None, why     # nothing finished there: (re)run in it
        try:
            stored = fileio.read_json(str(folder / STEP_FILE))
        except (OSError, ValueError):
            stored = None
        reason = mismatch(data, stored, want, digest)
        if reason is None:
            return folder, data, why
        why = why or reason
    raise DnnbenchError(f"{slot}: nine steps of other identities beside it; give another --run-id")


# --- one measurement ---------------------------------------------------------------------------

def _load_now() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def measure(step: Step, base: str | None, template: RunOptions, *, dataset: dict | None = None) -> Step:
    """Run the job on one image (or read back a finished run of the same identity), and take its
    headline."""
    from dnnbench.results import load, numbers
    from dnnbench.runs.launch import build_plan, execute
    want = identity(template, step.image, dataset)
    digest = image_digest(template.runtime, step.image)
    run_dir, data, why = place(step.run_dir, want, digest)
    if why:
        info(f"[{step.index}] {step.image}: measured again, not read back from {step.run_dir.name}: {why}")
    step.run_dir = run_dir
    if data is not None:    # resumed: a finished step of this identity is read back
        step.result, step.headline, step.reused = data, numbers.run_headline(data), True
        step.load = load.of_result(data).get("load1")
        return step
    opts = dataclasses.replace(template, image=None if base else step.image, base=base, build=True if base else False,
                               run_dir=run_dir, run_id=f"{template.run_id}.{run_dir.name}", quiet=True,
                               repeat=template.repeat or 5)
    before, started = _load_now(), time.monotonic()
    if template.slurm is not None:     # --slurm: a one-node job, its result in this same folder
        from dnnbench.runs.slurm import step_job
        data = step_job(opts)
    else:
        data, _ = execute(build_plan(opts, resume=True), quiet=True)
    step.seconds = time.monotonic() - started
    step.result, step.headline = data, numbers.run_headline(data) if data.get("status") == "ok" else None
    if data.get("status") == "interrupted":
        raise _interrupted(step.image)
    if not step.ok:
        job = (data.get("host") or {}).get("slurm_job")
        said = f"Slurm job {job} ({'-'.join((data.get('host') or {}).get('slurm_states') or []) or 'no state seen'})" \
            if job else "the run"
        log = run_dir / (f"slurm-{job}.out" if job else "log.txt")
        why = str(data.get("message")).strip().rstrip(":")    # "no result (exit 3): " when the log is empty
        raise DnnbenchError(f"{step.image}: {said} ended {data.get('status')}: {why} (its log: {log})")
    step.load = load.of_result(data).get("load1")
    if step.load is None:
        after = _load_now()
        step.load = None if before is None or after is None else (before + after) / 2
    try:
        fileio.write_json(str(run_dir / STEP_FILE), want)
    except OSError as exc:
        warn(f"{run_dir / STEP_FILE}: not written ({exc.strerror or exc}): the step will be measured again")
    return step


class Enough(Exception):
    """--max-runs or --deadline reached before the next run: the search stops with the verdict
    so far (`ends`, `middle`: the judgements of the stage it stopped in)."""

    def __init__(self, why: str):
        super().__init__(why)
        self.ends: rounds_mod.Judgement | None = None
        self.middle: rounds_mod.Judgement | None = None


@dataclasses.dataclass
class Budget:
    """The runs and time a search may take (--max-runs, --deadline in minutes), shared by every
    session of one command; checked before each run, never inside one."""
    max_runs: int | None = None
    deadline: float | None = None
    ran: int = 0
    started: float = dataclasses.field(default_factory=time.monotonic)

    def check(self) -> None:
        if self.max_runs is not None and self.ran >= self.max_runs:
            raise Enough(f"--max-runs {self.max_runs} reached")
        if self.deadline is not None and time.monotonic() - self.started >= self.deadline * 60:
            raise Enough(f"--deadline {self.deadline:g} min reached")

    def left(self) -> float | None:
        """Seconds until the deadline (None without one)."""
        return None if self.deadline is None else max(0.0, self.deadline * 60 - (time.monotonic() - self.started))


class Rounds:
    """Measurements in rounds, each image's k-th in its NN-image[-roundK] folder, with a line per
    figure as it lands (its round, load, the share of it spent waiting for a CPU and an estimate
    of the time left)."""

    def __init__(self, folder: Path, listed: list[tuple[str, str | None]], template: RunOptions, planned: int,
                 budget: Budget | None = None):
        self.folder, self.listed, self.template = folder, listed, template
        self.count: dict[int, int] = {}
        self.steps: list[Step] = []
        self.planned = planned          # the most runs still to come, updated by the caller
        self.dataset = dataset_identity(template)
        self.budget = budget or Budget()

    def take(self, i: int, round_no: int, of: int) -> Step:
        image, base = self.listed[i]
        self.budget.check()
        k = self.count.get(i, 0)
        self.count[i] = k + 1
        slot = self.folder / (step_slug(i, image) + ("" if k == 0 else f"-round{k + 1}"))
        try:
            step = measure(Step(i, image, slot), base, self.template, dataset=self.dataset)
        except KeyboardInterrupt:    # between two steps' runs: the same word as within one
            raise _interrupted(image) from None
        self.steps.append(step)
        self.budget.ran += 0 if step.reused else 1
        self.planned = max(0, self.planned - 1)
        ran = [s.seconds for s in self.steps if not s.reused]
        most = None if not ran or not self.planned else self.planned * sum(ran) / len(ran)
        if self.budget.max_runs is not None and ran:
            most = min(most or 0.0, max(0, self.budget.max_runs - self.budget.ran) * sum(ran) / len(ran))
        if self.budget.left() is not None and most is not None:
            most = min(most, self.budget.left() or 0.0)
        left = f"; at most ~{_duration(most)} left" if most else ""
        ci, waited = step.figure.get("ci95_pct"), step.figure.get("contention")
        info(f"[round {round_no} of <={of}] {step.run_dir.name}: {step.figure['value']:,.3g}/s"
             + ("" if ci is None else f" +-{ci:.1f} %") + ("" if step.load is None else f", load {step.load:.1f}")
             + ("" if waited is None or waited < rounds_mod.CONTENTION else f", {waited * 100:.0f} % waiting")
             + (" (read back)" if step.reused else f" ({step.seconds:.0f} s)") + left)
        return step

    def round(self, members: list[int], n: int, of: int) -> dict[int, Step]:
        """Round n (0-based): the members in order, reversed on odd rounds."""
        return {i: self.take(i, n + 1, of) for i in rounds_mod.order(members, n)}


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _basis(table: list[dict[int, Step]], members: list[int]) -> tuple[str, str]:
    """The figure the rule judges these members' rounds on (wall or contention-corrected), and
    the line that says so (rounds.basis): one basis for every side."""
    return rounds_mod.basis([r[i].figure for r in table for i in members])


def _logs(table: list[dict[int, Step]], a: int, b: int, key: str = "value") -> list[float]:
    return rounds_mod.log_ratios([r[a].figure[key] for r in table], [r[b].figure[key] for r in table])


def _loads(table: list[dict[int, Step]], members: list[int]) -> list[float]:
    """Each round's load: the mean of its runs' 1-minute load averages (None left out)."""
    out = []
    for r in table:
        values = [x for x in (r[i].load for i in members) if x is not None]
        if values:
            out.append(sum(values) / len(values))
    return out


def _mid_logs(table: list[dict[int, Step]], g: int, m: int, b: int, key: str = "value") -> list[float]:
    """Per round log(mid / geometric middle of the ends)."""
    return [math.log(r[m].figure[key]) - (math.log(r[g].figure[key]) + math.log(r[b].figure[key])) / 2
            for r in table]


def _pct(j: rounds_mod.Judgement) -> str:
    return j.pct()


def facts(step: Step) -> dict:
    system = (step.result or {}).get("system") or {}
    return {k: system.get(k) for k in FACTS if system.get(k) is not None}


def changed_facts(a: Step, b: Step) -> list[str]:
    fa, fb = facts(a), facts(b)
    return [f"{k}: {fa.get(k, '?')} -> {fb.get(k, '?')}" for k in FACTS if fa.get(k) != fb.get(k)]


def job_template(opts: RunOptions, tolerance: float) -> RunOptions:
    if not 0 < tolerance < 1:
        raise DnnbenchError(f"--tolerance {tolerance}: give a fraction above 0 and below 1, e.g. 0.05")
    # windows until the CI is within half the tolerance: two images closer than that are `same`
    return threads.one_thread(dataclasses.replace(opts, until_ci=opts.until_ci or round(tolerance * 100 / 2, 3),
                                                  max_windows=opts.max_windows or 30))


def comparison_folder(opts: RunOptions, kind: str) -> Path:
    from dnnbench import names
    name = opts.run_id or f"{kind}-{opts.workload}"
    names.path_component(name, "--run-id")
    return Path(opts.results) / name


def check_first(opts: RunOptions, listed: list[tuple[str, str | None]], folder: Path) -> bool:
    """Every image's plan checked (workload, options, data, runtime) before the first run; with
    --dry-run, the list and the first step's command line shown instead. True: go on."""
    said = threads.said(opts)
    if said:
        info(said)
    from dnnbench.runs import plan as plan_mod
    from dnnbench.runs.launch import build_plan
    steps = [dataclasses.replace(opts, image=None if base else image, base=base, dry_run=True,
                                 run_dir=folder / step_slug(i, image), run_id=f"{folder.name}.{step_slug(i, image)}")
             for i, (image, base) in enumerate(listed)]
    if opts.slurm is not None:   # each step's job script, checked as `dnnbench slurm --dry-run` checks it
        from dnnbench.runs import slurm
        scripts = [slurm.render(slurm.step_options(step), dry_run=True)[0] for step in steps]
        from dnnbench.containers.engines import named
        for image, base in listed:      # the dry-run script takes a .sif that is not there: refused now
            if not base:
                named(opts.runtime).planned(image, None)
        if opts.dry_run:
            out.print(f"{len(listed)} images, in order, each run a one-node Slurm job; steps in "
                      f"{escape(str(folder))}/NN-image/: " + ", ".join(escape(i) for i, _ in listed))
            out.print(f"the first step's job script:\n{scripts[0]}", markup=False, highlight=False, soft_wrap=True,
                      end="")
        return not opts.dry_run
    plans = [build_plan(step) for step in steps]
    if opts.dry_run:
        from dnnbench.containers.engines import named
        engine = named(plans[0].runtime)
        out.print(f"{len(listed)} images, in order; steps in {escape(str(folder))}/NN-image/:")
        for i, (image, base) in enumerate(listed):
            ref = plans[i].image
            missing = ref is not None and engine.has_image(ref) is False
            out.print(f"  {i:2d}  {escape(image)}" + (f"  (base {escape(base)})" if base else "")
                      + ("  (not on this machine)" if missing else ""))
        out.print(plan_mod.command_line(plans[0]), markup=False, highlight=False, soft_wrap=True)
    return not opts.dry_run


def rounds_limit(rounds: int | None) -> int:
    n = rounds_mod.MAX_ROUNDS if rounds is None else rounds
    if n < 1:
        raise DnnbenchError(f"--rounds {n}: give 1 or more")
    return n


def _pooled(runs: list[Step]) -> dict:
    """An image's throughput over its rounds, pooled as `report` pools a job's runs."""
    from dnnbench.results import numbers
    return numbers.job_headline([s.result for s in runs if s.result])


def compare_images_command(opts: RunOptions, images: list[str] | None, bases: str | None, tolerance: float,
                           wide: bool = False, rounds: int | None = None) -> int:
    listed = image_list(images, bases)
    max_rounds = rounds_limit(rounds)
    template = job_template(opts, tolerance)
    folder = comparison_folder(opts, "images")
    template = dataclasses.replace(template, run_id=folder.name)
    same = same_image.firsts(template.runtime, [img for img, _ in listed])   # measured once, said
    for i, k in same.items():
        out.print(escape(same_image.said(listed[k][0], listed[i][0], template.runtime)), soft_wrap=True)
    if len(same) == len(listed) - 1:
        out.print(f"all {len(listed)} names are the same image: nothing measured")
        return 0
    if not check_first(template, listed, folder):
        return 0
    # Round 1 in list order, round 2 reversed, and so on (A B, B A, A B...): a load that grows or
    # fades while the images are measured weighs on each of them alike. Rounds are added until
    # every image's verdict against the first is decided, or max_rounds.
    members = [i for i in range(len(listed)) if i not in same]
    session = Rounds(folder, listed, template, max_rounds * len(members))
    table: list[dict[int, Step]] = []
    judged: dict[int, rounds_mod.Judgement] = {}
    for n in range(max_rounds):
        table.append(session.round(members, n, max_rounds))
        loads = _loads(table, members)
        key, note = _basis(table, members)
        judged = {i: rounds_mod.judge(_logs(table, 0, i, key), tolerance, max_rounds, loads=loads, basis=note)
                  for i in members[1:]}
        if all(j.done for j in judged.values()):
            break
        session.planned = (max_rounds - n - 1) * len(members)
    from dnnbench.results import load
    rows, wide_lines = [], []
    for i in range(len(listed)):
        if i in same:
            rows.append([escape(listed[i][0]), "-", "-", "-", "-", "-", "-", "-", "-",
                         f"the same image as {escape(listed[same[i]][0])}"])
            continue
        runs = [r[i] for r in table]
        figure, f = _pooled(runs), facts(runs[0])
        said = load.explain(figure, [w for s in runs for w in (s.result or {}).get("windows") or []])
        if said:
            ci = "no 95% CI" if figure.get("ci95_pct") is None else f"+-95% CI {figure['ci95_pct']:.1f} %"
            wide_lines.append(f"{listed[i][0]}: {ci}, wide: {said}")
        j = judged.get(i)
        span = "-" if j is None or j.low is None else f"{j.low:.3f}-{j.high:.3f}"
        rows.append([escape(listed[i][0]), escape(str(f.get("pytorch", "-"))), escape(str(f.get("cuda", "-"))),
                     escape(str(f.get("cudnn", "-"))), escape(str(f.get("nccl", "-"))), _fmt(figure.get("value")),
                     _ci(figure), span, "1.000" if j is None else f"{j.ratio:.3f}", "first" if j is None else j.verdict])
    print_table(f"{escape(opts.workload)} on {len(listed)} images (verdict against the first, tolerance "
                f"{tolerance:g}, {len(table)} round{'s' if len(table) > 1 else ''} in alternating order, at most "
                f"{max_rounds}; results in {escape(str(folder))})",
                [Column("image", key=True), Column("pytorch", rank=5), Column("cuda", rank=4),
                 Column("cudnn", rank=2), Column("nccl", rank=2), Column("throughput", right=True, rank=9),
                 Column("+-95%", right=True, rank=6), Column("ratio CI", right=True, rank=7),
                 Column("ratio", right=True, headline=True), Column("verdict", decides=True)],
                rows, wide=wide)
    from rich.text import Text

    from dnnbench.results import numbers
    unit = next((s.result.get("unit") for r in table for s in r.values() if s.result and s.result.get("unit")), "")
    out.print(Text(f"throughput: {numbers.STATISTIC} over all of an image's runs{', ' + unit if unit else ''}; "
                   "ratio: against the first, the geometric mean of the rounds' ratios (each round measures both "
                   "side by side, so it need not equal throughput/throughput); ratio CI: its 99 % interval"),
              style="dim")
    for line in wide_lines:   # the pooled figure's CI: why it is wide (the verdict needs no narrow one)
        out.print(escape(line))
    for i, j in judged.items():
        if j.why:
            out.print(f"{escape(listed[i][0])}: {j.verdict} after {j.rounds} round{'s' if j.rounds != 1 else ''}: "
                      f"{escape(j.why)}")
    return 0


def _fmt(value) -> str:
    from dnnbench.results import numbers
    return "-" if value is None else numbers.fmt(value)


def _ci(h: dict) -> str:
    return "-" if h.get("ci95_pct") is None else f"{h['ci95_pct']:.1f} %"


@dataclasses.dataclass
class Search:
    """What bisect's rounds found: how it ended ("found"; "ends": the ends not decidedly apart,
    nothing to bisect; "range": a midpoint undecided; "stopped": --max-runs or --deadline before
    an answer), the range lo..hi the evidence supports,
    the ends' judgement, the last one (the first slower against the last good, or the undecided
    midpoint's) and that midpoint."""
    how: str
    lo: int
    hi: int
    ends: rounds_mod.Judgement
    last: rounds_mod.Judgement
    mid: int | None = None
    stopped: str = ""       # "stopped": what stopped it (--max-runs, --deadline)


def _stage(round_of, lo: int, mid: int | None, hi: int, tolerance: float, max_rounds: int, ends_too: bool):
    """Rounds of the ends (good bad, bad good, ...), or of a midpoint with both ends of its range
    (good mid bad, bad mid good, ...: the midpoint in the middle of every round, so a drift within
    a round weighs on it as on the ends' middle), until what it judges is decided or max_rounds:
    the ends' ratio (`ends_too`), the midpoint's side on log(mid / geometric middle of the ends).
    Each judgement is the rule's at the look where it was decided, kept from then on. Returns
    (the ends' judgement or None, the midpoint's or None, the rounds).

    Judging the ends on the first midpoint's rounds was measured and left out (BENCHMARKS.md:
    6 runs fewer where the rounds decide a drop, more where nothing decides, and a ramp leaves
    a small drop undecided twice as often)."""
    table: list[dict] = []
    ends = middle = None
    members = [lo, hi] if mid is None else [lo, hi, mid] if ends_too else [lo, mid, hi]
    for n in range(max_rounds):
        try:
            table.append(round_of(members, n, max_rounds))
        except Enough as stop:      # the verdict so far goes with it
            stop.ends, stop.middle = ends, middle
            raise
        loads = _loads(table, members)
        key, note = _basis(table, members)
        if ends_too and (ends is None or not ends.done):
            ends = rounds_mod.judge(_logs(table, lo, hi, key), tolerance, max_rounds, loads=loads, basis=note)
        if mid is not None and (middle is None or not middle.done):
            middle = rounds_mod.side(_mid_logs(table, lo, mid, hi, key), max_rounds, loads=loads, basis=note)
        if ends is not None and ends.done and ends.verdict != "slower":
            break     # nothing to bisect: a midpoint does not matter
        if (ends is None or ends.done) and (middle is None or middle.done):
            break
    return ends, middle, table


def search(round_of, lo: int, hi: int, tolerance: float, max_rounds: int) -> Search:
    """Bisect's search in rounds; `round_of(members, n, of)` measures round n of the members (in
    rounds_mod.order) and returns {index: Step}. The ends in rounds of their own until bad/good
    is decided; then each midpoint in rounds with the ends of its range; one it cannot place ends
    the search with the range that holds the first slower image."""
    try:
        ends, _, table = _stage(round_of, lo, None, hi, tolerance, max_rounds, True)
    except Enough as stop:      # the ends undecided: their judgement so far (none before a round)
        ends = stop.ends or rounds_mod.judge([], tolerance, max_rounds)
        return Search("stopped", lo, hi, ends, ends, stopped=str(stop))
    assert ends is not None
    if ends.verdict != "slower":
        return Search("ends", lo, hi, ends, ends)
    last = ends
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            _, middle, table = _stage(round_of, lo, mid, hi, tolerance, max_rounds, False)
        except Enough as stop:  # the range so far holds the first slower image
            return Search("stopped", lo, hi, ends, stop.middle or last, mid, stopped=str(stop))
        assert middle is not None
        key, note = _basis(table, [lo, mid, hi])
        if middle.verdict == "bad":
            last, hi = rounds_mod.judge(_logs(table, lo, mid, key), tolerance, len(table), basis=note), mid
        elif middle.verdict == "good":
            last, lo = rounds_mod.judge(_logs(table, mid, hi, key), tolerance, len(table), basis=note), mid
        else:
            return Search("range", lo, hi, ends, middle, mid)
    return Search("found", lo, hi, ends, last)


def bisect_command(opts: RunOptions, good: str | None, bad: str | None, images: list[str] | None,
                   bases: str | None, tolerance: float, rounds: int | None = None,
                   budget: Budget | None = None) -> int:
    """Measure both ends in rounds, then halve the list, each midpoint judged in rounds against
    both ends of its range, until the first slower image is found (`search`); exit 0 with the answer, 1 when the ends are
    not decidedly apart or a midpoint stays inconclusive (then the range the evidence supports)."""
    started = time.monotonic()
    if images is None and bases is None:
        if not (good and bad):
            raise DnnbenchError("give --good and --bad, and the list between them (--images or --bases)")
        images = [good, bad]
    listed = image_list(images, bases)
    refs = [img for img, _ in listed]
    max_rounds = rounds_limit(rounds)

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
    template = job_template(opts, tolerance)
    folder = comparison_folder(opts, "bisect")
    template = dataclasses.replace(template, run_id=folder.name)
    if same_image.firsts(template.runtime, [refs[lo], refs[hi]]):     # one image: no run can tell them apart
        out.print(f"{escape(same_image.said(refs[lo], refs[hi], template.runtime))}: nothing to bisect")
        return 1
    if not check_first(template, listed[lo:hi + 1], folder):
        return 0
    steps = max(1, math.ceil(math.log2(hi - lo)))
    session = Rounds(folder, listed, template, max_rounds * (2 + (3 * steps if hi - lo > 1 else 0)), budget)
    found = search(session.round, lo, hi, tolerance, max_rounds)
    ends, lo, hi, last = found.ends, found.lo, found.hi, found.last
    if found.how == "stopped":
        out.print(escape(stopped_line(found, refs)))
        _footer(session, started, folder)
        return 1
    if found.how == "ends":
        said = {"same": "the same within the tolerance",
                "inconclusive": "not decidedly apart"}.get(ends.verdict, ends.verdict)
        out.print(f"the ends are {said}: {escape(refs[hi])} vs {escape(refs[lo])} {ends.pct()} after "
                  f"{ends.rounds} rounds (tolerance {tolerance:g}); nothing to bisect"
                  + (f"; {escape(ends.why)}" if ends.why else ""))
        _footer(session, started, folder)
        return 1
    if found.how == "range":
        assert found.mid is not None
        out.print(f"{escape(refs[found.mid])} stays inconclusive against both ends after {last.rounds} rounds "
                  f"({escape(last.why)}): the first slower image is after {escape(refs[lo])}, up to "
                  f"{escape(refs[hi])} (the images from {lo + 1} to {hi} of the list, counted from 0)")
        _footer(session, started, folder)
        return 1
    out.print(f"first slower: {escape(refs[hi])} ({last.pct()}), last good: {escape(refs[lo])}")
    if last.basis:
        out.print(escape(last.basis))
    at = {s.index: s for s in session.steps}
    changes = changed_facts(at[lo], at[hi])
    out.print("what changed: " + (escape("; ".join(changes)) if changes else "none of " + ", ".join(FACTS)))
    _footer(session, started, folder)
    return 0


def stopped_line(found: Search, refs: list[str]) -> str:
    """What a search stopped by --max-runs or --deadline had found: the ends' verdict so far, or
    the range that holds the first slower image."""
    if found.ends.verdict != "slower":
        return (f"stopped ({found.stopped}) before the ends were decided: {refs[found.hi]} vs {refs[found.lo]} "
                f"{found.ends.pct()} so far, {found.ends.verdict} after {found.ends.rounds} rounds"
                + (f"; {found.ends.why}" if found.ends.why else ""))
    return (f"stopped ({found.stopped}): {refs[found.hi]} is slower than {refs[found.lo]} ({found.ends.pct()}); "
            f"the first slower image is after {refs[found.lo]}, up to {refs[found.hi]}"
            + (f" ({refs[found.mid]} undecided so far)" if found.mid is not None else ""))


def _footer(session: Rounds, started: float, folder: Path) -> None:
    steps = session.steps
    ran = sum(1 for s in steps if not s.reused)
    images = len({s.index for s in steps})
    out.print(f"{images} images in {len(steps)} runs ({ran} run now, {len(steps) - ran} read back) in "
              f"{time.monotonic() - started:.0f} s; results in {escape(str(folder))} (`dnnbench report` reads them)")
