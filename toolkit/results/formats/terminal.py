"""`--format table`: the screen's table, 80 columns first (console.print_table)."""
from dnnbench.console import visible
from dnnbench.results import numbers

from .base import Format, View
from .cells import DECIDES, HEADLINE, KEYS, RANK, cell, columns, notes


def render(view: View) -> None:
    from dnnbench.console import Column, escape, out, print_table
    cols = columns(view.table, view.with_baseline)
    table_cols = [Column(h, key=k in KEYS, decides=k in DECIDES, headline=k in HEADLINE,
                         right=k not in ("system", "job", "image", "unit", "verdict", "target_verdict"),
                         rank=RANK.get(k, 1)) for k, h in cols]
    print_table(f"dnnbench report (throughput = {numbers.STATISTIC} over every timed window)", table_cols,
                [[escape(visible(cell(r, k), one_line=True)) for k, _ in cols] for r in view.table], wide=view.wide)
    for line in notes(view.table, view.total_score):
        out.print(escape(visible(line, one_line=True)), soft_wrap=False)
    return None


FORMAT = Format("table", render)
