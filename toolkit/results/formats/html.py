"""`--format html`: one self-contained page (plots inlined), from templates/report.html.j2."""
from .base import Format, View
from .cells import STATISTIC, cell, columns


def render(view: View) -> str:
    import base64
    from importlib import resources

    import jinja2
    from markupsafe import Markup

    from dnnbench.console import visible
    # every value through the one escape before HTML's: a bidi override in a job name would
    # reorder the page's text as it does a terminal's
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources.files("dnnbench.templates"))),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             finalize=lambda v: visible(v) if isinstance(v, str) and not isinstance(v, Markup) else v)
    cols = columns(view.table, view.with_baseline)
    return env.get_template("report.html.j2").render(
        statistic=STATISTIC, headings=[h for _, h in cols],
        rows=[[cell(r, k) for k, _ in cols] for r in view.table], score=view.total_score,
        plots=[{"name": name, "data": base64.b64encode(data).decode()} for name, data in view.pngs])


FORMAT = Format("html", render, embeds_plots=True)
