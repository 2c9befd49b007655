"""MLPerf Training results: a round's `<Submitter>/summary.json` and what mlperf-logging's
`result_summarizer` writes (`--csv x.csv`: x.csv, x_detailed.csv and their .json twins).

Two layouts: one key per benchmark holding minutes to train or null (v5.1's summary.json, the
summarizer's plain csv/json), and `<benchmark>:time_to_train` with `:GBS`,
`:samples_to_converge`, `:RCP`... beside it (v6.0's summary.json, the summarizer's _detailed).
A null is "not submitted". The value is minutes to train, never compared with a throughput."""
from __future__ import annotations

import csv
import io
import json
import re

from dnnbench.refs import reference as ref
from dnnbench.refs import tables

SOURCE = "mlperf"
REQUIRED = ("submitter", "system", "accelerator_model_name", "accelerators_count")
# the columns that describe a system; in the first layout every other key is a benchmark
SYSTEM = ("division", "availability", "submitter", "system", "number_of_nodes", "host_processor_model_name",
          "host_processors_count", "accelerator_model_name", "accelerators_count", "framework", "notes",
          "private_id", "details_url", "code_url")
TIME = ":time_to_train"
_ROUND = re.compile(r"training_results_(v\d+\.\d+)")


def sniff(text: str, filename: str) -> bool:
    head = text.lstrip("\ufeff")[:4096]
    return "accelerator_model_name" in head and "submitter" in head


def read(text: str, filename: str, precision: str | None = None, gpu: str | None = None) -> ref.Parsed:
    body = text.lstrip("\ufeff")
    entries = _json(body) if body.lstrip().startswith("[") else _csv(body)
    if not entries or not all(isinstance(e, dict) for e in entries):
        raise ref.Refused("not a layout MLPerf publishes: a summary is a list of systems")
    keys = set().union(*entries)
    missing = [k for k in REQUIRED if k not in keys]
    if missing:
        raise ref.Refused(f"not a layout MLPerf publishes: no {missing[0]!r}")
    detailed = any(k.endswith(TIME) for k in keys)
    benches = sorted(k[:-len(TIME)] for k in keys if k.endswith(TIME)) if detailed else \
        sorted(k for k in keys if k not in SYSTEM and ":" not in k)
    if not benches:
        raise ref.Refused("not a layout MLPerf publishes: no benchmark column")
    parsed = ref.Parsed()
    seen: dict[tuple, int] = {}
    for n, entry in enumerate(entries, start=1):
        where = f"system {n}"
        try:
            system = ref.name(entry.get("system"), where, "system")
            submitter = ref.name(entry.get("submitter"), where, "submitter")
            where = f"system {n} ({submitter}/{system[:40]})"
            model = gpu or ref.name(entry.get("accelerator_model_name"), where, "accelerator")
            # the summarizer's accelerators_count is every node's (per node x nodes)
            gpus = ref.count(entry.get("accelerators_count"), f"{where} accelerators_count")
            division = str(entry.get("division") or "")
            ident = (division, submitter, system)
            if ident in seen:
                raise ValueError(f"{where}: the same system as system {seen[ident]}")
            seen[ident] = n
            found = []
            for bench in benches:
                minutes = entry.get(bench + TIME if detailed else bench)
                if minutes is None:
                    continue
                value = ref.number(minutes, f"{where} {bench}")
                gbs = entry.get(bench + ":GBS") if detailed else None
                found.append((bench, value, None if gbs is None else ref.count(gbs, f"{where} {bench}:GBS")))
        except ValueError as exc:
            parsed.bad.append(str(exc))
            continue
        parsed.missing += len(benches) - len(found)
        version = _round(entry)
        for bench, value, gbs in found:
            parsed.references.append(ref.make(
                source=SOURCE, version=version, system=f"{submitter} {system}" + (f" ({division})" if division else ""),
                gpu=model, gpu_count=gpus, source_workload=bench, workload=tables.workload(SOURCE, bench),
                precision=None, batch_size=gbs, value=value, unit=ref.TIME_UNIT))
    return parsed


def _round(entry: dict) -> str | None:
    """The round the entry's own links name (training_results_v5.1), when they do."""
    for k in ("details_url", "code_url"):
        found = _ROUND.search(str(entry.get(k) or ""))
        if found:
            return found.group(1)
    return None


def _json(body: str) -> list:
    try:
        data = json.loads(body)
    except RecursionError:
        raise ref.Refused("JSON nested too deep") from None
    except ValueError as exc:
        raise ref.Refused(f"not valid JSON ({exc})") from None
    if not isinstance(data, list):
        raise ref.Refused("not a layout MLPerf publishes: a summary is a list of systems")
    return data


def _csv(body: str) -> list:
    """The summarizer's CSV as its JSON holds it: an empty cell is null."""
    rows = [r for r in csv.reader(io.StringIO(body)) if any(c.strip() for c in r)]
    if not rows:
        raise ref.Refused("empty file")
    header = rows[0]
    out = []
    for line, cells in enumerate(rows[1:], start=2):
        if len(cells) != len(header):
            raise ref.Refused(f"line {line}: {len(cells)} cells under a header of {len(header)}")
        out.append({k: (None if v == "" else v) for k, v in zip(header, cells)})
    return out
