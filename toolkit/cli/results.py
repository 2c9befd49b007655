"""Commands of the results stage: report, compare, profile show."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer


def report(
    results: List[Path] = typer.Argument(..., help="Result files or folders (searched for result.json)."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, csv, md, json or html."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="Targets: YAML/JSON {job: throughput}, or a results folder."),
    weight: List[str] = typer.Option([], "--weight", help="JOB=W (or WORKLOAD=W) weight in the score (repeatable)."),
    tolerance: float = typer.Option(0.05, "--tolerance", help="A job passes at mean >= target x (1 - tolerance)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
    plots: Optional[Path] = typer.Option(None, "--plots", help="Write PNG plots into this folder."),
    wide_csv: Optional[Path] = typer.Option(None, "--wide-csv", help="Also write a Lambda-style CSV (system x job)."),
    strict: bool = typer.Option(False, "--strict", help="Fail (exit 2) when any result file is skipped as "
                                                         "unreadable; without it each is named on stderr."),
):
    """Mean, sd, sd% and n per job from raw result files; against a baseline: diff %, pass/fail,
    and a score (weighted geometric mean of ratios). Exit 1 when a job fails its target."""
    from dnnbench.results.report import report_command
    raise typer.Exit(report_command(results, fmt, baseline, weight, tolerance, output, plots, wide_csv, strict))


def compare(a: Path = typer.Argument(..., help="Results of machine/image A."),
            b: Path = typer.Argument(..., help="Results of machine/image B."),
            strict: bool = typer.Option(False, "--strict", help="Fail (exit 2) when any result file is skipped.")):
    """Two result sets side by side, job by job, with the ratio B/A."""
    from dnnbench.results.report import compare_command
    compare_command(a, b, strict)


profile_app = typer.Typer(help="Profiles: what --profile left in a run, as tables.", no_args_is_help=True)


@profile_app.command("show")
def profile_show(result: Path = typer.Argument(..., help="A run folder or its result.json."),
                 top: int = typer.Option(10, "--top", help="Kernels/ops listed per profile."),
                 as_json: bool = typer.Option(False, "--json", help="The summaries as JSON on stdout (for scripts).")):
    """Pipe utilization (ncu), top kernels and GPU-busy share (nsys, nvprof, rocprof), top ops
    (torch.profiler), and the GPU telemetry medians, of one run. Exit 1 when no profile could be read."""
    from dnnbench.results.profile_tables import show_command
    show_command(result, top, as_json)


def register(app: typer.Typer) -> None:
    app.command()(report)
    app.command()(compare)
    app.add_typer(profile_app, name="profile")
