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


def when(value) -> str:
    """A time as the page shows it: to the minute, UTC (never to the microsecond)."""
    return value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else str(value or "-")[:16].replace("T", " ")


def as_html(title: str, rows: list[dict], marks: dict | None = None) -> str:
    """One self-contained page: a plot per job and GPU model (inline SVG: no image files, no
    scripts; units on both axes, a log scale where a series spans more than 10x), then the rows
    in a box of their own that scrolls sideways (the page never does), names on one line."""
    from html import escape
    groups: dict[str, list[dict]] = {}
    for r in rows:
        if isinstance(r.get("throughput"), (int, float)):
            groups.setdefault(series_key(r), []).append(r)
    plots = "\n".join(f"<h2>{escape(name)}</h2>\n{svg(points, (marks or {}).get(name, []))}"
                      for name, points in groups.items())
    from dnnbench.console import number
    from dnnbench.results.numbers import fmt
    head = "".join(f"<th>{escape(k)}</th>" for k in PAGE)
    names = {"job", "image", "host", "gpu"}

    def cells(r: dict) -> list:
        value = "-" if r.get("throughput") is None else f"{fmt(r['throughput'])} {r.get('unit') or ''}"
        return [when(r.get("started")), *(r.get(k) for k in PAGE[1:-2]), value, number(ci_pct(r))]

    def td(key: str, v) -> str:
        text = escape("-" if v is None else str(v))
        return f'<td class="name" title="{text}">{text}</td>' if key in names else f"<td>{text}</td>"
    body = "\n".join("<tr>" + "".join(td(k, v) for k, v in zip(PAGE, cells(r))) + "</tr>" for r in rows)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<style>body{font-family:sans-serif;margin:2em}.box{max-width:100%;overflow-x:auto}"
            "table{border-collapse:collapse;font-size:small}"
            "td,th{border:1px solid #ccc;padding:2px 6px;white-space:nowrap}"
            "td.name{max-width:24em;overflow:hidden;text-overflow:ellipsis}"
            "svg{background:#fafafa;max-width:100%;height:auto}</style>"
            f"</head><body>\n<h1>{escape(title)}</h1>\n{plots}\n<div class=\"box\"><table id=\"rows\"><tr>{head}</tr>\n"
            f"{body}\n</table></div>\n</body></html>\n")


def svg(points: list[dict], references: list | None = None, width: int = 720, height: int = 260) -> str:
    """A job's series: each result a dot with its 95 % CI as a bar, in order, on a y axis that
    starts at zero (a small change should look small), or a log axis where the series spans more
    than 10x (a slow result beside fast ones stays visible); both axes say what they are, the y
    axis with its unit; published references (refs.marks) as their own labelled marks."""
    import math
    from html import escape

    from dnnbench.refs.marks import SHOWN, svg_lines
    left, pad, bottom = 64, 24, 44
    references = references or []
    values = [p["throughput"] for p in points] + [p.get("ci_high") or p["throughput"] for p in points]
    values += [v for r in references[:SHOWN] for v in (r["value"], r.get("spread_high"), r.get("spread_low"))
               if isinstance(v, (int, float))]
    positive = [v for v in values if v > 0]
    log = len(positive) > 1 and max(positive) / min(positive) > 10
    top = max(values) * 1.1 or 1.0
    floor = min(positive) / 1.5 if log else 0.0
    n = len(points)
    unit = next((p.get("unit") for p in points if p.get("unit")), None) or "items/s"

    def x(i: int) -> float:
        return left + (i + 0.5) * (width - left - pad) / n

    def y(v: float) -> float:
        share = (math.log(max(v, floor) / floor) / math.log(top / floor)) if log else v / top
        return height - bottom - share * (height - bottom - pad)
    parts = [f'<line x1="{left}" y1="{height - bottom}" x2="{width - pad}" y2="{height - bottom}" stroke="#888"/>',
             f'<line x1="{left}" y1="{pad}" x2="{left}" y2="{height - bottom}" stroke="#888"/>',
             f'<text x="{left - 4}" y="{pad + 4}" font-size="10" text-anchor="end">{top:.4g}</text>',
             f'<text x="{left - 4}" y="{height - bottom}" font-size="10" text-anchor="end">{floor:.3g}</text>',
             f'<text class="axis y" x="12" y="{(height - bottom + pad) / 2:.0f}" font-size="11" text-anchor="middle" '
             f'transform="rotate(-90 12 {(height - bottom + pad) / 2:.0f})">'
             f'{escape(f"throughput ({unit}, 95% CI)" + (", log scale" if log else ""))}</text>',
             f'<text class="axis x" x="{(left + width - pad) / 2:.0f}" y="{height - 6}" font-size="11" '
             f'text-anchor="middle">results in order (image; started, UTC)</text>']

    def label(p: dict) -> str:
        from dnnbench.console import shorten_middle    # a tag is at an image name's end: both ends kept
        return escape(shorten_middle(str(p.get("image") or when(p.get("started"))), 48))
    parts.append(f'<text x="{left}" y="{height - bottom + 14}" font-size="10">{label(points[0])}</text>')
    if n > 1:
        parts.append(f'<text x="{width - pad}" y="{height - bottom + 14}" font-size="10" text-anchor="end">'
                     f'{label(points[-1])}</text>')
    for i, p in enumerate(points):
        if p.get("ci_low") is not None and p.get("ci_high") is not None:
            parts.append(f'<line class="ci" x1="{x(i):.1f}" y1="{y(p["ci_low"]):.1f}" x2="{x(i):.1f}" '
                         f'y2="{y(p["ci_high"]):.1f}" stroke="#47a"/>')
        tip = escape(f"{p.get('image') or '-'} {when(p.get('started'))}: {p['throughput']:.4g} {unit}")
        parts.append(f'<circle class="point" cx="{x(i):.1f}" cy="{y(p["throughput"]):.1f}" r="3" fill="#136">'
                     f"<title>{tip}</title></circle>")
    parts.append(svg_lines(references, y, left, width - pad))
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
