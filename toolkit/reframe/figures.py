"""What dnnbench's ReFrame checks read from a run: its result.json (dnnbench's own reader and
validation), the figures ReFrame's performance functions report, and a reference taken from the
history store. No ReFrame here: a problem is a `ResultProblem` whose text is the sanity message
ReFrame prints, so the reading is the same whichever scheduler ran the job."""
from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any

from dnnbench.results import numbers
from dnnbench.results.naming import gpu_model, job_name
from dnnbench.workloads import WORKLOADS, fileio, schema


class ResultProblem(ValueError):
    """Why a run's result does not pass: one line."""


def unit(workload: str) -> str:
    """The unit of a workload's throughput ("images/s"), as its result and report say it."""
    spec = WORKLOADS.get(workload)
    if spec is None:
        raise ResultProblem(f"unknown workload {workload!r}; `dnnbench workloads` lists them")
    return f"{spec.unit}/s"


LOG_MAX = 2**20     # a refusal's standard error is a few lines; a long run's is not read for one


def job_log(path: Path) -> str:
    """A job's standard error, through the file layer; "" when it is missing or long."""
    try:
        return fileio.read_text(str(path), LOG_MAX, errors="replace")
    except (OSError, ValueError):
        return ""


def said(log: str) -> str | None:
    """dnnbench's last `error:` line in a job's standard error (a refusal before any result)."""
    lines = [line.strip() for line in log.splitlines() if line.startswith("error:")]
    return lines[-1] if lines else None


def read(run_dir: Path, log: str = "") -> dict:
    """The run's result, read and validated as every dnnbench command reads one; when there is
    none, what dnnbench said instead (from `log`, the job's standard error)."""
    path = run_dir / schema.RESULT_FILE
    if not os.path.lexists(path):
        line = said(log)
        raise ResultProblem(f"no {schema.RESULT_FILE} in {run_dir}" + (f": dnnbench said: {line}" if line else
                                                                         ": see the job's output"))
    try:
        return schema.read(str(path))
    except ValueError as exc:
        raise ResultProblem(str(exc)) from None
    except OSError as exc:
        raise ResultProblem(f"cannot read {path}: {exc.strerror or exc}") from None


def check_ok(data: dict, path: Path | str = schema.RESULT_FILE) -> None:
    """A run passes when its status is ok and it measured a throughput."""
    status = data.get("status")
    if status != "ok":
        why = data.get("message")
        raise ResultProblem(f"{job_name(data)} ended with status {status}" + (f": {why}" if why else ""))
    if throughput(data)["value"] is None:
        raise ResultProblem(f"{job_name(data)}: status ok but no throughput: {path} has no timed window")


def check_trained(data: dict, path: Path | str = schema.RESULT_FILE) -> None:
    """A training run passes when it is ok and reached its target."""
    check_ok(data, path)
    training = data.get("training")
    if not isinstance(training, dict):
        raise ResultProblem(f"{job_name(data)}: the result has no training (not a `dnnbench train` run)")
    if not training.get("reached"):
        metric = schema.metric_name(training.get("metric"))
        best = training.get("best")
        raise ResultProblem(f"{job_name(data)}: the target {metric} {training.get('target')} % was not reached"
                            + (f" (best {best:.4g} %)" if schema.finite(best) else ""))


def throughput(data: dict) -> dict:
    """The run's headline from its raw windows (numbers.run_headline): value, ci95_low,
    ci95_high, as `dnnbench report` computes it."""
    return numbers.run_headline(data)


def _training(data: dict, key: str, what: str) -> float:
    value: Any = (data.get("training") or {}).get(key)
    if not schema.finite(value):
        raise ResultProblem(f"{job_name(data)}: no {what} in the result")
    return float(value)


def time_to_target(data: dict) -> float:
    return _training(data, "time_to_target_s", "time to target")


def best(data: dict) -> float:
    return _training(data, "best", "evaluation")


def history_reference(data: dict, job: str, *, last: int, db: str | None = None) -> tuple[float, int]:
    """(median throughput, results counted) of the newest `last` ok results of `job` in the
    history store on the run's own GPU model (like with like), this run itself left out."""
    from dnnbench.errors import DnnbenchError
    from dnnbench.history.store import Store
    gpu = gpu_model(data)
    try:
        store = Store(db, create=False)
        try:
            rows = store.select(job=job, gpu=gpu, status="ok", limit=last + 1, newest=True,
                                columns=("run_id", "throughput"))
        finally:
            store.close()
    except DnnbenchError as exc:
        raise ResultProblem(f"reference_job {job!r}: {exc}") from None
    values = [r["throughput"] for r in rows if r["run_id"] != data.get("run_id") and schema.finite(r["throughput"])]
    values = values[-last:]
    if not values:
        raise ResultProblem(f"reference_job {job!r}: no ok result of it on {gpu} in the history store")
    return statistics.median(values), len(values)
