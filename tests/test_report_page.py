"""The HTML report is a page people open: load it in a real browser (Debian's headless
Chromium), from a report of real recorded CPU runs, and check what a reader would see."""
from __future__ import annotations

import re
import struct

import pytest

from tests.browser import probe, screenshot
from tests.helpers import ROOT, dnnbench

RECORDED = ROOT / "tests" / "fixtures" / "results" / "cpu-suite"
# A probe appended to a copy of the page: it reports, in the title, what loaded.
PROBE = """<script>
window.addEventListener("load", () => {
  const imgs = Array.from(document.images);
  const drawn = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  const rows = document.querySelectorAll("#jobs tr").length;
  document.title = `probe rows=${rows} images=${imgs.length} drawn=${drawn}`;
});
</script>"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("html")
    dnnbench("report", RECORDED, "--format", "html", "--output", folder / "report.html", "--plots", folder, check=0)
    return folder / "report.html"


def test_the_page_shows_every_job_and_draws_every_plot(page, tmp_path):
    text = page.read_text(encoding="utf-8")
    jobs = sorted(set(re.findall(r"<td>((?:resnet18|ncf)[\w-]*)</td>", text)))
    assert jobs == ["ncf-bs64", "resnet18-bs2", "resnet18-bs4", "resnet18-ddp-bs2"]
    counts = probe(text, PROBE, tmp_path)
    assert counts["rows"] == "5"            # the heading row and the four jobs
    assert int(counts["images"]) >= 2 and counts["drawn"] == counts["images"], counts


def test_the_page_renders_without_console_errors(page, tmp_path):
    head = screenshot(page, 1200, 1600, tmp_path).read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (1200, 1600)
