"""rocprof (AMD): top kernels of `--stats` (v1 rocprof.stats.csv, rocprofv3
<host>/<pid>_kernel_stats.csv)."""
from __future__ import annotations

import re
from functools import partial
from typing import Any

from .common import TOP, Profiler, RunFolder, csv_from, kernels_table, norm, number, read_text

# rocprof v1 lists the AQL barrier packets RCCL/HIP insert next to kernels; rocprof 4.x an
# "Unknown command type" row. Neither is a kernel.
NOT_KERNELS = re.compile(r"^(<.*>|Unknown command type)$")


def rocprof_summary(text: str) -> dict:
    """rocprof `--stats` (v1 out.stats.csv; rocprofv3 *_kernel_stats.csv has the same first
    columns). Shares are recomputed over kernels: the file's Percentage column counts barrier
    packets. Old rocprof writes kernel names unquoted, commas and all: the numbers are the
    last four columns, the name is the rest."""
    rows = csv_from(text.splitlines(), lambda line: norm(line.split(",")[0].strip('"')) == "name", quoted=False)
    keys = [norm(h) for h in rows[0]]
    kernels: list[dict[str, Any]] = []
    for r in rows[1:]:
        extra = len(r) - len(keys)
        if extra < 0:
            continue
        row = dict(zip(keys, [",".join(r[:extra + 1])] + r[extra + 1:]))
        if NOT_KERNELS.match(row["name"].strip()):
            continue
        kernels.append({"name": row["name"], "instances": int(number(row.get("calls")) or 0),
                        "total_ns": number(row.get("totaldurationns")), "avg_ns": number(row.get("averagens"))})
    total = sum(k["total_ns"] or 0 for k in kernels)
    for k in kernels:
        k["time_pct"] = 100 * (k["total_ns"] or 0) / total if total else None
    kernels.sort(key=lambda k: -(k["total_ns"] or 0))
    return {"kernels": kernels[:TOP], "kernel_names": len(kernels), "time_pct_of": "kernel time (barrier packets left out)"}


def _summary_of(path) -> dict:
    return rocprof_summary(read_text(path))


def read(f: RunFolder) -> None:
    folder = f.folder
    stats = ([folder / "rocprof.stats.csv"] if (folder / "rocprof.stats.csv").is_file() else []) + \
        (sorted(folder.rglob("*kernel_stats.csv")) if folder.is_dir() else [])
    for p in stats:
        key = "rocprof" if len(stats) == 1 else f"rocprof:{p.relative_to(folder).with_suffix('')}"
        f.attempt(key, partial(_summary_of, p))


def show(key: str, summary: dict, top: int) -> None:
    from dnnbench.console import out
    out.print(kernels_table(f"{key}: top kernels of {summary['kernel_names']}, % of "
                            f"{summary.get('time_pct_of', 'kernel time')}", summary["kernels"], top))


# rocprof v1 has no cudaProfilerApi range: it traces the whole run
PROFILER = Profiler("rocprof", vendor="amd", window=None, wraps=True, read=read, show=show)
