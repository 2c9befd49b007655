"""What a report format is: a name and a renderer of a View (the report's rows and what goes
around them)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass
class View:
    table: list[dict]                    # report.rows(): one dict per job
    total_score: float | None = None     # with a baseline: the weighted score
    with_baseline: bool = False
    wide: bool = False                   # terminal: every column, however narrow the screen
    pngs: list = field(default_factory=list)   # (name, PNG bytes): formats that embed plots
    sections: list = field(default_factory=list)   # tables under the jobs' (mlperf.score_tables): pages show them


@dataclass(frozen=True)
class Format:
    name: str
    render: Callable[[View], "str | None"]   # the text to write, or None (printed to the screen)
    embeds_plots: bool = False               # report makes the plots in memory for it
