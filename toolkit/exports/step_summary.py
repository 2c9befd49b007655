"""GitHub Actions' job summary: where `GITHUB_STEP_SUMMARY` names a file, a command appends its
markdown table there (GitHub renders it on the run's page). A summary that cannot be written is
one warning; the command's own work and exit code stand."""
from __future__ import annotations

import os

VARIABLE = "GITHUB_STEP_SUMMARY"


def cell(value) -> str:
    """A table cell: `|`, backslashes and line breaks cannot split or end the row; `<` and `&`
    cannot open HTML (GitHub renders the summary's HTML)."""
    from dnnbench.results.formats.cells import md_cell
    return md_cell("-" if value is None else value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]) + "\n"


def append(title: str, markdown: str) -> bool:
    """Append `### title` and the markdown when the variable names a file; False when it is not
    set or the file cannot be written (said once)."""
    path = os.environ.get(VARIABLE)
    if not path:
        return False
    from dnnbench.console import warn
    from dnnbench.workloads import fileio
    try:
        with fileio.open_append(path) as f:
            f.write(f"### {cell(title)}\n\n{markdown}\n")
    except OSError as exc:
        warn(f"the step summary {path} ({VARIABLE}) was not written: {exc.strerror or exc}")
        return False
    return True


def report_rows(table_rows: list[dict]) -> str:
    """A report's rows (results/report.rows) as the summary's table: each job, its throughput,
    95% CI, runs, and the verdict against the baseline where there is one."""
    from dnnbench.results import numbers
    with_baseline = any("target_verdict" in r for r in table_rows)
    headers = ["system", "job", "throughput", "+-95% CI %", "n", "failed", "unit"] + \
        (["target", "diff %", "vs target"] if with_baseline else [])
    rows = []
    for r in table_rows:
        row = [r.get("system"), r.get("job"), numbers.fmt(r.get("throughput")),
               "-" if r.get("ci95_pct") is None else f"{r['ci95_pct']:.1f}", r.get("n"), r.get("failed"),
               r.get("unit")]
        if with_baseline:
            row += [numbers.fmt(r.get("target")), "-" if r.get("diff_pct") is None else f"{r['diff_pct']:+.1f}",
                    r.get("target_verdict")]
        rows.append(row)
    return table(headers, rows)
