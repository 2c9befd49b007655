"""A published figure as one row of `reference_numbers`, and what a reader of a source file
returns: the references it could read, what it skipped as not measured, the rows it could not
read. Every source format (lambda_csv, mlperf_summary, milabench_yaml) builds its rows here."""
from __future__ import annotations

import hashlib
import math
import re
import statistics
from dataclasses import dataclass, field

from dnnbench.console import unprintable

# what a reference's identity is made of: the same figure imported twice (or from another copy
# of the file) is one row; a new value under the same identity is an update
IDENTITY = ("source", "version", "system", "gpu", "gpu_count", "source_workload", "precision", "batch_size",
            "unit")
CONTENT = ("value", "spread_low", "spread_high", "samples", "workload", "file")
FIELDS = ("source", "file", "version", "system", "gpu", "gpu_count", "source_workload", "workload", "precision",
          "batch_size", "value", "unit", "spread_low", "spread_high", "samples")

THROUGHPUT, TIME = "throughput", "time to train"
TIME_UNIT = "minutes"


class Refused(ValueError):
    """A file that is not read at all: its layout is not one the source publishes, or it is not
    a regular UTF-8 file of bounded size. Nothing of it is imported."""


@dataclass
class Parsed:
    """A file read: its references, the cells or entries the source left empty (0.0 in Lambda's
    CSVs, null in MLPerf's summaries: not measured, never a zero), and the rows it could not
    read, each as `where: why`."""
    references: list = field(default_factory=list)
    missing: int = 0
    bad: list = field(default_factory=list)


def kind_of(unit: str | None) -> str:
    """What a figure measures: items per second, or minutes to train (never compared across)."""
    return TIME if unit == TIME_UNIT else THROUGHPUT


# a published figure as text: digits, a point, an exponent (never Python's "1_000", "nan", "inf")
_NUMBER = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*")


def number(text, where: str) -> float:
    """A published value: a finite number >= 0 (0 is the caller's "not measured"); ValueError
    naming `where` otherwise."""
    if isinstance(text, bool) or not (isinstance(text, (int, float)) or _NUMBER.fullmatch(str(text))):
        raise ValueError(f"{where}: {str(text)[:40]!r} is not a number")
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: {str(text)[:40]!r} is not a finite number >= 0")
    return value


def count(text, where: str) -> int:
    """A GPU count or batch size: a whole number >= 1."""
    value = number(text, where)
    if value < 1 or value != int(value):
        raise ValueError(f"{where}: {str(text)[:40]!r} is not a whole number >= 1")
    return int(value)


def name(text, where: str, what: str) -> str:
    """A system or GPU name as published: refused when it holds control characters (a terminal
    would act on them), never cleaned into another name."""
    value = str(text).strip()
    if unprintable(value):
        raise ValueError(f"{where}: the {what} {value[:60]!r} holds control characters")
    if not value:
        raise ValueError(f"{where}: no {what}")
    return value


def spread(values: list[float]) -> dict:
    """A reference merged from several measurements (Lambda's nodes, milabench's repeats): their
    median, lowest and highest."""
    if len(values) == 1:
        return {"value": values[0], "spread_low": None, "spread_high": None, "samples": 1}
    return {"value": statistics.median(values), "spread_low": min(values), "spread_high": max(values),
            "samples": len(values)}


def make(**facts) -> dict:
    """A reference row: every FIELD (absent ones None) and its identity hash."""
    row = {k: facts.get(k) for k in FIELDS}
    row.setdefault("samples", 1)
    if row["samples"] is None:
        row["samples"] = 1
    text = "\0".join("" if row[k] is None else str(row[k]) for k in IDENTITY)
    row["identity"] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return row


_WORD = re.compile(r"[\s_\-]+")


def key(text: str | None) -> str:
    """A name compared case- and separator-blind: `H100_80GB_SXM5` is `h100 80gb sxm5`."""
    return _WORD.sub(" ", (text or "").lower()).strip()
