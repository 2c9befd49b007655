"""`--format json`: every row whole; strict JSON (a NaN or infinity becomes null, never the
invalid `Infinity`)."""
import json

from dnnbench.results import numbers
from dnnbench.workloads import fileio

from .base import Format, View
from .cells import STATISTIC


def render(view: View) -> str:
    return json.dumps(fileio.clean_json({"statistic": numbers.STATISTIC, "description": STATISTIC,
                                         "jobs": view.table, "score": view.total_score}),
                      indent=1, allow_nan=False) + "\n"


FORMAT = Format("json", render)
