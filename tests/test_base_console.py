"""dnnbench.console's table fitter: a table declares its answer (the `headline` figure and the
`decides` verdict) and the fitter keeps it at any width, after the row's name. Checked two
ways: a property over generated tables, and every table-producing screen of the product at 80
columns, found in the source (each module that calls print_table), so a new table is checked
the day it is written."""
from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import ROOT, cli_inprocess

FIXTURE = ROOT / "tests" / "fixtures" / "results" / "cpu-suite"
WIDTH = 80


# --- the rule, on generated tables --------------------------------------------------------------

words = st.text(alphabet="abcdefghijklmnop-", min_size=1, max_size=14)


@st.composite
def tables(draw):
    n = draw(st.integers(2, 12))
    flags = draw(st.lists(st.sampled_from(["key", "headline", "decides", "plain"]), min_size=n, max_size=n))
    flags[0] = "key"                                 # a row is named
    if "headline" not in flags:
        flags[draw(st.integers(1, n - 1))] = "headline"
    headers = [f"c{i}-{draw(words)}" for i in range(n)]
    rows = draw(st.lists(st.lists(words, min_size=n, max_size=n), min_size=1, max_size=5))
    return flags, headers, rows


@settings(max_examples=150, deadline=None)
@given(tables(), st.integers(40, 120))
def test_the_figure_and_the_verdict_are_never_hidden(table, width):
    from rich.console import Console

    from dnnbench.console import Column, fit_table
    flags, headers, rows = table
    columns = [Column(h, key=f == "key", headline=f == "headline", decides=f == "decides",
                      rank=i % 7) for i, (h, f) in enumerate(zip(headers, flags))]
    table, hidden = fit_table("t", columns, rows, console=Console(width=width, file=sys.stdout))
    kept = [c.header for c in columns if c.key or c.answer]
    assert not set(hidden) & set(kept), (hidden, kept)
    # a column with one value in every row may be said once in the title instead: shown, not ranked
    in_table = {c.header for c in table.columns}
    said = [c.header for c in columns if c.header not in in_table and c.header not in hidden]
    assert all(f"{h}: " in str(table.title) for h in said), (said, table.title)
    plain = [c for c in columns if not c.key and not c.answer and c.header in hidden]
    shown = [c for c in columns if not c.key and not c.answer and c.header in in_table]
    # what went, went by rank: a hidden column outranks a shown one only where it would not fit
    # even in the room of every lower-ranked one shown (a narrower one came back after it went).
    # A column's room: its longest word (a key: its longest cell), then pad, rule, pad.
    room = {c.header: 3 + max(len(x) if c.key else max(len(w) for w in x.split())
                              for x in [c.header] + [r[i] for r in rows]) for i, c in enumerate(columns)}
    used = sum(room[h] for h in in_table) - 3
    for h in plain:
        lower = [c for c in shown if c.rank < h.rank]
        assert not lower or used - sum(room[c.header] for c in lower) + room[h.header] > width, \
            (h.header, [c.header for c in lower])


# --- every table of the product at 80 columns ---------------------------------------------------

# lists whose rows are the answer (no figure, no verdict to keep): named by their title
LISTS = ("dnnbench bases", "workloads")
# a table no cheap screen here reaches, and where its 80-column screen is checked instead
ELSEWHERE = {"dnnbench.results.mlperf": "needs a training run's MLPerf log: tests/test_results_mlperf.py"}


def table_modules() -> set[str]:
    """Every module of the product that prints a table (calls print_table)."""
    found = set()
    for path in (ROOT / "toolkit").rglob("*.py"):
        if path.name != "console.py" and re.search(r"\bprint_table\(", path.read_text(encoding="utf-8")):
            rel = path.relative_to(ROOT / "toolkit").with_suffix("")
            found.add(".".join(("dnnbench", *rel.parts)))
    return found


def _history(tmp: Path) -> str:
    from tests.history_results import write
    db = str(tmp / "h.db")
    for i in range(6):
        write(tmp / "res", i, 100.0 + i, image=f"registry.example.org/team/dnnbench:ngc-24.{i + 1:02d}-long-tag")
    assert cli_inprocess("history", "import", tmp / "res", "--db", db)[0] == 0
    return db


def _images_report(tmp: Path) -> Path:
    """A report whose jobs ran on images with long names (the image column shows): where the
    80-column report used to keep system, n and failed and hide throughput."""
    from tests.history_results import write
    for i in range(4):
        write(tmp / "two", i, 50.0 * (i + 1), job="resnet50-bs64",
              image=f"nvcr.io/nvidia/pytorch:24.{i + 1:02d}-py3-with-a-long-suffix")
    return tmp / "two"


def _run_summary(tmp: Path):
    from dnnbench.results.record import show_outcome
    p = FIXTURE / "resnet18-bs4" / "r1"
    show_outcome(p, json.loads((p / "result.json").read_text()))


def _watch_list(tmp: Path):
    from dnnbench.campaigns import suite_watch
    entry = type("E", (), {"name": "nightly-resnet50-on-every-ngc-release", "releases": [("a", None)] * 12})()
    suite_watch.show([suite_watch.Outcome(entry, "slower", "nvcr.io/nvidia/pytorch:25.01-py3 (after "
                                                            "nvcr.io/nvidia/pytorch:24.12-py3): -12.0 % (-15 to -9 %)")])


def _compare_images(tmp: Path, monkeypatch):
    from dnnbench.results import numbers
    from dnnbench.campaigns import bisect
    from dnnbench.runs.options import RunOptions

    def measure(step, base, template, dataset=None):    # no engine: a figure per image, as a run gives
        rate = 2.0 if step.image.endswith("b") else 1.0
        windows = [{"items": 8 * rate, "seconds": 1 + 0.01 * k, "data_wait": 0.0} for k in range(5)]
        step.result = {"status": "ok", "windows": windows, "world_size": 1, "ranks": [], "system": {},
                       "unit": "images/s"}
        step.headline = numbers.run_headline(step.result)
        return step
    monkeypatch.setattr(bisect, "measure", measure)
    monkeypatch.setattr(bisect, "check_first", lambda *a: True)
    bisect.compare_images_command(RunOptions(workload="resnet18", runtime="docker", results=tmp, run_id="c"),
                                  ["registry.example.org/pytorch:release-candidate-a",
                                   "registry.example.org/pytorch:release-candidate-b"], None, 0.1, rounds=2)


def _refs_list(tmp: Path):
    refs = ROOT / "tests" / "fixtures" / "refs" / "lambda"
    db = str(tmp / "refs.db")
    assert cli_inprocess("refs", "import", *sorted(refs.glob("*.csv")), "--db", db)[0] == 0
    return cli_inprocess("refs", "list", "--workload", "resnet50", "--db", db, env={"COLUMNS": str(WIDTH)})


SCREENS = {
    "bases": lambda tmp, mp: cli_inprocess("bases", env={"COLUMNS": str(WIDTH)}),
    "images": lambda tmp, mp: cli_inprocess("images", env={"COLUMNS": str(WIDTH)}),
    "doctor": lambda tmp, mp: cli_inprocess("doctor", env={"COLUMNS": str(WIDTH)}),
    "workloads": lambda tmp, mp: cli_inprocess("workloads", env={"COLUMNS": str(WIDTH)}),
    "report": lambda tmp, mp: cli_inprocess("report", FIXTURE, env={"COLUMNS": str(WIDTH)}),
    "report of images": lambda tmp, mp: cli_inprocess("report", _images_report(tmp), env={"COLUMNS": str(WIDTH)}),
    "compare": lambda tmp, mp: cli_inprocess("compare", FIXTURE, FIXTURE, env={"COLUMNS": str(WIDTH)}),
    "history": lambda tmp, mp: cli_inprocess("history", "--db", _history(tmp), env={"COLUMNS": str(WIDTH)}),
    "history series": lambda tmp, mp: cli_inprocess("history", "series", "resnet50-bs64", "--db", _history(tmp),
                                                    env={"COLUMNS": str(WIDTH)}),
    "run summary": lambda tmp, mp: _run_summary(tmp),
    "watch list": lambda tmp, mp: _watch_list(tmp),
    "compare-images": lambda tmp, mp: _compare_images(tmp, mp),
    "refs list": lambda tmp, mp: _refs_list(tmp),
    "mlperf plan": lambda tmp, mp: cli_inprocess("mlperf", "plan", "resnet", "--ruleset", "4.0.0", "--throughput",
                                                 "1632=2600+-40,3264=4900", env={"COLUMNS": str(WIDTH)}),
}


@pytest.fixture
def fitted(monkeypatch):
    """Every table fitted while a screen is made: (the module that printed it, its title, its
    columns, the headers it hid); the consoles 80 columns wide."""
    from dnnbench import console
    made = []
    real = console.fit_table
    monkeypatch.setattr(console.out, "_width", WIDTH)

    def recording(title, columns, rows, **kwargs):
        table, hidden = real(title, columns, rows, **kwargs)
        frame = next(f for f in inspect.stack()[1:] if f.frame.f_globals.get("__name__") != "dnnbench.console")
        made.append((frame.frame.f_globals.get("__name__"), title, columns, hidden))
        return table, hidden
    monkeypatch.setattr(console, "fit_table", recording)
    return made


@pytest.mark.parametrize("name", SCREENS)
def test_every_screen_keeps_its_figure_and_its_verdict_at_80_columns(name, fitted, tmp_path, monkeypatch, capsys):
    got = SCREENS[name](tmp_path, monkeypatch)
    text = got[1] if isinstance(got, tuple) else capsys.readouterr().out
    assert fitted, f"{name}: no table"
    lines = text.splitlines()
    assert all(len(line) <= WIDTH for line in lines), "\n".join(lines)
    flat = " ".join(text.split())
    for module, title, columns, hidden in fitted:
        answer = [c.header for c in columns if c.answer]
        if not any(title.startswith(t) for t in LISTS):
            assert answer, f"{module}: the table {title!r} declares no headline or deciding column"
        assert not set(hidden) & set(answer), (name, hidden)
        for header in answer:       # on the screen, in the table's header line
            assert all(word in flat for word in header.split()), (name, header, text)


def test_every_table_of_the_product_is_among_the_screens(fitted, tmp_path, monkeypatch, capsys):
    """The screens above reach every module that prints a table (or it is named in ELSEWHERE)."""
    reached = set()
    for name, make in SCREENS.items():
        fitted.clear()
        make(tmp_path / name.replace(" ", "-"), monkeypatch)
        capsys.readouterr()
        reached |= {module for module, *_ in fitted}
    missing = table_modules() - reached - set(ELSEWHERE)
    assert not missing, f"tables no screen of this test shows at 80 columns: {sorted(missing)}"


def test_report_at_80_columns_keeps_throughput_and_the_verdict(fitted, tmp_path):
    code, text, _ = cli_inprocess("report", _images_report(tmp_path), env={"COLUMNS": str(WIDTH)})
    assert code == 0
    assert any(line.split()[-2:] == ["throughput", "verdict"] for line in text.splitlines() if line.strip()), text
    assert "149.7" in text

