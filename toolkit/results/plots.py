"""Report plots (matplotlib PNG) and the self-contained HTML page that shows them."""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence
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


def write_plots(jobs: dict, folder: Path, inputs: Sequence[Path | str] = ()) -> list[tuple[str, bytes]]:
    """Write plots() into `folder` through the file layer (a planted link or FIFO is refused,
    never followed; no input result is overwritten); returns what was written."""
    from dnnbench.workloads import fileio
    made = plots(jobs)
    try:
        fileio.make_dirs(str(folder))
        for name, data in made:
            fileio.refuse_overwrite_of(folder / name, inputs)
            fileio.write_atomic_bytes(str(folder / name), data)
    except OSError as exc:
        raise DnnbenchError(f"cannot write plots into {folder}: {exc.filename or folder}: "
                            f"{exc.strerror or exc}") from None
    return made


SPAN = 10.0     # values further apart than this on one axis: a log scale (the small bar stays visible)
AXES_KEY = "Description"     # the PNG text chunk that names the plot's axes (the page's caption reads it)


def _png(fig) -> bytes:
    """The figure as PNG, with what its axes are (every subplot's labels, units included) in the
    file's Description: the HTML page says it under the plot, a test reads it."""
    import io
    axes = "; ".join(f"x: {ax.get_xlabel()}, y: {ax.get_ylabel()}" + (" (log scale)" if ax.get_yscale() == "log" else "")
                     for ax in fig.get_axes() if ax.get_xlabel() or ax.get_ylabel())
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={AXES_KEY: axes})
    return buf.getvalue()


def axes_of(png: bytes) -> str | None:
    """The axes a plot's PNG names (its Description text chunk), None where it names none."""
    import struct
    import zlib
    at = 8
    while at + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        data = png[at + 8:at + 8 + length]
        if kind in (b"tEXt", b"zTXt", b"iTXt"):
            key, _, text = data.partition(b"\0")
            if key == AXES_KEY.encode():
                if kind == b"zTXt":
                    text = zlib.decompress(text[1:])
                elif kind == b"iTXt":    # compression flag, method, language, translated keyword
                    flag, rest = text[0], text[2:]
                    rest = rest.split(b"\0", 2)[2]
                    text = zlib.decompress(rest) if flag else rest
                return text.decode("utf-8", "replace")
        if kind == b"IEND":
            break
        at += 12 + length
    return None


def _scaled(ax, values: list[float]) -> None:
    """A log y axis where the positive values span more than SPAN times."""
    shown = [v for v in values if v and v > 0]
    if len(shown) > 1 and max(shown) / min(shown) > SPAN:
        ax.set_yscale("log")


def plots(jobs: dict) -> list[tuple[str, bytes]]:
    """The plots, with matplotlib's own warnings (a glyph a name uses that the font lacks) kept
    off the terminal: they say nothing about the figures."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _plots(jobs)


def _plots(jobs: dict) -> list[tuple[str, bytes]]:
    """throughput.png (per job, one bar per system: the headline, its 95 % CI as error bars) and, for every workload
    run at several batch sizes, scaling-<workload>.png (throughput vs batch size); made in memory,
    named with safe file names whatever the workloads are called."""
    from dnnbench import names as names_mod
    from dnnbench.console import visible
    plt = _plt()
    written = []
    from dnnbench.results.job_names import column_name
    by_cell = {(j.system, column_name(j, jobs)): j for j in jobs.values()}   # a job on several images: one bar each
    systems = sorted({s for s, _ in by_cell})
    # one panel per unit (images/s beside samples/s would share an axis that means neither)
    units = sorted({j.unit or "items/s" for j in by_cell.values()})
    panels = {u: sorted({n for (_, n), j in by_cell.items() if (j.unit or "items/s") == u}) for u in units}
    fig, axes = plt.subplots(1, len(units), squeeze=False, figsize=(
        max(6, sum(0.6 * len(names) * len(systems) + 2 for names in panels.values())), 4.5))
    width = 0.8 / max(1, len(systems))
    for ax, unit in zip(axes[0], units):
        names = panels[unit]
        values_here = []
        for i, s in enumerate(systems):
            xs = [k + i * width for k in range(len(names))]
            heads = [by_cell[(s, n)].headline if (s, n) in by_cell else {} for n in names]
            values = [h.get("value") or 0 for h in heads]
            values_here += values
            below = [h["value"] - h["ci95_low"] if h.get("ci95_low") is not None else 0 for h in heads]
            above = [h["ci95_high"] - h["value"] if h.get("ci95_high") is not None else 0 for h in heads]
            ax.bar(xs, values, width, yerr=[below, above], label=visible(s, one_line=True)[:60], capsize=3)
        _scaled(ax, values_here)
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(names))])
        ax.set_xticklabels([visible(n, one_line=True)[:60] for n in names], rotation=30, ha="right")
        ax.set_xlabel("job")
        ax.set_ylabel(visible(f"throughput ({unit}, 95% CI)", one_line=True)[:60])   # short: cut at the edge
        ax.legend(fontsize="small")
    fig.suptitle("sum of items / sum of seconds over every timed window", fontsize="small")
    fig.tight_layout()
    written.append(("throughput.png", _png(fig)))
    plt.close(fig)

    sweeps: dict = defaultdict(lambda: defaultdict(list))   # workload -> system -> [(batch, mean)]
    unit_of: dict = {}
    for j in jobs.values():
        if j.batch_size and j.throughput:
            label = j.system if j.image is None else f"{j.system} {j.image}"
            sweeps[(j.workload, j.amp, j.world_size)][label].append((j.batch_size, j.throughput))
            unit_of[(j.workload, j.amp, j.world_size)] = j.unit or "items/s"
    for (workload, amp, world), per_system in sorted(sweeps.items()):
        if max(len(v) for v in per_system.values()) < 2:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for s, points in sorted(per_system.items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=visible(s, one_line=True)[:60])
        ax.set_xscale("log", base=2)
        _scaled(ax, [p[1] for points in per_system.values() for p in points])
        ax.set_xlabel("batch size per GPU (samples)")
        ax.set_ylabel(visible(f"throughput ({unit_of[(workload, amp, world)]}, total)", one_line=True)[:60])
        ax.set_title(visible(f"{workload} ({amp}, {world} process{'es' if world > 1 else ''})", one_line=True)[:80])
        ax.legend(fontsize="small")
        fig.tight_layout()
        written.append((f"scaling-{names_mod.slug(f'{workload}-{amp}')[:100]}-x{int(world)}.png", _png(fig)))
        plt.close(fig)
    written += _accuracy_curves(jobs, plt)
    return written


def _accuracy_curves(jobs: dict, plt) -> list[tuple[str, bytes]]:
    """accuracy-<job>.png for every job that trained: its evaluation (top-1, HR@10) against time on
    the clock, one line per run, the target as a dashed line."""
    from dnnbench import names as names_mod
    from dnnbench.console import visible
    from dnnbench.results.job_names import column_name
    from dnnbench.workloads.schema import finite
    written = []
    for j in sorted(jobs.values(), key=lambda j: (j.system, j.job, j.image or "")):
        system, name = j.system, column_name(j, jobs)
        trained = [r for r in j.results if isinstance(r.get("training"), dict)]
        runs = [r["training"] for r in trained]
        ids = [str(r.get("run_id") or f"run {k}") for k, r in enumerate(trained, 1)]
        curves = [[(t, a) for t, a in (run.get("curve") or []) if finite(t) and finite(a)] for run in runs]
        if not any(curves):
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for run_id, points in zip(ids, curves):
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                        label=visible(run_id, one_line=True)[-40:])   # runs by id: its end tells them apart
        target = next((run.get("target") for run in runs if finite(run.get("target"))), None)
        if target is not None:
            ax.axhline(target, linestyle="--", color="grey", label=f"target {target:g} %")
        ax.set_xlabel("time on the clock (s)")
        from dnnbench.workloads.schema import metric_name
        ax.set_ylabel(f"eval {metric_name(next((run.get('metric') for run in runs if run.get('metric')), None))} (%)")
        ax.set_title(visible(f"{name} on {system}", one_line=True)[:80])
        ax.legend(fontsize="small")
        fig.tight_layout()
        written.append((f"accuracy-{names_mod.slug(f'{system}-{name}')[:100]}.png", _png(fig)))
        plt.close(fig)
    return written
