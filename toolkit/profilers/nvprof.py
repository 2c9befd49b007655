"""nvprof (CUDA before compute capability 8.0): top kernels of `--print-gpu-summary`, one file
per process (torchrun's parent has none)."""
from __future__ import annotations

import re
from functools import partial
from typing import Any

from .common import TOP, NoProfileData, Profiler, ProfileFormatError, RunFolder, csv_from, kernels_table, number, read_text, to_ns

def _with_unit(text: str) -> tuple[float | None, str]:
    """nvprof values with the unit inline when there is no units row ("542.36ms", "47.79%")."""
    m = re.fullmatch(r"\s*([-+\d.,eE]+)\s*([a-zµ%]*)\s*", str(text))
    return (number(m.group(1)), m.group(2)) if m else (None, "")


def nvprof_summary(text: str) -> dict:
    """`nvprof --csv --print-gpu-summary`: a header, usually a units row (",%,ms,..."), then rows.
    CUDA 8 and older print no `Type` column (GPU rows only) and may put units inline; memcpy and
    memset rows are GPU activities but not kernels."""
    if "Profiling result" not in text and '"Type"' not in text and "Time(%)" not in text:
        raise NoProfileData("no GPU activity recorded in this process")
    rows = csv_from(text.splitlines(), lambda line: line.lstrip('"').startswith(("Type", "Time(%)")), quoted=False)
    header = [h.strip() for h in rows[0]]
    col = {h: i for i, h in enumerate(header)}
    body = [r for r in rows[1:] if len(r) >= len(header) and not r[0].startswith("==")]
    units = {}
    if body and number(body[0][col["Time"]]) is None and _with_unit(body[0][col["Time"]])[0] is None:
        units, body = dict(zip(header, body[0])), body[1:]       # the units row
    kernels: list[dict[str, Any]] = []
    copies = 0.0
    for r in body:
        if "Type" in col and r[col["Type"]] != "GPU activities":
            continue
        name = ",".join(r[col["Name"]:])     # unquoted names keep their commas (CUDA 8)
        value, unit = _with_unit(r[col["Time"]])
        ns = to_ns(value, units.get("Time") or unit)
        if ns is None:
            raise ProfileFormatError(f"nvprof time {r[col['Time']]!r} has no known unit")
        if name.startswith("[CUDA "):
            copies += ns
            continue
        kernels.append({"name": name, "total_ns": ns, "instances": int(number(r[col["Calls"]]) or 0)})
    total = sum(k["total_ns"] for k in kernels)
    for k in kernels:
        k["time_pct"] = 100 * k["total_ns"] / total if total else None
    kernels.sort(key=lambda k: -k["total_ns"])
    return {"kernels": kernels[:TOP], "kernel_names": len(kernels), "memcpy_memset_ns": copies,
            "time_pct_of": "kernel time (memcpy/memset left out)"}


# rocprof v1 lists the AQL barrier packets RCCL/HIP insert next to kernels; rocprof 4.x an
# "Unknown command type" row. Neither is a kernel.
def _summary_of(path) -> dict:
    return nvprof_summary(read_text(path))


def read(f: RunFolder) -> None:
    for p in sorted(f.folder.glob("nvprof-*.csv")) if f.folder.is_dir() else []:
        f.attempt(f"nvprof:{p.stem}", partial(_summary_of, p))


def show(key: str, summary: dict, top: int) -> None:
    from dnnbench.console import out
    out.print(kernels_table(f"{key}: top kernels of {summary['kernel_names']}, % of "
                            f"{summary.get('time_pct_of', 'kernel time')}", summary["kernels"], top))


PROFILER = Profiler("nvprof", vendor="nvidia", window="cuda", wraps=True, read=read, show=show)
