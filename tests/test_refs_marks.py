"""References on the html pages: `report --format html` and `history --format html` draw each
matched reference as its own mark labelled with its source, never as a point of the series."""
from __future__ import annotations

import re

import pytest

from tests import refs_results
from tests.helpers import ROOT, cli_inprocess

V1 = ROOT / "tests" / "fixtures" / "refs" / "lambda" / "pytorch-train-throughput-fp16.csv"


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "store" / "history.db"
    monkeypatch.setenv("DNNBENCH_DB", str(path))
    return path


def test_history_html_marks_the_matching_references_apart_from_the_series(db, tmp_path):
    results = [refs_results.write(tmp_path, 2600.0 + 50 * k, name=f"r{k}") for k in range(3)]
    assert cli_inprocess("history", "import", *results)[0] == 0
    page = tmp_path / "page.html"
    assert cli_inprocess("history", "--format", "html", "-o", page)[0] == 0
    assert 'class="reference"' not in page.read_text()           # nothing imported: no marks
    assert cli_inprocess("refs", "import", V1)[0] == 0
    assert cli_inprocess("history", "--format", "html", "-o", page)[0] == 0
    text = page.read_text()
    labels = re.findall(r'<text class="reference"[^>]*>([^<]*)</text>', text)
    assert sorted(labels) == ["lambda: Dell H100 80GB SXM5 2776", "lambda: H100 80GB SXM5 2616"]
    assert text.count('class="point"') == 3                     # the series' own points, no more


def test_report_html_has_a_references_section_with_each_mark(db, tmp_path):
    result = refs_results.write(tmp_path, 2700.0)
    page = tmp_path / "report.html"
    assert cli_inprocess("refs", "import", V1)[0] == 0
    assert cli_inprocess("report", result, "-f", "html", "-o", page)[0] == 0
    text = page.read_text()
    section = text[text.index('id="references"'):]
    assert "<td>lambda</td><td>H100 80GB SXM5</td>" in section and "<td>+3.2 %</td>" in section
    assert len(re.findall(r'<line class="reference"', section)) == 2
    assert "A100" not in section and "8x H100" not in section   # other GPU models and counts: not drawn


def test_a_store_that_cannot_be_used_costs_the_report_its_references_only(tmp_path, monkeypatch):
    broken = tmp_path / "history.db"
    broken.write_text("not a database, and not ours")
    monkeypatch.setenv("DNNBENCH_DB", str(broken))
    page = tmp_path / "report.html"
    code, _, err = cli_inprocess("report", refs_results.write(tmp_path, 2700.0), "-f", "html", "-o", page)
    assert code == 0 and "warning: published references not shown: history store" in err
    assert "<table" in page.read_text() and 'id="references"' not in page.read_text()
