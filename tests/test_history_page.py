"""`dnnbench history --format html` is a page people open: load it in headless Chromium (as
tests/test_report_page.py does for the report) and check that every series is drawn."""
from __future__ import annotations

import pytest

from tests.browser import probe, screenshot
from tests.helpers import dnnbench
from tests.history_results import write

PROBE = """<script>
window.addEventListener("load", () => {
  const plots = document.querySelectorAll("svg").length;
  const points = document.querySelectorAll("svg circle.point").length;
  const drawn = Array.from(document.querySelectorAll("svg circle.point")).filter(
    c => c.getBoundingClientRect().width > 0).length;
  const rows = document.querySelectorAll("#rows tr").length;
  document.title = `probe plots=${plots} points=${points} drawn=${drawn} rows=${rows}`;
});
</script>"""


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("DNNBENCH_DB", str(tmp_path / "history.db"))
    for i in range(8):
        write(tmp_path / "r", i, 1000 - 10 * i, image=f"local:rel-3.{i}")
    for i in range(8, 12):   # a second job whose name is hostile to a page
        write(tmp_path / "r", i, 50, job="<script>alert(1)</script>-bs1")
    dnnbench("history", "import", tmp_path / "r", check=0)
    out = tmp_path / "history.html"
    dnnbench("history", "list", "--format", "html", "--output", out, check=0)
    return out


def test_the_history_page_plots_each_series_and_lists_each_result(page, tmp_path):
    text = page.read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;-bs1" in text
    counts = probe(text, PROBE, tmp_path)
    assert counts == {"plots": "2", "points": "12", "drawn": "12", "rows": "13"}, counts


def test_the_history_page_renders_without_console_errors(page, tmp_path):
    screenshot(page, 1000, 1200, tmp_path)
