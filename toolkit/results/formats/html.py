"""`--format html`: one self-contained page (plots inlined), from templates/report.html.j2: the
jobs' table and the MLPerf tables each in a box of its own that scrolls sideways when it is
wider than the window (the page itself never does), names kept on one line (cut with an
ellipsis, whole in the tooltip), the lines the screen prints under its table, and each plot
with what its axes are (read from the PNG, as plots.py labelled them)."""
from .base import Format, View
from .cells import KEYS, STATISTIC, cell, columns, notes


def render(view: View) -> str:
    import base64
    from importlib import resources

    import jinja2
    from markupsafe import Markup

    from dnnbench.console import visible
    from dnnbench.results.mlperf import SCORE_HEADERS
    from dnnbench.results.plots import axes_of
    # every value through the one escape before HTML's: a bidi override in a job name would
    # reorder the page's text as it does a terminal's
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources.files("dnnbench.templates"))),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             finalize=lambda v: visible(v) if isinstance(v, str) and not isinstance(v, Markup) else v)
    cols = columns(view.table, view.with_baseline)
    return env.get_template("report.html.j2").render(
        statistic=STATISTIC, headings=[h for _, h in cols], names=[k in KEYS or k == "system" for k, _ in cols],
        rows=[[cell(r, k) for k, _ in cols] for r in view.table], score=view.total_score,
        notes=notes(view.table, None), sections=view.sections, section_headings=SCORE_HEADERS,
        plots=[{"name": name, "data": base64.b64encode(data).decode(), "axes": axes_of(data) or ""}
               for name, data in view.pngs])


FORMAT = Format("html", render, embeds_plots=True)
