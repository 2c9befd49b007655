"""What `dnnbench refs` does (toolkit/cli/refs.py only wires it), and the references block of
`history peers`."""
from __future__ import annotations

from pathlib import Path

from dnnbench.errors import DnnbenchError
from dnnbench.refs import reference as ref

FORMATS = ("table", "csv", "json")
SHOWN_BAD = 3      # a refused file's line names its first few unreadable rows, then counts the rest
# exit codes: 0 every file imported; 1 a file was refused (nothing of it imported; the others
# were); 2 bad usage or a store that cannot be used (DnnbenchError's default)
REFUSED = 1


def _open(db: str | None, create: bool):
    from dnnbench.history.store import Store
    return Store(db, create=create)


def import_command(paths: list[Path], source: str | None, precision: str | None, gpu: str | None,
                   version: str | None, db: str | None) -> int:
    """Each file read whole, then its references added in one transaction: a file with a row
    that cannot be read is refused whole (one line naming the rows), never half imported."""
    from dnnbench.console import info, visible
    from dnnbench.refs import sources, store
    if precision is not None and precision not in ("fp16", "fp32", "tf32", "bf16", "tf32-fp16"):
        raise DnnbenchError(f"unknown precision {precision!r}: choose fp16, fp32, tf32, bf16 or tf32-fp16")
    for option, value in (("--version", version), ("--gpu", gpu)):
        if value is not None and (not value.strip() or ref.unprintable(value)):
            raise DnnbenchError(f"{option} must be printable text, without control characters")
    read: list[tuple[Path, str, ref.Parsed]] = []
    refused = 0
    for path in paths:
        try:
            chosen, parsed = sources.read(path, source, precision, gpu)
        except ref.Refused as exc:
            _refused(path, str(exc))
            refused += 1
            continue
        if parsed.bad:
            shown = "; ".join(parsed.bad[:SHOWN_BAD]) + (f"; and {len(parsed.bad) - SHOWN_BAD} more"
                                                        if len(parsed.bad) > SHOWN_BAD else "")
            _refused(path, f"{len(parsed.bad)} row(s) cannot be read: {shown}")
            refused += 1
            continue
        for r in parsed.references:
            r["file"] = path.name
            if version is not None:
                r["version"] = version
        read.append((path, chosen, parsed))
    if read:
        db_store = _open(db, create=True)
        try:
            for path, chosen, parsed in read:
                rows = [ref.make(**r) for r in parsed.references]     # identity again: --version is part of it
                new, same, changed = store.add(db_store, rows)
                info(visible(f"{path}: {chosen}, {len(rows)} reference(s): {new} new, {same} already there, "
                             f"{changed} updated; {parsed.missing} not measured (empty, 0.0 or null) skipped",
                             one_line=True))
        finally:
            db_store.close()
    return REFUSED if refused else 0


def _refused(path: Path, why: str) -> None:
    from rich.text import Text

    from dnnbench.console import err, visible
    where = str(path)
    text = why if why.startswith(where) or where in why[:len(where) + 40] else f"{where}: {why}"
    err.print(Text.assemble(("error: ", "bold red"), visible(f"{text}; nothing imported from it", one_line=True)),
              soft_wrap=True)


def list_command(workload: str | None, gpu: str | None, source: str | None, fmt: str, db: str | None,
                 wide: bool = False) -> int:
    from dnnbench.history.location import NoStore
    from dnnbench.refs import store
    if fmt not in FORMATS:
        raise DnnbenchError(f"unknown format {fmt!r}: choose {', '.join(FORMATS)}")
    try:
        db_store = _open(db, create=False)
    except NoStore as exc:
        from dnnbench.console import info
        info(str(exc))
        return 0
    try:
        rows = store.select(db_store, workload=workload, gpu=gpu, source=source)
    finally:
        db_store.close()
    shown = [{k: r.get(k) for k in ref.FIELDS} for r in rows]
    from dnnbench.history import views
    if fmt == "json":
        views.dump(views.json_text(shown), None)
    elif fmt == "csv":
        import csv
        import io
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(ref.FIELDS), lineterminator="\n")
        w.writeheader()
        w.writerows(shown)
        views.dump(buf.getvalue(), None)
    else:
        table(f"dnnbench refs: {len(rows):,} reference(s)", rows, wide)
    return 0


def value_text(r: dict) -> str:
    from dnnbench.results.numbers import fmt
    text = f"{fmt(r['value'])} {r.get('unit') or ''}".strip()
    if r.get("spread_low") is not None:
        text += f" ({fmt(r['spread_low'])}-{fmt(r['spread_high'])}, n={r.get('samples')})"
    return text


def table(title: str, rows: list[dict], wide: bool = False) -> None:
    """Fits 80 columns: the system (longest) goes first, then the spread (--wide: all); the unit
    stays (a value is read by it: images/s and minutes to train share the column)."""
    from dnnbench.console import Column, print_table
    from dnnbench.history.views import short
    from dnnbench.results.numbers import fmt
    columns = [Column("workload", key=True), Column("gpu", key=True), Column("n", right=True, rank=10),
               Column("prec", rank=9), Column("batch", right=True, rank=9),
               Column("value", right=True, decides=True, whole=True), Column("unit", decides=True),
               Column("spread", rank=8), Column("source", rank=9), Column("system", rank=2)]
    cells = [[short(r.get("workload") or r.get("source_workload"), 20), short(r.get("gpu"), 22),
              "-" if r.get("gpu_count") is None else str(r["gpu_count"]), short(r.get("precision"), 6),
              "-" if r.get("batch_size") is None else str(r["batch_size"]), fmt(r["value"]),
              short(r.get("unit"), 12),
              "-" if r.get("spread_low") is None else f"{_compact(r['spread_low'])}-{_compact(r['spread_high'])} "
                                                     f"n={r.get('samples')}",
              short(r.get("source"), 10), short(r.get("system"), 40)] for r in rows]
    print_table(title, columns, cells, wide=wide)


def _compact(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def for_result(db_store, data: dict, row: dict) -> dict:
    """The references block of `history peers` (match.compare) for a result file's data and its
    store row, read from the open store's `reference_numbers`."""
    from dnnbench.refs import match, store
    m = match.mine(data, row)
    found = store.select(db_store, workload=m.workload) if m.workload else []
    return dict(match.compare(m, found), references=len(found))


def title(r: dict) -> str:
    """A reference as a line names it: source, system, and the source's workload where it is not
    dnnbench's name (milabench's resnet50-noio)."""
    own = r.get("source_workload")
    return f"{r['source']} {r['system']}" + (f", {own}" if own and own != r.get("workload") else "")


def lines(block: dict) -> list[str]:
    """The block as lines for the terminal: each comparable reference with where the result
    stands; else the nearest and what differs; else that none of this workload was imported."""
    from dnnbench.results.numbers import fmt
    out = []
    for r in block["matched"]:
        pct = r.get("vs_reference_pct")
        where = "n/a" if pct is None else f"{abs(pct):.1f} % {'above' if pct >= 0 else 'below'}"
        spread = ""
        if r.get("spread"):
            spread = (f"; {r['in_spread']} its spread {fmt(r['spread'][0])} to {fmt(r['spread'][1])} "
                      f"(n={r.get('samples')})")
        value = f"{fmt(r['value'])} {r.get('unit') or ''}".strip()
        out.append(f"reference {title(r)}: {value}, this result {where}{spread}")
    if block["matched"]:
        return out
    if not block["nearest"]:
        return ["references: none of this workload imported (`dnnbench refs import`)" if not block["references"]
                else "references: none comparable (other GPU models, precisions or units)"]
    out.append("references: none measured the same (nearest, not compared):")
    for r in block["nearest"]:
        out.append(f"  {title(r)} ({r['gpu_count'] or '?'} x {r['gpu']}): {value_text(r)}")
        out.append(f"    differs: {', '.join(r['differs'])}")
    return out
