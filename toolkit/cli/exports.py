"""The options by which commands send their outcome out (dnnbench.exports): `--junit FILE` and
`--push URL`, one definition for report, suite run, watch and history changes."""
from __future__ import annotations

from typing import Optional

import typer

JUNIT_HELP = "Also write the jobs as JUnit XML here (a testcase per job; docs/ci-and-metrics.md)."
PUSH_HELP = ("Push the figures to this Prometheus Pushgateway (http://HOST:9091); a failed push is one "
             "warning and exit 3 where the command would exit 0.")


def check_push(value: Optional[str]) -> Optional[str]:
    from dnnbench.errors import DnnbenchError
    from dnnbench.exports.push import check_url
    try:
        return check_url(value)
    except DnnbenchError as exc:
        raise typer.BadParameter(str(exc).split(" ", 1)[1]) from None


def check_junit(value):
    """--junit FILE checked as it is parsed: before a report is written or a suite starts."""
    from dnnbench.errors import DnnbenchError
    from dnnbench.exports.junit import check_target
    if value is not None:
        try:
            check_target(value)
        except DnnbenchError as exc:
            raise typer.BadParameter(str(exc)) from None
    return value


JUNIT = typer.Option(None, "--junit", callback=check_junit, help=JUNIT_HELP)
PUSH = typer.Option(None, "--push", callback=check_push, help=PUSH_HELP)
