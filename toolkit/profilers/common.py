"""What every profiler module shares: the registry entry (Profiler), the run-folder reader
each one fills (RunFolder), and the parsing helpers for the CSV and JSON profilers write."""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from dnnbench.workloads import fileio

TOP = 15


class ProfileFormatError(ValueError):
    pass


class NoProfileData(ProfileFormatError):
    """The profiler ran but this file holds no GPU activity (e.g. nvprof's file for torchrun's parent)."""


def number(text) -> float | None:
    """ncu/nsys numbers: thousands separators, blanks and n/a."""
    text = str(text).strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def csv_from(lines: list[str], header_test, quoted: bool = True) -> list[list[str]]:
    """The CSV part of a profiler's output, from the header row on. ncu and nvprof quote every
    field, and their log also holds `==PROF==` lines and the program's output: `quoted` keeps
    only quoted rows. nsys writes plain CSV files."""
    start = next((i for i, line in enumerate(lines) if header_test(line)), None)
    if start is None:
        raise ProfileFormatError("no header row found")
    kept = [line for line in lines[start:] if (line.startswith(('"', ",")) if quoted else line.strip())]
    return list(csv.reader(kept))


# Time units as profilers print them (ncu's base `nsecond`, its auto-scaled `usecond`/`msecond`,
# nvprof's `us`/`ms`), in ns. A unit not listed here is not a time: never guessed.
TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "µs": 1e3, "ms": 1e6, "msecond": 1e6,
           "s": 1e9, "second": 1e9}
# ncu scales counts with a prefix when --print-units is auto ("Kcycle", "Mcycle").
PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def to_cycles(value: float | None, unit: str) -> float | None:
    m = re.fullmatch(r"([KMG]?)cycle", unit.strip())
    return value * PREFIX[m.group(1)] if m and value is not None else None


def to_ns(value: float | None, unit: str) -> float | None:
    scale = TIME_NS.get(unit.strip())
    return value * scale if scale is not None and value is not None else None


def norm(name: str) -> str:
    return re.sub(r"[\s()]", "", name).lower()


def table(text: str, first: str) -> list[dict]:
    """CSV rows keyed by normalized column name ("Time (%)" and "Time(%)" -> "time%")."""
    rows = csv_from(text.splitlines(), lambda line: norm(line.split(",")[0].strip('"')) == first, quoted=False)
    keys = [norm(h) for h in rows[0]]
    return [dict(zip(keys, r)) for r in rows[1:] if len(r) == len(keys)]


PROFILE_MAX = 1 << 30     # bytes of one profiler file read at most (nsys traces run to hundreds of MB)


def read_text(path: Path) -> str:
    """A profiler's output through the file layer: no link followed, never a FIFO, bounded."""
    return fileio.read_text(str(path), max_bytes=PROFILE_MAX, errors="replace")


def read_trace(path: Path) -> dict:
    """torch.profiler's tensorboard handler writes .json or, with use_gzip, .json.gz."""
    import zlib
    raw = fileio.read_bytes(str(path), max_bytes=PROFILE_MAX)
    if path.suffix == ".gz":
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        raw = inflate.decompress(raw, PROFILE_MAX)
        if inflate.unconsumed_tail:
            raise ValueError(f"{path.name} inflates to more than {PROFILE_MAX >> 20} MiB")
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError(f"{path.name}: JSON nested too deep") from None


@dataclass
class RunFolder:
    """A run folder as the profilers' readers see it: each adds its summaries with attempt()."""
    run_dir: Path
    launch: dict                        # what the container launcher chose (profile/launch.json)
    window_s: float | None              # the timed window's seconds, from the result
    found: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)
    skipped: list = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return self.run_dir / "profile"

    def attempt(self, key: str, fn: Callable[[], dict]) -> None:
        try:
            self.found[key] = fn()
        except NoProfileData as exc:
            self.skipped.append(f"{key}: {exc}")
        except (ProfileFormatError, ValueError, KeyError, IndexError, OSError) as exc:
            self.problems.append(f"{key}: {exc}")


@dataclass(frozen=True)
class Profiler:
    """One profiler, all dnnbench knows of it. A new one is a module that makes one of these,
    plus its line in PROFILERS (dnnbench/profilers/__init__.py); one that wraps the workload in
    the container also gets its class in the container launcher's TOOLS (workloads/profile.py)."""
    name: str                           # --profile NAME, and the key of its summary in result.json
    vendor: str | None                  # "nvidia" / "amd": the GPUs it profiles; None: any run, CPU too
    window: str | None                  # the --profile-window the workload brackets its timed steps with
    wraps: bool                         # runs the workload under the container launcher
    read: Callable[[RunFolder], None]   # finds its files in the run folder, summarizes them
    show: Callable[[str, dict, int], None]   # prints a summary (its key, the summary, --top)


def kernels_table(title: str, kernels: list[dict], top: int):
    """The table every profiler shows: its top kernels (or ops) by time."""
    from rich.table import Table

    from dnnbench.console import escape, number
    t = Table(title=escape(title))
    for col in ("kernel / op", "time %", "total ms", "calls", "avg µs"):
        t.add_column(col, justify="left" if col == "kernel / op" else "right", overflow="fold")
    for k in kernels[:top]:
        total = k.get("total_ns")
        avg = k.get("avg_ns") or (total / k["instances"] if total and k.get("instances") else None)
        t.add_row(_name(k.get("name") or "?"), number(k.get("time_pct")), number(total / 1e6 if total else None, 3),
                  escape(str(k.get("instances", "-"))), number(avg / 1e3 if avg else None, 2))
    return t


NAME_WIDTH = 90


def _name(name: str) -> str:
    """A kernel name for a rich table: cut, and escaped (names hold `[` `]`, rich markup)."""
    from dnnbench.console import escape
    return escape(name if len(name) <= NAME_WIDTH else name[:NAME_WIDTH - 1] + "…")
