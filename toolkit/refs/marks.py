"""References on the html pages (`report --format html`, `history --format html`): each one that
measured the same thing as a job (match.compare) drawn as its own mark, a dashed line labelled
with its source and system, and listed in a table of its own; never a point of the job's series."""
from __future__ import annotations

from html import escape

from dnnbench.refs import match

SHOWN = 6    # marks per plot: more would hide the series under their labels


def label(r: dict) -> str:
    return f"{r['source']}: {r['system']}"


def svg_lines(marks: list[dict], y, x0: float, x1: float) -> str:
    """Each reference a dashed horizontal line at its value across the plot (its spread as a
    band when it has one), labelled with its source at the right end."""
    from dnnbench.console import visible
    parts = []
    for k, r in enumerate(marks[:SHOWN]):
        if r.get("spread_low") is not None and r.get("spread_high") is not None:
            top, bottom = y(r["spread_high"]), y(r["spread_low"])
            parts.append(f'<rect class="reference-spread" x="{x0}" y="{top:.1f}" width="{x1 - x0}" '
                         f'height="{max(bottom - top, 0.5):.1f}" fill="#c60" fill-opacity="0.12"/>')
        at = y(r["value"])
        text = escape(visible(f"{label(r)} {r['value']:.4g}", one_line=True)[:60])
        parts.append(f'<line class="reference" x1="{x0}" y1="{at:.1f}" x2="{x1}" y2="{at:.1f}" stroke="#c60" '
                     f'stroke-dasharray="5 3"><title>{text}</title></line>'
                     f'<text class="reference" x="{x1}" y="{at - 3 - 10 * (k % 2):.1f}" font-size="9" '
                     f'text-anchor="end" fill="#c60">{text}</text>')
    return "".join(parts)


def table(rows: list[tuple[str, dict]]) -> str:
    """(what it is placed against, reference + standing) rows as one html table."""
    from dnnbench.console import visible
    from dnnbench.results.numbers import fmt
    if not rows:
        return ""

    def cell(v) -> str:
        return f"<td>{escape(visible('-' if v is None else str(v), one_line=True))}</td>"
    body = []
    for name, r in rows:
        pct = r.get("vs_reference_pct")
        spread = "-" if r.get("spread_low") is None else f"{fmt(r['spread_low'])} to {fmt(r['spread_high'])}"
        body.append("<tr>" + "".join(cell(v) for v in (
            name, r["source"], r["system"], r.get("version"), f"{r['gpu_count']} x {r['gpu']}", r.get("precision"),
            r.get("batch_size"), f"{fmt(r['value'])} {r.get('unit') or ''}", spread,
            "-" if pct is None else f"{pct:+.1f} %")) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("job", "source", "system", "version", "GPUs", "precision", "batch",
                                             "reference", "its spread", "this job vs it"))
    return ('<h2 id="references">Published references (same workload, precision, GPU model and count, batch '
            'where stated)</h2>\n<table class="references"><tr>' + head + "</tr>\n" + "\n".join(body) + "\n</table>\n")


def job_svg(value: float, refs: list[dict], width: int = 480, height: int = 120) -> str:
    """One job's figure as a bar, each matched reference as its own labelled mark across it."""
    pad = 20
    top = max([value] + [r.get("spread_high") or r["value"] for r in refs[:SHOWN]]) * 1.15 or 1.0

    def y(v: float) -> float:
        return height - pad - v / top * (height - 2 * pad)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} '
            f'{height}"><rect class="job" x="{pad}" y="{y(value):.1f}" width="60" height="{height - pad - y(value):.1f}" '
            f'fill="#136"/><text x="{pad}" y="{height - 5}" font-size="9">this job {value:.4g}</text>'
            + svg_lines(refs, y, pad, width - pad) + "</svg>")


def section(rows: list[tuple[str, dict]], values: dict[str, float]) -> str:
    """The page's references: per job a plot with its marks, then the table."""
    if not rows:
        return ""
    from dnnbench.console import visible
    plots = []
    for name in dict.fromkeys(n for n, _ in rows):
        mine = [r for n, r in rows if n == name]
        plots.append(f"<figure>{job_svg(values[name], mine)}<figcaption>{escape(visible(name, one_line=True))}"
                     "</figcaption></figure>")
    return table(rows) + "\n".join(plots) + "\n"


def add_to_page(page: str, section: str) -> str:
    """The references' section placed at the end of a page's body."""
    if not section:
        return page
    at = page.rfind("</body>")
    return page[:at] + section + page[at:] if at >= 0 else page + section


def for_jobs(jobs) -> list[tuple[str, dict]]:
    """report's jobs (results.report.Job) against the default store's references: (job, matched
    reference) rows; none when there is no store or it holds none."""
    from dnnbench.refs import tables
    mines = {}
    for j in jobs.values():
        if j.throughput is None:
            continue
        batch = j.batch_size * j.world_size if j.batch_size else None
        mines[j.job] = match.Mine(workload=j.workload, unit=j.unit, precision=tables.precision(j.amp), gpu=j.model,
                                  gpu_count=j.world_size, batch=batch, value=j.throughput)
    refs = _stored({m.workload for m in mines.values() if m.workload}, None)
    return [(name, r) for name, m in mines.items() for r in match.compare(m, refs.get(m.workload or "", []))["matched"]]


def for_series(rows: list[dict], group, db: str | None) -> dict[str, list[dict]]:
    """history's rows grouped as its page plots them (`group(row)`) -> the references that match
    each group: its workload, unit, GPU model and count from the store's rows, its precision and
    batch from the newest result file of the group (a group whose file is gone gets no marks)."""
    groups: dict[str, dict] = {}
    for r in rows:
        if isinstance(r.get("throughput"), (int, float)):
            groups[group(r)] = r       # the newest: rows come oldest first
    refs = _stored({r["workload"] for r in groups.values() if r.get("workload")}, db)
    out = {}
    for name, r in groups.items():
        m = _mine_from_file(r)
        if m is not None:
            out[name] = match.compare(m, refs.get(m.workload, []))["matched"]
    return out


def _mine_from_file(row: dict):
    from dnnbench.workloads import schema
    try:
        data = schema.read(str(row.get("path")))
    except (OSError, ValueError):
        return None
    return match.mine(data, row)


def _stored(workloads: set, db: str | None) -> dict[str, list[dict]]:
    from dnnbench.errors import DnnbenchError
    from dnnbench.history.store import Store
    from dnnbench.refs import store
    if not workloads:
        return {}
    from dnnbench.history.location import NoStore
    try:
        opened = Store(db, create=False)
        try:
            return {w: store.select(opened, workload=w) for w in workloads}
        finally:
            opened.close()
    except NoStore:            # nothing recorded or imported: a page without references
        return {}
    except DnnbenchError as exc:   # a store that cannot be used costs the page its references, no more
        from dnnbench.console import warn
        warn(f"published references not shown: {exc}")
        return {}


def with_references(page: str, jobs: dict) -> str:
    """A report's html page with the published references of its jobs as their own marks."""
    found = for_jobs(jobs)
    values = {j.job: j.throughput for j in jobs.values()}
    return add_to_page(page, section(found, values))
