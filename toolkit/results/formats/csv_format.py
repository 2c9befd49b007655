"""`--format csv`: one row per job, the raw numbers (not rounded)."""
import csv
import io

from dnnbench.console import visible

from .base import Format, View
from .cells import columns


def render(view: View) -> str:
    cols = columns(view.table, view.with_baseline)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow([h for _, h in cols])
    for r in view.table:
        w.writerow(["" if r.get(k) is None else visible(r.get(k), one_line=True) if isinstance(r.get(k), str)
                    else r.get(k) for k, _ in cols])
    return buf.getvalue()


FORMAT = Format("csv", render)
