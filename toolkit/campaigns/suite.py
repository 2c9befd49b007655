"""`dnnbench suite run FILE`: many runs from one YAML file, with sweeps, repeats, timeouts,
per-GPU parallel copies (mila's multi-user mode), failures recorded and resumable; then the
file's watch list (campaigns/suite_watch.py)."""
from __future__ import annotations

import difflib
import fnmatch
import itertools
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from dnnbench import locks
from dnnbench.errors import DnnbenchError, EngineUnavailable
from dnnbench.campaigns import suite_watch
from dnnbench.campaigns.suite_schema import OPTION_NAMES
from dnnbench.workloads import fileio

FINAL = {"ok", "nan", "oom", "error", "timeout"}   # an interrupted run is redone on --resume (a train: job resumed)


@dataclass
class Run:
    job: str              # the job name reports group by: name-bsB[-amp]
    run_id: str           # folder under the suite's results: job/rN
    workload: str
    batch_size: int | None
    amp: str
    repeat_index: int
    spec: dict = field(default_factory=dict)


@dataclass
class Suite:
    name: str
    path: Path
    runs: list[Run]
    watches: list[suite_watch.Entry] = field(default_factory=list)


def _list(value):
    return value if isinstance(value, list) else [value]


def load(path: Path) -> Suite:
    from dnnbench import names, yaml_files
    from dnnbench.campaigns import suite_schema
    from dnnbench.runs.checks import check_extra, check_options
    from dnnbench.runs.options import RunOptions
    from dnnbench.workloads import WORKLOADS

    doc = yaml_files.load(path, "suite")
    suite_schema.check_top(doc, path)
    top = getattr(doc, "key_lines", {})
    suite_name = doc.get("name") or path.stem
    try:
        names.path_component(suite_name, "suite name")
    except DnnbenchError as exc:
        raise DnnbenchError(f"{path}:{top.get('name', 1)}: {exc}" + ("" if doc.get("name") else
                            " (the file's name is the suite's name: add a `name:`)")) from None
    raw_defaults = doc.get("defaults") or {}
    defaults = suite_schema.check_job(raw_defaults, lambda key: f"{path}:{getattr(raw_defaults, 'key_lines', {}).get(key, top.get('defaults', 1))}")
    runs, seen = [], set()
    for raw in doc.get("jobs") or []:
        line = getattr(raw, "line", top.get("jobs", 1))
        if not isinstance(raw, dict):
            raise DnnbenchError(f"{path}:{line}: each job is a mapping with at least `workload:`")
        where = lambda key: f"{path}:{getattr(raw, 'key_lines', {}).get(key, line)}"  # noqa: E731
        own = suite_schema.check_job(raw, where)
        shared = defaults.get("options", {})
        if {**defaults, **own}.get("train") is not None:   # benchmark windows (number, warmup) are not a training's:
            from dnnbench.workloads.train import SHARED      # the defaults it takes are those `train` has too
            shared = {k: v for k, v in shared.items() if k in SHARED}
        job = {**defaults, **own, "options": {**shared, **own.get("options", {})},
               "env": {**defaults.get("env", {}), **own.get("env", {})}}
        workload, script = job.get("workload"), job.get("script")
        if script is not None:
            if workload is not None or job.get("train") is not None:
                raise DnnbenchError(f"{where('script')}: a job is a `workload:` or a `script:`, not both"
                                    + (" (train a workload with `train:`)" if job.get("train") is not None else ""))
            from dnnbench.workloads.instrument import workload_name
            workload = workload_name(str(script).rstrip("/"))
        elif workload not in WORKLOADS:
            close = difflib.get_close_matches(str(workload), list(WORKLOADS), n=2)
            raise DnnbenchError(f"{where('workload')}: " + ("a job needs `workload:` (or `script:`)"
                                                            if workload is None else f"unknown workload {workload!r}")
                                + (f"; did you mean {', '.join(close)}?" if close else ""))
        else:
            for key in ("entry", "items_per_step", "unit", "run_to_end"):
                if job.get(key) is not None:
                    raise DnnbenchError(f"{where(key)}: `{key}:` goes with `script:`")
        name = job.get("name") or workload
        try:
            names.path_component(name, "job name")
            if script is None:   # a script's arguments are its own
                check_extra([str(x) for x in job.get("extra") or []])
        except DnnbenchError as exc:
            raise DnnbenchError(f"{where('name' if 'name' in str(exc) else 'extra')}: {exc}") from None
        repeats = job.get("repeats") or 1
        # a script's precision and batch are its own (its arguments after `--`)
        for b, a in itertools.product(_list(job.get("batch_size")), _list(job.get("amp") or ("none" if script is None
                                                                                              else None))):
            try:   # the run's own checks (counts, ranges), now rather than mid-suite
                check_options(RunOptions(workload=workload if script is None else "", batch_size=b, amp=a,
                                         nproc=job.get("nproc"), timeout=job.get("timeout"), **job["options"]))
            except DnnbenchError as exc:
                raise DnnbenchError(f"{where('options')}: {exc}") from None
            label = name + (f"-bs{b}" if b else "") + ("" if a in ("none", None) else f"-{a}")
            names.path_component(label, "job")
            if label in seen:
                raise DnnbenchError(f"{where('name')}: job {label!r} appears twice; give one a `name:`")
            seen.add(label)
            for r in range(1, repeats + 1):
                runs.append(Run(job=label, run_id=f"{label}/r{r}", workload=workload, batch_size=b, amp=a,
                                repeat_index=r, spec=job))
            if len(runs) > suite_schema.MAX_RUNS:
                raise DnnbenchError(f"{where('repeats')}: the suite expands to more than {suite_schema.MAX_RUNS} runs")
            if label == suite_watch.FOLDER and doc.get("watch"):
                raise DnnbenchError(f"{where('name')}: a job named {label!r} would share the watch list's folder; "
                                    f"give it another `name:`")
    return Suite(name=suite_name, path=path, runs=runs, watches=suite_watch.load(doc, path, defaults))


UNREADABLE = "unreadable"   # a result is there but cannot be read now: kept, never redone over


def _status(run_dir: Path) -> str | None:
    """The run's status; None when it left no result at all; UNREADABLE when a result is there
    that this dnnbench cannot read (a newer schema, a file being written, damage). A result
    that cannot be read is never a reason to delete: only a provably unfinished run is redone."""
    from dnnbench.workloads import schema
    path = run_dir / schema.RESULT_FILE
    if not os.path.lexists(path):
        return None
    try:
        return schema.read(str(path))["status"]
    except (OSError, ValueError):
        return UNREADABLE


def _options(run: Run, *, results: Path, run_id: str, overrides: dict, gpus: str | None,
             cpuset: str | None = None, memory: str | None = None):
    """RunOptions for one run; its folder is results/<run_id> (job/rN[/copy]), its id a slug of it
    with the suite's name (container names must be unique)."""
    from dnnbench.runs.options import RunOptions
    spec, opts = run.spec, run.spec["options"]
    data = spec.get("data")
    gpus = None if gpus is None else str(gpus)
    return RunOptions(
        workload="" if spec.get("script") is not None else run.workload, data=Path(data) if data else None,
        gpus=gpus, nproc=spec.get("nproc"),
        runtime=overrides.get("runtime") or spec.get("runtime") or "docker",
        image=overrides.get("image") or spec.get("image"), base=overrides.get("base") or spec.get("base"),
        build=False, results=results, run_id=f"{results.name}.{run_id}".replace("/", "."),
        run_dir=results / run_id, timeout=spec.get("timeout"), quiet=True,
        batch_size=run.batch_size, amp=run.amp, extra=[str(x) for x in spec.get("extra") or []],
        cpuset=cpuset, memory=memory, env={**(spec.get("env") or {}), **(overrides.get("env") or {})},
        **{key: _option(key, opts, overrides) for key in OPTION_NAMES},
        **_script_options(spec))


def _script_options(spec: dict) -> dict:
    """A `script:` job's fields as RunOptions takes them (`dnnbench run --script`)."""
    if spec.get("script") is None:
        return {}
    from dnnbench import names
    return {"script": names.user_path(spec["script"]), "entry": spec.get("entry"),
            "items_per_step": spec.get("items_per_step"), "unit": spec.get("unit"),
            "run_to_end": bool(spec.get("run_to_end"))}


def _kind(run: Run):
    """The job kind of a suite's job (runs/kinds.py): `script:`, `train:` or a workload's windows."""
    from dnnbench.runs import kinds
    return kinds.of_job(run.spec.get("script"), run.spec.get("train"))


def plan_of(run: Run, opts, resume: bool = False):
    """The plan of one run, by its kind (a `train:` job's resume: from its checkpoints)."""
    from dnnbench.runs import kinds
    kind = _kind(run)
    return kinds.build_plan(kind, opts, kind.job(run.spec.get("train"), resume), resume=resume)


def _resumable(run: Run, run_dir: Path) -> bool:
    """A job of a kind that resumes (`train:`), cut off with checkpoints recorded: resumed from
    them, not run again. Parallel copies: each copy's folder holds its own checkpoints, and the
    job resumes when every copy can."""
    if not _kind(run).resumes or not fileio.is_real_dir(str(run_dir)):
        return False
    if not run.spec.get("parallel"):
        return _cut_off_with_checkpoints(run_dir)
    copies = [p for p in sorted(Path(run_dir).iterdir()) if fileio.is_real_dir(str(p))]
    return bool(copies) and _status(run_dir) in CUT_OFF and all(_cut_off_with_checkpoints(p) for p in copies)


CUT_OFF = (None, "interrupted", "running")   # a run folder's status when its run did not end


def _cut_off_with_checkpoints(run_dir: Path) -> bool:
    """The folder's checkpoint record lists a checkpoint (the record train --resume reads), and
    its run did not end."""
    from dnnbench.workloads import checkpoint
    return checkpoint.newest(str(run_dir)) not in ("", checkpoint.RECORD) and _status(run_dir) in CUT_OFF


def _option(key: str, opts: dict, overrides: dict):
    """A harness option given on `dnnbench suite run` (e.g. --until-ci) wins over the job's."""
    return overrides[key] if overrides.get(key) is not None else opts.get(key)


def _cpu_shares(copies: int) -> list[str]:
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    share = max(1, len(cores) // copies)
    return [",".join(str(c) for c in cores[(k * share) % len(cores):(k * share) % len(cores) + share])
            for k in range(copies)]


def _memory_share(copies: int) -> str | None:
    """Each parallel copy's share of the host's memory (docker runs only), in MiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    return f"{max(256, total // copies // 2**20)}m"


def _execute_one(run: Run, suite_dir: Path, overrides: dict, resume: bool = False) -> tuple[str, int]:
    """One run (or its parallel copies); returns (status, exit code). Never raises for a run
    that fails: the failure is its result."""
    from dnnbench.workloads import schema

    from dnnbench.runs.launch import execute
    parallel = run.spec.get("parallel")
    gpus = run.spec.get("gpus")
    if not parallel:
        plan = plan_of(run, _options(run, results=suite_dir, run_id=run.run_id, overrides=overrides, gpus=gpus),
                       resume)
        plan.job = run.job
        data, code = execute(plan, quiet=True)
        return data["status"], code
    # mila's multi-user mode: the same single-GPU job once per GPU (or N CPU copies), at once,
    # each pinned to its share of the cores; throughput is summed in the report.
    from dnnbench.runs import gpus as gpus_mod
    if parallel == "per-gpu":
        ids = gpus_mod.parse(str(gpus) if gpus else "all") or []
        if ids == ["all"]:
            ids = [g["index"] for g in gpus_mod.visible("nvidia") or []]
        if not ids:
            raise DnnbenchError(f"job {run.job}: parallel per-gpu, but no GPUs are visible")
        copies: list[tuple[str, str | None]] = [(f"gpu{g}", g) for g in ids]
    else:
        copies = [(f"cpu{k}", None) for k in range(int(parallel))]
    shares = _cpu_shares(len(copies))
    memory = _memory_share(len(copies))
    plans = []
    for (label, gpu), cpuset in zip(copies, shares):
        plan = plan_of(run, _options(run, results=suite_dir, run_id=f"{run.run_id}/{label}", overrides=overrides,
                                     gpus=gpu, cpuset=cpuset, memory=memory), resume)
        plan.job = run.job
        plan.copy_of = run.run_id
        plans.append(plan)
    outcomes: list = [None] * len(plans)

    def work(i):
        outcomes[i] = execute(plans[i], quiet=True)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(plans))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results = [o[0] if o else {"status": "error"} for o in outcomes]
    combined = dict(results[0])
    combined["copies"] = results[1:]
    combined["status"] = "ok" if all(r.get("status") == "ok" for r in results) else \
        next(r.get("status") for r in results if r.get("status") != "ok")
    combined["run_id"] = run.run_id
    for plan in plans:  # the copies' own files stay for reading, marked so reports do not count them twice
        path = Path(plan.run_dir) / schema.RESULT_FILE
        if path.exists():
            own = schema.read(str(path))
            own["copy_of"] = run.run_id
            schema.write_atomic(str(path), own)
    schema.write_atomic(str(suite_dir / run.run_id / schema.RESULT_FILE), combined)
    from dnnbench.history.record import record
    record(suite_dir / run.run_id / schema.RESULT_FILE, combined)   # the copies, as one result (never raises)
    return combined["status"], max((o[1] for o in outcomes if o), default=1)


def suite_command(path: Path, *, only: list[str], resume: bool, results: Path, overrides: dict,
                dry_run: bool, junit: Path | None = None) -> int:
    from dnnbench import names
    suite = load(path)
    from dnnbench.runs import environment    # a suite file's env never starts code (only --env does)
    for r, env in zip(suite.runs, environment.without_code([r.spec.get("env") or {} for r in suite.runs],
                                                           overrides.get("env") or {}, str(path))):
        r.spec["env"] = env
    runs = [r for r in suite.runs if not only or any(fnmatch.fnmatchcase(r.job, g) for g in only)]
    watches = [w for w in suite.watches if not only or any(fnmatch.fnmatchcase(w.name, g) for g in only)]
    if not runs and not watches:
        raise DnnbenchError(f"--only {' '.join(only)} matches no job; jobs: "
                            + (", ".join(sorted({r.job for r in suite.runs})) or "none")
                            + (f"; watch entries: {', '.join(w.name for w in suite.watches)}" if suite.watches else ""))
    suite_dir = names.inside(results, results / suite.name, "suite folder")
    _preflight(runs, suite_dir, overrides, engines=not dry_run, watches=watches)
    if dry_run:
        from dnnbench.runs import suite_dry_run

        def plan_for(r: Run):
            opts = _options(r, results=suite_dir, run_id=r.run_id, overrides=overrides, gpus=r.spec.get("gpus"))
            opts.dry_run, opts.run_dir = True, None
            return plan_of(r, opts)
        suite_dry_run.show(suite.name, path, suite_dir, runs, watches, plan_for,
                           lambda w: f"{suite_watch.FOLDER}/{w.name}")
        return 0
    try:
        fileio.make_dirs(str(suite_dir), root=str(results))
    except OSError as exc:
        raise DnnbenchError(f"cannot create {suite_dir}: {exc.strerror or exc}") from None
    # one `suite run` per suite folder: a second --resume must not redo (and remove) the run the
    # first is in the middle of
    with locks.hold(suite_dir, what=f"suite folder {suite_dir}"):
        code = _run_suite(path, suite, runs, suite_dir, resume, overrides, watches)
    if runs and code != 130:      # CI's view of the suite's jobs, after its own table
        from dnnbench.exports import exported
        exported(code, _table(suite_dir), junit=junit, suite=suite.name, summary=f"dnnbench suite {suite.name}")
    return code


def _preflight(runs: list, suite_dir: Path, overrides: dict, engines: bool = True,
               watches: list[suite_watch.Entry] | None = None) -> None:
    """Everything the suite will need, checked before its first job starts: every run's options
    (the one validation table), workload, data, runtime, GPUs syntax and base, as `run
    --dry-run` checks them, and every watch entry's releases as `watch` checks them; then each
    runtime's engine once, and the history store when there is a watch. A bad job n fails the
    suite with one line naming it, before job 1 has run."""
    runtimes = set()
    for r in runs:
        opts = _options(r, results=suite_dir, run_id=r.run_id, overrides=overrides, gpus=r.spec.get("gpus"))
        opts.dry_run = True
        opts.run_dir = None
        try:
            plan = plan_of(r, opts)
        except DnnbenchError as exc:
            raise DnnbenchError(f"job {r.job} ({r.run_id}): {exc}") from None
        runtimes.add(plan.runtime)
    runtimes |= suite_watch.preflight(watches or [], suite_dir, overrides)
    from dnnbench.containers.engines import ENGINES
    for engine in ENGINES.values():
        if engines and engine.name in runtimes:
            engine.preflight()
    if engines and watches:
        suite_watch.check_store()


def _remove_unfinished(run_dir: Path, suite_dir: Path) -> bool:
    """Remove a run folder that provably holds no finished result, under its own lock (a live
    `dnnbench run` of it holds that lock); False (kept) when it cannot be proved."""
    if not fileio.is_real_dir(str(run_dir)):
        return not os.path.lexists(run_dir)
    if _status(run_dir) not in CUT_OFF:
        return False
    try:
        held = locks.hold(run_dir, what=f"run folder {run_dir}", in_file=True)
    except DnnbenchError:
        return False
    try:
        fileio.remove_tree(str(run_dir), str(suite_dir))
    finally:
        held.release()
    return True


def _run_suite(path: Path, suite: Suite, runs: list, suite_dir: Path, resume: bool, overrides: dict,
               watches: list[suite_watch.Entry]) -> int:
    from rich.progress import MofNCompleteColumn, TimeElapsedColumn, TimeRemainingColumn

    from dnnbench import names
    from dnnbench.console import escape, info, progress, warn
    status_of = {r.run_id: _status(suite_dir / r.run_id) for r in runs}
    done = {rid for rid, st in status_of.items() if st in FINAL or st == UNREADABLE}
    watched = [w for w in watches if os.path.lexists(suite_watch.folder(suite_dir, w))]
    if (done or watched) and not resume:
        raise DnnbenchError(f"{suite_dir} already holds {len(done)} finished runs"
                            + (f" and {len(watched)} watch entries' runs" if watched else "")
                            + " of this suite: pass --resume to go on where it stopped, or --results elsewhere")
    for rid in sorted(rid for rid, st in status_of.items() if st == UNREADABLE):
        warn(f"{suite_dir / rid} holds a result this dnnbench cannot read (newer schema or damaged): kept "
             f"as it is, not run again")
    todo = [r for r in runs if r.run_id not in done]
    info(f"suite {suite.name}: {len(runs)} runs, {len(done)} already done, {len(todo)} to go"
         + (f", then {len(watches)} watch entries" if watches else "") + f"; results in {suite_dir}")
    failures = 0
    with progress(MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn()) as bar:   # ETA: from the runs done
        task = bar.add_task(escape(suite.name), total=len(runs), completed=len(done))
        for r in todo:
            bar.update(task, description=escape(f"{suite.name}: {r.run_id}"))
            partial = names.inside(suite_dir, suite_dir / r.run_id, "run folder")
            go_on = resume and _resumable(r, partial)   # its checkpoints are kept and taken up
            if go_on:
                bar.console.print(f"{escape(r.run_id)}: resuming from its checkpoints")
            elif os.path.lexists(partial) and not _remove_unfinished(partial, suite_dir):
                warn(f"{partial} could not be cleared (in use, or not provably unfinished): kept, run skipped")
                failures += 1
                bar.advance(task)
                continue
            try:
                status, _ = _execute_one(r, suite_dir, overrides, resume=go_on)
            except EngineUnavailable:
                raise   # no later run can succeed either
            except DnnbenchError as exc:
                status = "error"
                bar.console.print(f"[red]{escape(r.run_id)}: {escape(exc)}[/]", soft_wrap=True)
            if status == "interrupted":
                bar.console.print(f"[yellow]suite interrupted at {escape(r.run_id)}[/]: "
                                  + escape(f"`dnnbench suite run {path} --resume` goes on from there"))
                return 130
            if status != "ok":
                failures += 1
                bar.console.print(f"[red]{escape(r.run_id)}: {escape(status)}[/] (recorded; the suite goes on)")
            bar.advance(task)
    outcomes = []
    for w in watches:     # after the jobs: a watch's verdict comes last, and never costs a job its run
        info(f"watch {w.name}: {w.workload} over {len(w.releases)} releases; runs in "
             f"{suite_watch.folder(suite_dir, w)}")
        outcome = suite_watch.run(w, suite_dir, overrides)
        if outcome.status == "interrupted":
            warn(f"suite interrupted at watch {w.name}: `dnnbench suite run {path} --resume` goes on from there")
            return 130
        if outcome.status == "failed":
            warn(f"watch {w.name} failed: {outcome.said} (the suite goes on)")
        outcomes.append(outcome)
    found = [o for o in outcomes if o.status == "slower"]
    lost = [o for o in outcomes if o.status == "failed"]
    info(f"suite {suite.name}: {len(todo) - failures} ok, {failures} failed"
         + (f"; watch: {len(found)} found a slower release, {len(lost)} failed" if outcomes else "")
         + f"; `dnnbench report {suite_dir}` summarizes it")
    if runs:
        show_table(suite_dir)
    if outcomes:
        suite_watch.show(outcomes)
    return 1 if failures or found or lost else 0


def show_table(suite_dir: Path) -> None:
    """The suite's jobs with the same figures `dnnbench report` prints (repeats pooled, trimmed
    figures from 5 repeats on)."""
    from dnnbench.results.report import render
    table = _table(suite_dir)
    if table:
        render(table, "table", total_score=None, with_baseline=False)


def _table(suite_dir: Path) -> list[dict]:
    """The report's rows of the suite's jobs (none when no result can be read)."""
    from dnnbench.results.report import collect, rows
    # the jobs' folders: a watch list's runs are its own (its table follows)
    folders = [p for p in sorted(suite_dir.iterdir()) if p.name != suite_watch.FOLDER and fileio.is_real_dir(str(p))]
    try:
        return rows(collect(folders), None, 0.0)
    except DnnbenchError:
        return []
