"""`dnnbench mlperf`: MLPerf Training's compliance checker on runs that trained."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

mlperf_app = typer.Typer(help="MLPerf Training: the official checker on a run's mlperf_log.txt, and the "
                              "reference convergence points (RCPs) a run is judged by.",
                         no_args_is_help=True)


@mlperf_app.command("check")
def check(runs: List[Path] = typer.Argument(..., help="Run folders of `dnnbench train` (or their result.json).")):
    """Run mlperf-logging's compliance checker (training, ruleset 4.0.0) on each run's
    mlperf_log.txt, record its verdict and messages in result.json (`mlperf`) and print them.
    A resumed run's log has one segment per start and fails the checker, which accepts one
    uninterrupted run. Also says where the run's epochs to converge stand against the RCP at its
    global batch size (too fast, within, slower; docs/mlperf.md). Exit 1 when a log fails; 2 when a
    folder holds no training run (one line; none of the runs checked)."""
    from dnnbench.results.mlperf import check_command
    raise typer.Exit(check_command(runs))


@mlperf_app.command("plan")
def plan(benchmark: str = typer.Argument(..., help="An MLPerf benchmark (resnet, bert, ssd, llama2_70b_lora, ...) "
                                                   "or a dnnbench workload that trains one (resnet50, ssd300)."),
         ruleset: Optional[str] = typer.Option(None, "--ruleset", help="The training ruleset (4.0.0, ...); default "
                                               "the newest with RCPs for the benchmark."),
         batch_sizes: Optional[str] = typer.Option(None, "--batch-sizes", help="Global batch sizes, comma "
                                                   "separated (1632,2048,...); default the RCPs' own."),
         throughput: Optional[str] = typer.Option(None, "--throughput", help="Measured items/s per batch size: "
                                                  "BS=ITEMS_PER_S[+-CI],... (1632=2600,2048=3100+-40)."),
         job: Optional[List[str]] = typer.Option(None, "--job", help="A job in the history store whose mean "
                                                 "throughput (and CI) to use; BS=JOB names its global batch "
                                                 "size. Repeatable."),
         samples_per_epoch: Optional[int] = typer.Option(None, "--samples-per-epoch", min=1, help="Training-set "
                                                         "size, for benchmarks counted in epochs without a "
                                                         "known one (resnet and ssd/retinanet are known)."),
         fmt: str = typer.Option("table", "--format", help="table or json."),
         db: Optional[str] = typer.Option(None, "--db", help="The history store for --job (default $DNNBENCH_DB, "
                                          "else ~/.local/share/dnnbench/history.db).")):
    """Plan a run against MLPerf's reference convergence points (RCPs), computed by
    mlperf-logging's own rcp_checker: for each global batch size the RCP's mean epochs (or
    samples), the fastest mean a compliant submission may converge at, and with a throughput
    the predicted minutes to train with a band; the shortest is marked. A batch size above
    every RCP is said ("no RCP covers batch N"). Exit 0; 2 on bad input (one line).
    See docs/mlperf.md."""
    from dnnbench.history.job_figures import job_throughput
    from dnnbench.results.mlperf_plan import plan_command
    raise typer.Exit(plan_command(benchmark, ruleset, batch_sizes, throughput, job or [], samples_per_epoch,
                                  fmt, db, measured_of=job_throughput))


def register(app: typer.Typer) -> None:
    app.add_typer(mlperf_app, name="mlperf")
