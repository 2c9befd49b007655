"""`--format openmetrics`: the report's figures as OpenMetrics text (dnnbench.exports), one
gauge family per figure, for a Prometheus textfile collector or a scrape."""
from dnnbench.exports import openmetrics

from .base import Format, View


def render(view: View) -> str:
    return openmetrics.text(openmetrics.report_families(view.table))


FORMAT = Format("openmetrics", render)
