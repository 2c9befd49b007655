"""`dnnbench history --format html` is a page people open: load it in headless Chromium (as
tests/test_results_report_page.py does for the report) and check that every series is drawn."""
from __future__ import annotations

import pytest

import re

from tests.browser import keep, probe, screenshot
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
    for i in range(8):   # one slow result among them: the series spans more than 10x
        write(tmp_path / "r", i, 1000 - 10 * i if i != 5 else 40,
              image=f"registry.example.org/a/team/with/a/long/path/pytorch:rel-3.{i}-cuda12.4-cudnn9-py3.11")
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


LAYOUT = """<script>
window.addEventListener("load", () => {
  const over = Math.max(0, document.documentElement.scrollWidth - window.innerWidth);
  const plots = document.querySelectorAll("svg").length;
  const ys = Array.from(document.querySelectorAll("svg text.axis.y")).filter(t => /\\(.+\\)/.test(t.textContent));
  const xs = document.querySelectorAll("svg text.axis.x").length;
  const logs = ys.filter(t => t.textContent.includes("log scale")).length;
  const line = parseFloat(getComputedStyle(document.body).lineHeight) || 20;
  const tall = Array.from(document.querySelectorAll("td")).filter(td => td.getBoundingClientRect().height > 2 * line).length;
  document.title = `probe over=${over} plots=${plots} units=${ys.length} xs=${xs} logs=${logs} tall=${tall}`;
});
</script>"""


def test_the_history_page_fits_a_laptop_screen(page, tmp_path, record_property):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"\d\d:\d\d:\d\d\.\d{6}", text)     # times to the minute, not the microsecond
    counts = probe(text, LAYOUT, tmp_path, width=1280)
    assert counts == {"over": "0", "plots": "2", "units": "2", "xs": "2", "logs": "1", "tall": "0"}, counts
    shot = keep(screenshot(page, 1280, 1400, tmp_path), "history-1280")
    record_property("screenshot", str(shot))
    print(f"screenshot: {shot}")
