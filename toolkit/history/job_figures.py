"""A job's measured throughput per global batch size, from the store: what `mlperf plan --job`
sets beside the RCPs (dnnbench.results.rcp)."""
from __future__ import annotations

import re

from dnnbench.errors import DnnbenchError
from dnnbench.results.rcp import positive_int


def job_throughput(jobs: list[str], db: str | None) -> dict[int, dict]:
    """--job J (or BS=J): a job's measured throughput from the history store (its newest series
    point: the mean of its ok results and the 95 % CI of the mean), at the job's global batch
    size (options.batch_size x world_size of its newest result, or the BS given)."""
    from dnnbench.history.store import Store
    out: dict[int, dict] = {}
    store = Store(db, create=False)
    try:
        for given in jobs:
            bs_text, _, job = given.partition("=") if re.match(r"\s*\d+\s*=", given) else ("", "", given)
            points = store.series(job)
            if not points:
                raise DnnbenchError(f"--job: no ok result of job {job!r} in the history {store.name}")
            last = points[-1]
            bs = positive_int(bs_text, "--job's batch size") if bs_text else _global_batch(store, job)
            if bs in out:
                raise DnnbenchError(f"--job: batch size {bs} is given twice")
            low, high = last.get("ci_low"), last.get("ci_high")
            value = float(last["throughput"])
            newest = store.select(job=job, status="ok", columns=("workload",), limit=1, newest=True)
            out[bs] = {"value": value, "low": float(low) if low else value, "high": float(high) if high else value,
                       "source": f"job {job}", "n": last["n"], "unit": last.get("unit"),
                       "workload": newest[0]["workload"] if newest else None}
    finally:
        store.close()
    return out


def _global_batch(store, job: str) -> int:
    from dnnbench.workloads import schema
    rows = store.select(job=job, status="ok", columns=("path",), limit=1, newest=True)
    try:
        data = schema.read(str(rows[0]["path"]))
        size = int((data.get("options") or {})["batch_size"]) * int(data.get("world_size") or 1)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        raise DnnbenchError(f"--job: cannot tell job {job!r}'s global batch size from its result "
                            f"(give it as BS={job})") from None
    if size <= 0:
        raise DnnbenchError(f"--job: job {job!r} has no positive batch size (give it as BS={job})")
    return size
