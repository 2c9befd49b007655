"""Report formats, one module each: a format is a name and a renderer of a View (the report's
rows and what goes around them). Adding one is a module that defines FORMAT and its line in
FORMATS below; `report --format` takes its choices from there."""
from __future__ import annotations

from .base import Format, View
from . import csv_format, html, json_format, markdown, openmetrics_format, terminal
from dnnbench.registry import Registry

FORMATS: Registry[Format] = Registry("report format", (terminal.FORMAT, csv_format.FORMAT, markdown.FORMAT,
                                                      json_format.FORMAT, html.FORMAT, openmetrics_format.FORMAT))



def format_of(name: str) -> Format:
    """The format called `name`, or the one-line error that lists the choices."""
    from dnnbench.errors import DnnbenchError
    if name not in FORMATS:
        raise DnnbenchError(f"unknown format {name!r}: choose {', '.join(FORMATS)}")
    return FORMATS[name]


__all__ = ["FORMATS", "Format", "View", "format_of"]
