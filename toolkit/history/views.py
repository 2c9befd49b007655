"""The history's rows as a table, CSV, JSON or an HTML page with the series plotted."""
from __future__ import annotations

import csv
import io
import json
from datetime import datetime

FORMATS = ("table", "csv", "json", "html")
SHOWN = ("started", "job", "kind", "status", "image", "base", "pytorch", "cuda", "cudnn", "nccl", "driver",
         "host", "gpu", "gpu_count", "throughput", "ci_low", "ci_high", "unit", "run_id", "digest", "path")
PAGE = ("started", "job", "image", "pytorch", "cuda", "cudnn", "nccl", "driver", "host", "gpu", "status",
        "throughput", "+-95% CI %")
LONGEST = 40     # a name longer than this is cut in the table (whole in csv, json and html)


POINT = ("n", "sd", "last")     # a series point's own (Store.series): results summed, their sd, the last


def plain(row: dict) -> dict:
    keys = SHOWN + tuple(k for k in POINT if k in row)
    return {k: (row[k].isoformat() if isinstance(row.get(k), datetime) else row.get(k)) for k in keys}


def ci_pct(row: dict) -> float | None:
    v, lo, hi = row.get("throughput"), row.get("ci_low"), row.get("ci_high")
    if not isinstance(v, (int, float)) or not v or lo is None or hi is None:
        return None
    return (hi - lo) / 2 / v * 100


def name(value, longest: int = LONGEST) -> str:
    """A name as a terminal line shows it: control characters escaped, cut at `longest`."""
    from dnnbench.console import visible
    text = visible("-" if value is None else value, one_line=True)
    return text if len(text) <= longest else text[:longest - 3] + "..."


def short(value, longest: int = LONGEST) -> str:
    """name(), escaped for a rich table cell."""
    from dnnbench.console import escape
    return escape(name(value, longest))


def table(title: str, rows: list[dict], wide: bool = False) -> None:
    from dnnbench.console import Column, number, print_table
    from dnnbench.results.numbers import fmt
    columns = [Column("started", key=True), Column("job", key=True), Column("throughput", right=True, headline=True),
               Column("+-95% CI %", right=True, rank=8), Column("image", rank=6), Column("pytorch", rank=5),
               Column("cuda", rank=3), Column("host", rank=4), Column("gpu", rank=5), Column("status", decides=True)]
    cells = []
    for r in rows:
        started = r["started"].strftime("%Y-%m-%d %H:%M") if isinstance(r.get("started"), datetime) else "-"
        value = "-" if r.get("throughput") is None else f"{fmt(r['throughput'])} {short(r.get('unit') or '', 12)}"
        cells.append([started, short(r.get("job")), value, number(ci_pct(r)), short(r.get("image")),
                      short(r.get("pytorch"), 20), short(r.get("cuda"), 12), short(r.get("host"), 24),
                      short(r.get("gpu"), 24), short(r.get("status"), 12)])
    print_table(title, columns, cells, wide=wide)


def series_table(title: str, points: list[dict], wide: bool = False) -> None:
    """Series points (Store.series): each image's (or image and day's) results summed."""
    from dnnbench.console import Column, number, print_table
    from dnnbench.results.numbers import fmt
    columns = [Column("image", key=True), Column("n", right=True, rank=9), Column("throughput", right=True, headline=True, whole=True),
               Column("+-95% CI %", right=True, rank=8), Column("pytorch", rank=5), Column("cuda", rank=3),
               Column("gpu", rank=5), Column("first", rank=6)]
    cells = [[short(p.get("image")), str(p["n"]), f"{fmt(p['throughput'])} {short(p.get('unit') or '', 12)}",
              number(ci_pct(p)), short(p.get("pytorch"), 20), short(p.get("cuda"), 12), short(p.get("gpu"), 24),
              p["started"].strftime("%Y-%m-%d %H:%M") if isinstance(p.get("started"), datetime) else "-"]
             for p in points]
    print_table(title, columns, cells, wide=wide)


def as_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(plain(rows[0]) if rows else SHOWN), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(plain(r))
    return buf.getvalue()


def as_json(rows: list[dict]) -> str:
    from dnnbench.workloads import fileio
    return fileio.dumps_json([plain(r) for r in rows])


def series_key(row: dict) -> str:
    return f"{row.get('job')} on {row.get('gpu')}"


def as_html(title: str, rows: list[dict]) -> str:
    """One self-contained page: a plot per job and GPU model (inline SVG: no image files, no
    scripts), then the rows."""
    from html import escape
    groups: dict[str, list[dict]] = {}
    for r in rows:
        if isinstance(r.get("throughput"), (int, float)):
            groups.setdefault(series_key(r), []).append(r)
    plots = "\n".join(f"<h2>{escape(name)}</h2>\n{svg(points)}" for name, points in groups.items())
    from dnnbench.console import number
    from dnnbench.results.numbers import fmt
    head = "".join(f"<th>{escape(k)}</th>" for k in PAGE)

    def cells(r: dict) -> list:
        started = r["started"].strftime("%Y-%m-%d %H:%M") if isinstance(r.get("started"), datetime) else "-"
        value = "-" if r.get("throughput") is None else f"{fmt(r['throughput'])} {r.get('unit') or ''}"
        return [started, *(r.get(k) for k in PAGE[1:-2]), value, number(ci_pct(r))]
    body = "\n".join("<tr>" + "".join(f"<td>{escape('-' if v is None else str(v))}</td>" for v in cells(r))
                     + "</tr>" for r in rows)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>\n"
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:small}"
            "td,th{border:1px solid #ccc;padding:2px 6px;max-width:24em;overflow-wrap:break-word}svg{background:#fafafa}</style>"
            f"</head><body>\n<h1>{escape(title)}</h1>\n{plots}\n<table id=\"rows\"><tr>{head}</tr>\n{body}\n</table>\n"
            "</body></html>\n")


def svg(points: list[dict], width: int = 720, height: int = 240) -> str:
    """A job's series: each result a dot with its 95 % CI as a bar, in order, on a y axis that
    starts at zero (a small change should look small)."""
    from html import escape
    pad = 40
    top = max((p.get("ci_high") or p["throughput"]) for p in points) * 1.1 or 1.0
    n = len(points)

    def x(i: int) -> float:
        return pad + (i + 0.5) * (width - 2 * pad) / n

    def y(v: float) -> float:
        return height - pad - v / top * (height - 2 * pad)
    parts = [f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#888"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#888"/>',
             f'<text x="2" y="{pad}" font-size="10">{top:.4g}</text>',
             f'<text x="2" y="{height - pad}" font-size="10">0</text>']
    def label(p: dict) -> str:
        return escape(str(p.get("image") or (p.get("started") or "-"))[:40])
    parts.append(f'<text x="{pad}" y="{height - pad + 14}" font-size="10">{label(points[0])}</text>')
    if n > 1:
        parts.append(f'<text x="{width - pad}" y="{height - pad + 14}" font-size="10" text-anchor="end">'
                     f'{label(points[-1])}</text>')
    for i, p in enumerate(points):
        if p.get("ci_low") is not None and p.get("ci_high") is not None:
            parts.append(f'<line class="ci" x1="{x(i):.1f}" y1="{y(p["ci_low"]):.1f}" x2="{x(i):.1f}" '
                         f'y2="{y(p["ci_high"]):.1f}" stroke="#47a"/>')
        tip = escape(f"{p.get('image') or '-'} {p.get('started')}: {p['throughput']:.4g}")
        parts.append(f'<circle class="point" cx="{x(i):.1f}" cy="{y(p["throughput"]):.1f}" r="3" fill="#136">'
                     f"<title>{tip}</title></circle>")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}">' + "".join(parts) + "</svg>")


def dump(text: str, output) -> None:
    """Text to stdout, or atomically to `output`."""
    if output is None:
        import sys
        sys.stdout.write(text)
        return
    from dnnbench.workloads import fileio
    fileio.write_atomic_text(str(output), text)


def json_text(value) -> str:
    return json.dumps(value, indent=1, default=str) + "\n"
