"""milabench's scaling files (mila-iqia/milabench, `config/scaling/H100.yaml`): per benchmark,
`observations:` of `batch_size, cpu, memory, perf (items/s), time`. The observations of one
benchmark and batch size (taken with other CPU counts) are merged into one reference (median,
lowest, highest). The GPU is the file's name (H100.yaml) unless --gpu names the model; a
`-gpus` benchmark ran on every GPU of a node (the count not stated), the others on one."""
from __future__ import annotations

from dnnbench.refs import reference as ref
from dnnbench.refs import tables

SOURCE = "milabench"
OBSERVATION = ("batch_size", "perf")
# milabench's torchvision benchmarks run with --precision tf32-fp16 unless a name says otherwise
DEFAULT_PRECISION = {"resnet50": "tf32-fp16", "resnet50-noio": "tf32-fp16"}


def sniff(text: str, filename: str) -> bool:
    return "observations:" in text[:65536]


def read(text: str, filename: str, precision: str | None = None, gpu: str | None = None) -> ref.Parsed:
    from dnnbench.errors import DnnbenchError
    from dnnbench.yaml_files import parse
    try:
        data = parse(text, filename)
    except DnnbenchError as exc:
        raise ref.Refused(str(exc)) from None
    if not isinstance(data, dict) or not any(isinstance(v, dict) and "observations" in v for v in data.values()):
        raise ref.Refused("no benchmark with `observations:` (not a milabench scaling file)")
    stem = filename.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    model = gpu or stem
    parsed = ref.Parsed()
    try:
        model = ref.name(model, "the file name", "GPU")
    except ValueError as exc:
        raise ref.Refused(str(exc)) from None
    for bench, entry in data.items():
        if not isinstance(entry, dict) or "observations" not in entry:
            continue       # milabench's own keys (`version`) and benchmarks not measured here
        where = f"{str(bench)[:40]}"
        try:
            name = ref.name(bench, where, "benchmark")
            observations = entry["observations"]
            if not isinstance(observations, list):
                raise ValueError(f"{where}: observations is not a list")
            by_batch: dict[int, list[float]] = {}
            for k, o in enumerate(observations, start=1):
                if not isinstance(o, dict) or any(f not in o for f in OBSERVATION):
                    raise ValueError(f"{where} observation {k}: no {' and '.join(OBSERVATION)}")
                batch = ref.count(o["batch_size"], f"{where} observation {k} batch_size")
                by_batch.setdefault(batch, []).append(ref.number(o["perf"], f"{where} observation {k} perf"))
        except ValueError as exc:
            parsed.bad.append(str(exc))
            continue
        base, suffix = tables.milabench_base(name)
        stated = precision or suffix or DEFAULT_PRECISION.get(name)
        for batch, values in sorted(by_batch.items()):
            if not any(values):
                parsed.missing += 1
                continue
            parsed.references.append(ref.make(
                source=SOURCE, system=stem, gpu=model,
                gpu_count=None if name.endswith("-gpus") else 1, source_workload=name,
                workload=tables.workload(SOURCE, name), precision=tables.precision(stated) or stated,
                batch_size=batch, unit=tables.unit(SOURCE, name), **ref.spread([v for v in values if v])))
    return parsed
