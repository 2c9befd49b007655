"""`dnnbench mlperf`: MLPerf Training's compliance checker on runs that trained."""
from __future__ import annotations

from pathlib import Path
from typing import List

import typer

mlperf_app = typer.Typer(help="MLPerf Training: the official checker on a run's mlperf_log.txt.",
                         no_args_is_help=True)


@mlperf_app.command("check")
def check(runs: List[Path] = typer.Argument(..., help="Run folders of `dnnbench train` (or their result.json).")):
    """Run mlperf-logging's compliance checker (training, ruleset 4.0.0) on each run's
    mlperf_log.txt, record its verdict and messages in result.json (`mlperf`) and print them.
    A resumed run's log has one segment per start and fails the checker, which accepts one
    uninterrupted run. Exit 1 when a log fails."""
    from dnnbench.results.mlperf import check_command
    raise typer.Exit(check_command(runs))


def register(app: typer.Typer) -> None:
    app.add_typer(mlperf_app, name="mlperf")
