"""Report plots (matplotlib PNG) and the self-contained HTML page that shows them."""
from __future__ import annotations

import base64
import html
from collections import defaultdict
from pathlib import Path

from .errors import DnnbenchError


def _plt():
    try:
        import matplotlib
    except ImportError:
        raise DnnbenchError("plots need matplotlib: pip install 'dnnbench[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def write_plots(jobs: dict, folder: Path) -> list[Path]:
    """throughput.png (per job, one bar per system, sd as error bars) and, for every workload
    run at several batch sizes, scaling-<workload>.png (throughput vs batch size)."""
    plt = _plt()
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    systems = sorted({s for s, _ in jobs})
    names = sorted({n for _, n in jobs})
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(names) * len(systems) + 2), 4.5))
    width = 0.8 / max(1, len(systems))
    for i, s in enumerate(systems):
        xs = [k + i * width for k in range(len(names))]
        means = [jobs[(s, n)].mean or 0 if (s, n) in jobs else 0 for n in names]
        sds = [jobs[(s, n)].sd or 0 if (s, n) in jobs else 0 for n in names]
        ax.bar(xs, means, width, yerr=sds, label=s, capsize=3)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_ylabel("throughput (items/s, total)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    path = folder / "throughput.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    written.append(path)

    sweeps = defaultdict(lambda: defaultdict(list))   # workload -> system -> [(batch, mean)]
    for (s, _), j in jobs.items():
        if j.batch_size and j.mean:
            sweeps[(j.workload, j.amp, j.world_size)][s].append((j.batch_size, j.mean))
    for (workload, amp, world), per_system in sorted(sweeps.items()):
        if max(len(v) for v in per_system.values()) < 2:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for s, points in sorted(per_system.items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=s)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size per GPU")
        ax.set_ylabel("throughput (items/s, total)")
        ax.set_title(f"{workload} ({amp}, {world} process{'es' if world > 1 else ''})")
        ax.legend(fontsize="small")
        fig.tight_layout()
        path = folder / f"scaling-{workload}-{amp}-x{world}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def html_page(table: list[dict], pngs: list[Path], score: float | None, *, with_baseline: bool) -> str:
    from .report import cell, columns
    cols = columns(table, with_baseline)
    head = "".join(f"<th>{html.escape(h)}</th>" for _, h in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(cell(r, k))}</td>" for k, _ in cols) + "</tr>"
                   for r in table)
    imgs = "".join(f'<figure><img alt="{html.escape(p.name)}" src="data:image/png;base64,'
                   f'{base64.b64encode(p.read_bytes()).decode()}"><figcaption>{html.escape(p.name)}</figcaption></figure>'
                   for p in pngs)
    score_line = f"<p>score (weighted geometric mean of mean/target): {score:.3f}</p>" if score is not None else ""
    return ("<!doctype html><html><head><meta charset='utf-8'><title>dnnbench report</title><style>"
            "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,td:nth-child(2){text-align:left}"
            "img{max-width:100%}</style></head><body><h1>dnnbench report</h1>"
            "<p>Total throughput per run (summed over ranks and parallel copies), recomputed from each "
            "result's timed windows; mean and sd over runs.</p>"
            f"<table><tr>{head}</tr>{body}</table>{score_line}{imgs}</body></html>\n")
