"""`dnnbench history --format html` is a page people open: load it in headless Chromium (as
tests/test_report_page.py does for the report) and check that every series is drawn."""
from __future__ import annotations

import re

import pytest

from tests.helpers import dnnbench
from tests.history_results import write
from tests.test_report_page import chromium

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
    probed = tmp_path / "probed.html"
    probed.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    res = chromium("--dump-dom", probed.as_uri(), tmp_path=tmp_path)
    title = re.search(r"<title>(.*?)</title>", res.stdout)
    assert title, res.stderr[-2000:]
    counts = dict(re.findall(r"(\w+)=(\d+)", title.group(1)))
    assert counts == {"plots": "2", "points": "12", "drawn": "12", "rows": "13"}, title.group(1)


def test_the_history_page_renders_without_console_errors(page, tmp_path):
    shot = tmp_path / "page.png"
    res = chromium(f"--screenshot={shot}", "--window-size=1000,1200", page.as_uri(), tmp_path=tmp_path)
    assert shot.exists(), res.stderr[-2000:]
    assert "CONSOLE" not in res.stderr, [line for line in res.stderr.splitlines() if "CONSOLE" in line]
