"""What the `dnnbench history` commands do (toolkit/cli/history.py only wires them)."""
from __future__ import annotations

import statistics
from pathlib import Path

from dnnbench.console import info
from dnnbench.errors import DnnbenchError
from dnnbench.results import rounds


def _store(db: str | None, create: bool = False):
    from dnnbench.history.store import Store
    return Store(db, create=create)


LEFT_OUT = 1     # `history import`: some results were left out (each named); the others are recorded


def import_command(paths: list[Path], db: str | None) -> int:
    """Backfill: every result under `paths` recorded once, each on its own (a bad one never
    keeps the good ones out); counts of each outcome, each result left out named with why.
    0 when every result is in the store, LEFT_OUT when some are not, 2 (an error) when the
    store cannot be used."""
    from dnnbench.console import info, warn
    from dnnbench.history.facts import Unstorable, row
    from dnnbench.history.store import conflict_line
    from dnnbench.results.report import find_results
    from dnnbench.workloads import schema
    skipped: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    made = []
    copies = 0
    for path in find_results(paths, skipped):
        try:
            data = schema.read(str(path))
            if data.get("copy_of"):    # a suite's parallel copy: its combined result holds it
                copies += 1
                continue
            made.append(row(path, data))
        except Unstorable as exc:
            refused.append((str(path), str(exc)))
        except ValueError as exc:
            skipped.append((str(path), str(exc).removeprefix(f"{path}: ")))
        except OSError as exc:
            skipped.append((str(path), f"cannot read it: {exc.strerror or exc}"))
    for name, why in skipped:
        warn(f"skipped {name}: {why}")
    store = _store(db, create=True)
    try:
        done = store.record(made)
    finally:
        store.close()
    refused += [(str(r.get("path")), why) for r, why in done.refused]
    for name, why in refused:
        warn(f"not recorded {name}: {why}")
    for rows in done.conflicts:
        warn(conflict_line(rows))
    in_conflict = sum(len(rows) for rows in done.conflicts)
    info(f"history {store.name}: {done.new} imported, {done.same} already there, {done.changed} updated, "
         f"{len(skipped)} unreadable" + (f", {len(refused)} refused" if refused else "")
         + (f", {in_conflict} in conflict" if in_conflict else "")
         + (f" ({copies} parallel copies counted in their combined results)" if copies else ""))
    return LEFT_OUT if skipped or refused or in_conflict else 0


def ordered(rows: list[dict], by: str) -> list[dict]:
    from dnnbench.history import facts
    if by == "release":
        return sorted(rows, key=facts.release_key)
    return rows      # the store returns them oldest first


def show(rows: list[dict], fmt: str, title: str, output: Path | None, wide: bool, marks: dict | None = None) -> None:
    from dnnbench.history import views
    if fmt not in views.FORMATS:
        raise DnnbenchError(f"unknown format {fmt!r}: choose {', '.join(views.FORMATS)}")
    if fmt == "table":
        if output is not None:
            raise DnnbenchError("--output needs --format csv, json or html")
        views.table(title, rows, wide)
        return
    text = {"csv": views.as_csv, "json": views.as_json}[fmt](rows) if fmt != "html" else views.as_html(title, rows, marks)
    views.dump(text, output)


TABLE_ROWS = 100     # a table's default: the newest rows a screen can use; files get every row


def list_command(filters: dict, fmt: str, output: Path | None, wide: bool, db: str | None,
                 last: int | None = None) -> int:
    """The rows the filters match, oldest first; with `last`, only the newest `last` of them
    (read from the index: a million-row job lists as fast as a small one)."""
    if last is None:
        last = TABLE_ROWS if fmt == "table" else 0
    from dnnbench.history.location import NoStore
    try:
        store = _store(db)
    except NoStore as exc:   # nothing recorded yet is an empty history, not a mistake
        from dnnbench.console import info
        info(str(exc))
        return 0
    try:
        rows = store.select(**filters, limit=last or None, newest=bool(last))
        total = store.count(**filters) if last and len(rows) == last else len(rows)
    finally:
        store.close()
    title = f"dnnbench history: {len(rows):,} result(s)"
    if total > len(rows):
        title = f"dnnbench history: the newest {len(rows):,} of {total:,} results (--last 0: all)"
    show(rows, fmt, title, output, wide, _reference_marks(rows, db) if fmt == "html" else None)
    return 0


def _reference_marks(rows: list[dict], db: str | None) -> dict:
    """Each plotted series' published references (dnnbench.refs), drawn as their own marks."""
    from dnnbench.history import views
    from dnnbench.refs.marks import for_series
    return for_series(rows, views.series_key, db)


def series_command(job: str, by: str, gpu: str | None, fmt: str, output: Path | None, wide: bool,
                   db: str | None, include_busy: bool = False) -> int:
    """A job's series: one point per image (and GPU model), or per image and day, summed in SQL;
    results whose host was busy left out (and counted) unless `include_busy`."""
    from dnnbench.history import views
    from dnnbench.history.peers import left_out
    store = _store(db)
    try:
        points = store.series(job, by=by, gpu=gpu, include_busy=include_busy)
        busy = 0 if include_busy else store.count(job=job, gpu=gpu, status="ok", busy=True)
    finally:
        store.close()
    if left_out(busy):
        info(left_out(busy) or "")
    if not points:
        raise DnnbenchError(f"no ok result of job {job!r} in the history" + (f" on {gpu}" if gpu else ""))
    title = (f"{job}: {sum(p['n'] for p in points)} result(s) in {len(points)} point(s), "
             f"{'release' if by == 'release' else 'time'} order")
    if fmt == "table" and output is None:
        views.series_table(title, points, wide)
        return 0
    show(points, fmt, title, output, wide)
    return 0


def percentile(value: float, others: list[float]) -> float:
    """Where value falls among others: the share below it, ties counting half (in %)."""
    below = sum(1 for v in others if v < value) + 0.5 * sum(1 for v in others if v == value)
    return below / len(others) * 100


def peers_command(result: Path, as_json: bool, db: str | None, include_busy: bool = False) -> int:
    """One result against the store's results of the same job on the same GPU model (those whose
    host was busy left out unless `include_busy`), with a word: normal, slower, faster."""
    from rich.text import Text

    from dnnbench.console import out
    from dnnbench.history import views
    from dnnbench.history.facts import row
    from dnnbench.results.numbers import fmt
    from dnnbench.workloads import schema
    path = result / schema.RESULT_FILE if result.is_dir() else result
    try:
        data = schema.read(str(path))
        mine = row(path, data)
    except ValueError as exc:
        raise DnnbenchError(str(exc)) from None
    except OSError as exc:
        raise DnnbenchError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if not isinstance(mine.get("throughput"), (int, float)):
        raise DnnbenchError(f"{path}: no throughput to compare (status {mine.get('status')})")
    store = _store(db)
    try:
        busy = [] if include_busy else [r for r in store.select(
            job=mine["job"], gpu=mine["gpu"], status="ok", busy=True, columns=("identity",))
            if r["identity"] != mine["identity"]]
        peers = [r["throughput"] for r in store.select(job=mine["job"], gpu=mine["gpu"], status="ok",
                                                       columns=("identity", "throughput"),
                                                       busy=None if include_busy else False)
                 if r["identity"] != mine["identity"] and isinstance(r.get("throughput"), (int, float))]
        references = _references(store, data, mine)
    finally:
        store.close()
    from dnnbench.history import peers as judged
    from dnnbench.workloads import busy as busy_rule
    said = judged.word(mine["throughput"], peers)
    facts = {"job": mine["job"], "gpu": mine["gpu"], "throughput": mine["throughput"], "unit": mine["unit"],
             "ci95_pct": views.ci_pct(mine), "n": len(peers), "word": said["word"], "normal_low": said["low"],
             "normal_high": said["high"], "min_peers": judged.MIN_PEERS, "left_out_busy": len(busy),
             "busy": bool(mine.get("busy"))}
    if peers:
        median = statistics.median(peers)
        facts.update(median=median, percentile=percentile(mine["throughput"], peers),
                     vs_median_pct=(mine["throughput"] / median - 1) * 100 if median else None,
                     low=min(peers), high=max(peers))
    if as_json:
        views.dump(views.json_text(dict(facts, references=references)), None)
        return 0
    unit = mine.get("unit") or ""
    out.print(Text(f"{views.name(mine['job'])} on {views.name(mine['gpu'])}: {fmt(mine['throughput'])} "
                   f"{views.name(unit)}: {said['word']}"))
    if mine.get("busy"):
        out.print(Text(busy_rule.of_result(data) or "the host was busy"), soft_wrap=True)
    if judged.left_out(len(busy)):
        out.print(Text(judged.left_out(len(busy)) or ""), soft_wrap=True)
    if not peers:
        out.print(Text(f"no peers in the history yet (same job, same GPU model; {judged.MIN_PEERS} needed "
                       "for a word)"))
        _print_references(references)
        return 0
    out.print(Text(f"peers: {len(peers)} result(s) of the same job on the same GPU model; median "
                   f"{fmt(facts['median'])} {unit}, range {fmt(facts['low'])} to {fmt(facts['high'])}"))
    out.print(Text(f"this result: percentile {facts['percentile']:.0f} ({facts['vs_median_pct']:+.1f} % "
                   f"against the median)"))
    if said["low"] is None:
        out.print(Text(f"{said['word']}: {len(peers)} peer(s), {judged.MIN_PEERS} needed to know their spread"))
    else:
        out.print(Text(f"{said['word']}: normal is {fmt(said['low'])} to {fmt(said['high'])} {unit} (the median "
                       f"+- {judged.WIDTH:g} spreads)"))
    _print_references(references)
    return 0


def _references(store, data: dict, mine: dict) -> dict:
    """The published references that measured the same thing, or the nearest (dnnbench.refs)."""
    from dnnbench.refs.commands import for_result
    return for_result(store, data, mine)


def _print_references(block: dict) -> None:
    from rich.text import Text

    from dnnbench.console import out, visible
    from dnnbench.refs.commands import lines
    for line in lines(block):
        out.print(Text(visible(line, one_line=True)), soft_wrap=False)


def changes_command(job: str | None, by: str, fmt: str, db: str | None, push: str | None = None,
                    include_busy: bool = False) -> int:
    """Lasting changes in each job's series (per GPU model), results whose host was busy left out
    (and counted) unless `include_busy`; exit 1 when one is a slowdown whose whole 95 % CI lies
    below no change."""
    from rich.text import Text

    from dnnbench.console import out
    from dnnbench.history import views
    from dnnbench.exports import changes_out
    from dnnbench.history.changes import changes
    store = _store(db)
    try:
        rows = store.select(job=job, status="ok", busy=None if include_busy else False)
        busy = 0 if include_busy else store.count(job=job, status="ok", busy=True)
    finally:
        store.close()
    from dnnbench.history.peers import left_out
    if left_out(busy):
        info(left_out(busy) or "")
    if job is not None and not rows:
        raise DnnbenchError(f"no ok result of job {job!r} in the history")
    series: dict[tuple, list[dict]] = {}
    for r in rows:
        series.setdefault((r["job"], r["gpu"]), []).append(r)
    found = []
    for (name, gpu), points in series.items():
        for c in changes(ordered(points, by)):
            found.append({"job": name, "gpu": gpu, "change_pct": c.pct, "ci95_low_pct": (c.low - 1) * 100,
                          "ci95_high_pct": (c.high - 1) * 100, "p": c.p, "before": views.plain(c.before),
                          "after": views.plain(c.after), "changed": c.facts, "points": len(points)})
    slower = any(rounds.slowdown(f) for f in found)
    if fmt == "json":
        views.dump(views.json_text(found), None)
        return changes_out(found, len(series), 1 if slower else 0, push)
    if fmt != "table":
        raise DnnbenchError(f"unknown format {fmt!r}: choose table or json")
    from dnnbench.console import visible

    def side(p: dict) -> str:
        return f"{views.name(p.get('image') or '-')} ({(p.get('started') or '-')[:16].replace('T', ' ')})"
    for f in found:
        lines = [f"{views.name(f['job'])} on {views.name(f['gpu'])}: {f['change_pct']:+.1f} % (95 % CI "
                 f"{f['ci95_low_pct']:+.1f} to {f['ci95_high_pct']:+.1f} %, p {f['p']:.3f})",
                 f"  before: {side(f['before'])}", f"  after:  {side(f['after'])}"]
        lines += [f"  {fact}" for fact in f["changed"]]
        for line in lines:
            out.print(Text(visible(line, one_line=True)), soft_wrap=True)
    if not found:
        out.print(Text(f"no lasting change in {len(series)} series ({len(rows)} result(s))"))
    return changes_out(found, len(series), 1 if slower else 0, push)
