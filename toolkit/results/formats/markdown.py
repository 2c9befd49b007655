"""`--format md`: a markdown table (names escaped so they cannot split a row) and its notes."""
from .base import Format, View
from .cells import cell, columns, md_cell, notes


def render(view: View) -> str:
    cols = columns(view.table, view.with_baseline)
    lines = ["| " + " | ".join(h for _, h in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(md_cell(cell(r, k)) for k, _ in cols) + " |" for r in view.table]
    lines += [f"\n{md_cell(line)}" for line in notes(view.table, view.total_score)]
    return "\n".join(lines) + "\n"


FORMAT = Format("md", render)
