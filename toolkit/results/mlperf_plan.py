"""`dnnbench mlperf plan`: the options read (each mistake one line, before anything runs), the
plan made by rcp.plan and printed as a table or JSON."""
from __future__ import annotations

import json

from dnnbench.errors import DnnbenchError
from dnnbench.results import rcp

FORMATS = ("table", "json")


def _warn_unlike(benchmark: str, figures: dict) -> None:
    """A job whose workload does not train the benchmark (resnet18's speed for MLPerf's resnet,
    a ResNet-50) still plans, but its minutes are that workload's, and the line says so."""
    workload = figures.get("workload")
    if workload is None or benchmark in rcp.WORKLOAD_BENCHMARKS.get(workload, ()):
        return
    from dnnbench.console import warn
    trains = [w for w, names in rcp.WORKLOAD_BENCHMARKS.items() if benchmark in names]
    warn(f"--job: {figures['source']} ran {workload}, which does not train MLPerf's {benchmark}"
         + (f" ({' or '.join(trains)} does)" if trains else "") + f": its minutes are {workload}'s speed")


def plan_command(benchmark: str, ruleset: str | None, batch_sizes: str | None, throughput: str | None,
                 jobs: list[str], samples_per_epoch: int | None, fmt: str, db: str | None,
                 measured_of=None) -> int:
    """measured_of(jobs, db): the jobs' throughput per global batch size from the history store
    (the CLI passes dnnbench.history.job_figures.job_throughput, a floor above this one)."""
    if fmt not in FORMATS:
        raise DnnbenchError(f"unknown format {fmt!r}: choose {', '.join(FORMATS)}")
    sizes = rcp.batch_list(batch_sizes) if batch_sizes is not None else []
    rates = rcp.throughput_list(throughput) if throughput is not None else {}
    name, rules = rcp.resolve(benchmark.strip(), ruleset.strip() if ruleset is not None else None)
    if jobs and measured_of is not None:
        measured = measured_of(jobs, db)
        twice = sorted(set(measured) & set(rates))
        if twice:
            raise DnnbenchError(f"batch size {twice[0]} has a throughput from both --throughput and --job")
        for figures in measured.values():
            _warn_unlike(name, figures)
        rates.update(measured)
    result = rcp.plan(name, rules, sizes, rates, samples_per_epoch)
    if fmt == "json":
        from dnnbench.console import out
        out.print(json.dumps(result, indent=1), markup=False, soft_wrap=True, highlight=False)
    else:
        rcp.show(result)
    return 0
