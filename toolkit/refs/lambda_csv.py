"""Lambda's PyTorch training throughput CSVs (lambdal/deeplearning-benchmark, `pytorch/`).

v1 (`pytorch-train-throughput-fp16.csv`): `name_gpu,num_gpu,watt,price,` then a column per
benchmark; a row per system and GPU count. v2 (`pytorch-train-throughput-v2-fp16.csv`): an
unnamed first column holding `<system>_<N>x<GPU>_<node address>_v2`, then a column per
benchmark; a row per node, so one system's nodes are merged into one reference (median, lowest,
highest). A 0.0 cell is "not measured". The precision is the file name's (`-fp16`, `-fp32`)."""
from __future__ import annotations

import csv
import io
import re

from dnnbench.refs import reference as ref
from dnnbench.refs import tables

SOURCE = "lambda"
V1_FIXED = ("name_gpu", "num_gpu", "watt", "price")
# the benchmarks Lambda's files have columns for: a header with another column is a layout we
# do not know, not a benchmark to guess a unit for
BENCHMARKS = ("ssd", "bert_base_squad", "bert_large_squad", "gnmt", "ncf", "resnet50", "tacotron2",
              "transformerxlbase", "transformerxllarge", "waveglow", "maskrcnn")
_PRECISION = re.compile(r"-(fp16|fp32|tf32|bf16)\.csv$", re.I)
# v2's system names: `LambdaOD_Texas_8xH100_80GB_SXM5_192-222-52-102_v2`
_GPUS = re.compile(r"(?:^|_)(\d+)x([A-Za-z]+\d+[A-Za-z]*(?:_(?:\d+GB|SXM\d?|PCIe|NVL|HBM\d*e?))*)(?=_|$)")
_NODE = re.compile(r"_(\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3})(?=_|$)")


def sniff(text: str, filename: str) -> bool:
    head = text.lstrip("\ufeff").split("\n", 1)[0].strip().lower()
    return head.startswith("name_gpu,") or (head.startswith(",") and any(f",{b}" in head for b in BENCHMARKS))


def read(text: str, filename: str, precision: str | None = None, gpu: str | None = None) -> ref.Parsed:
    found = _PRECISION.search(filename)
    chosen = precision or (found.group(1).lower() if found else None)
    if chosen is None:
        raise ref.Refused("Lambda's files name their precision (-fp16.csv, -fp32.csv); this one does not: "
                          "give --precision")
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise ref.Refused("empty file")
    header = [h.strip() for h in rows[0]]
    fixed, v2 = (("",), True) if header[:1] == [""] else (V1_FIXED, False)
    if tuple(header[:len(fixed)]) != fixed:
        raise ref.Refused(f"not a layout Lambda publishes: the header starts {','.join(header[:len(fixed)])[:60]!r}, "
                          f"not {','.join(fixed)!r}")
    benches = header[len(fixed):]
    unknown = [b for b in benches if b not in BENCHMARKS]
    if unknown or not benches:
        raise ref.Refused(f"column {unknown[0]!r} is not a benchmark Lambda publishes" if unknown
                          else "no benchmark column")
    if len(set(benches)) != len(benches):
        raise ref.Refused("a benchmark column is repeated")
    parsed = ref.Parsed()
    seen: dict[tuple, int] = {}
    measured: dict[tuple, list[float]] = {}     # (system, gpu, count, bench) -> each node's value
    for line, cells in enumerate(rows[1:], start=2):
        where = f"line {line}"
        try:
            if len(cells) != len(header):
                raise ValueError(f"{where}: {len(cells)} cells under a header of {len(header)}")
            label = ref.name(cells[0], where, "system")
            where = f"line {line} ({label[:40]})"
            if v2:
                system, model, gpus = _v2_system(label, where)
                node = label
            else:
                gpus = ref.count(cells[1], f"{where} num_gpu")
                system, model, node = label, _v1_gpu(label), label
            if gpu:
                model = gpu
            ident = (node, gpus) if not v2 else (node,)
            if ident in seen:
                raise ValueError(f"{where}: the same system as line {seen[ident]}")
            seen[ident] = line
            values = [(bench, ref.number(cell, f"{where} {bench}")) for bench, cell in
                      zip(benches, cells[len(fixed):])]
        except ValueError as exc:
            parsed.bad.append(str(exc))
            continue
        for bench, value in values:
            if value == 0:
                parsed.missing += 1
                continue
            measured.setdefault((system, model, gpus, bench), []).append(value)
    for (system, model, gpus, bench), nodes in measured.items():
        parsed.references.append(ref.make(
            source=SOURCE, system=system, gpu=model, gpu_count=gpus, source_workload=bench,
            workload=tables.workload(SOURCE, bench), precision=tables.precision(chosen) or chosen,
            unit=tables.unit(SOURCE, bench), **ref.spread(nodes)))
    return parsed


def _v1_gpu(label: str) -> str:
    """The GPU a v1 row names: the table's longest name the system ends with ("DellTexas 2x H100
    80GB SXM5" is an H100 80GB SXM5), else the name without its count (no model the table knows)."""
    bare = re.sub(r"(^|\s)\d+x\s", r"\1", label).strip()
    return tables.gpu_suffix(bare) or bare


def _v2_system(label: str, where: str) -> tuple[str, str, int]:
    """A v2 row's system (its name without the node's address), GPU model and count."""
    found = _GPUS.search(label)
    if not found:
        raise ValueError(f"{where}: no <N>x<GPU> in the system name")
    system = _NODE.sub("", label)
    return system, found.group(2).replace("_", " "), int(found.group(1))
