"""Report plots (matplotlib PNG) and the self-contained HTML page that shows them."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from dnnbench.errors import DnnbenchError


def _plt():
    try:
        import matplotlib
    except ImportError:
        raise DnnbenchError("plots need matplotlib: pip install 'dnnbench[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def write_plots(jobs: dict, folder: Path) -> list[Path]:
    """throughput.png (per job, one bar per system: the headline, its 95 % CI as error bars) and, for every workload
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
        heads = [jobs[(s, n)].headline if (s, n) in jobs else {} for n in names]
        values = [h.get("value") or 0 for h in heads]
        below = [h["value"] - h["ci95_low"] if h.get("ci95_low") is not None else 0 for h in heads]
        above = [h["ci95_high"] - h["value"] if h.get("ci95_high") is not None else 0 for h in heads]
        ax.bar(xs, values, width, yerr=[below, above], label=s, capsize=3)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_ylabel("throughput (items/s, total; sum items / sum seconds, 95% CI)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    path = folder / "throughput.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    written.append(path)

    sweeps = defaultdict(lambda: defaultdict(list))   # workload -> system -> [(batch, mean)]
    for (s, _), j in jobs.items():
        if j.batch_size and j.throughput:
            sweeps[(j.workload, j.amp, j.world_size)][s].append((j.batch_size, j.throughput))
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
