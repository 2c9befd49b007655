"""Commands of the results stage: report, compare, profile show."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from dnnbench.console import WIDE_HELP

from dnnbench.cli.harness_options import in_range
from dnnbench.cli.exports import JUNIT, PUSH_HELP, check_push
from dnnbench.results.formats import FORMATS
from dnnbench.workloads.options import BY_NAME


def report(
    results: List[Path] = typer.Argument(..., help="Result files or folders (searched for result.json)."),
    fmt: str = typer.Option("table", "--format", "-f", help=f"{', '.join(list(FORMATS)[:-1])} or {list(FORMATS)[-1]}."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="Targets: YAML/JSON {job: throughput}, or a results folder."),
    weight: List[str] = typer.Option([], "--weight", help="JOB=W (or WORKLOAD=W) weight in the score (repeatable)."),
    tolerance: float = typer.Option(BY_NAME["tolerance"].default, "--tolerance", callback=in_range(BY_NAME["tolerance"]), help="For plain targets: a job passes when the 99% interval over its runs lies above target x (1 - tolerance)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
    plots: Optional[Path] = typer.Option(None, "--plots", help="Write PNG plots into this folder."),
    wide_csv: Optional[Path] = typer.Option(None, "--wide-csv", help="Also write a Lambda-style CSV (system x job)."),
    wide: bool = typer.Option(False, "--wide", help=WIDE_HELP),
    strict: bool = typer.Option(False, "--strict", help="Fail (exit 2) when any result file is skipped as "
                                                         "unreadable; without it each is named on stderr."),
    junit: Optional[Path] = JUNIT,
    push: Optional[str] = typer.Option(None, "--push", callback=check_push, help=PUSH_HELP),
):
    """Throughput per job from raw result files: items over seconds summed over every timed window
    of its runs (statistic sum_items/sum_seconds, not a mean of rates), its 95% CI, the window
    median, sd% over runs, and with 5+ runs MLPerf-style trimmed figures. Against a baseline
    ({job: throughput}, or {job: {target: T, lower: -0.05, upper: null}} or {job: {floor: F}}):
    diff %, a verdict from the 99% interval over runs, never windows (pass, fail, or inconclusive
    when it straddles a bound, with one run, or against a baseline folder whose load differed 3x)
    and a score (weighted geometric mean of ratios). Exit 1 when a job fails its target; 3 when
    all else succeeded but --push did not (docs/ci-and-metrics.md)."""
    from dnnbench.refs.marks import with_references
    from dnnbench.results.report import report_command
    raise typer.Exit(report_command(results, fmt, baseline, weight, tolerance, output, plots, wide_csv, strict,
                                     wide=wide, junit=junit, push=push, html_extra=with_references))


def compare(a: Path = typer.Argument(..., help="Results of machine/image A."),
            b: Path = typer.Argument(..., help="Results of machine/image B."),
            tolerance: float = typer.Option(BY_NAME["tolerance"].default, "--tolerance", callback=in_range(BY_NAME["tolerance"]), help="Same when the 99% interval of B/A over runs is within 1 +- this."),
            strict: bool = typer.Option(False, "--strict", help="Fail (exit 2) when any result file is skipped."),
            wide: bool = typer.Option(False, "--wide", help=WIDE_HELP)):
    """Two result sets side by side, job by job: throughput (sum_items/sum_seconds) with its 95% CI,
    B/A with its 99% interval over runs (each run one observation: windows share the load of their
    moment), and a verdict: same, faster, slower or inconclusive (one run a side always is, and
    so is a load that differed 3x between the sides; a smaller difference widens the interval by
    its factor: runs measured apart are not alternated; compare-images alternates)."""
    from dnnbench.results.report import compare_command
    compare_command(a, b, tolerance, strict, wide)


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
