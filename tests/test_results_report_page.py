"""The HTML report is a page people open: load it in a real browser (Debian's headless
Chromium), from a report of real recorded CPU runs, and check what a reader would see."""
from __future__ import annotations

import re
import struct

import pytest

from tests.browser import keep, probe, screenshot
from tests.helpers import ROOT, dnnbench

RECORDED = ROOT / "tests" / "fixtures" / "results" / "cpu-suite"
MLPERF = ROOT / "tests" / "fixtures" / "results" / "mlperf-digits"
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
    dnnbench("report", RECORDED, MLPERF, "--format", "html", "--output", folder / "report.html", "--plots", folder,
             check=0)
    return folder / "report.html"


def test_the_page_shows_every_job_and_draws_every_plot(page, tmp_path):
    text = page.read_text(encoding="utf-8")
    jobs = sorted(set(re.findall(r"<td[^>]*>((?:resnet18|ncf)[\w-]*)</td>", text)))
    assert jobs == ["ncf-bs64", "resnet18-bs2", "resnet18-bs4", "resnet18-bs64", "resnet18-ddp-bs2"]
    counts = probe(text, PROBE, tmp_path)
    assert counts["rows"] == "6"            # the heading row, the four jobs and the training job
    assert int(counts["images"]) >= 2 and counts["drawn"] == counts["images"], counts


def test_the_page_renders_without_console_errors(page, tmp_path):
    head = screenshot(page, 1200, 1600, tmp_path).read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (1200, 1600)


# What a laptop shows at 1280 px: the page never scrolls sideways (a wide table scrolls in its own
# box), a name is one line, every plot says its axes with units, the MLPerf table is there.
LAYOUT = """<script>
window.addEventListener("load", () => {
  const page = document.documentElement;
  const over = Math.max(0, page.scrollWidth - window.innerWidth);
  const names = Array.from(document.querySelectorAll("td.name"));
  const line = parseFloat(getComputedStyle(document.body).lineHeight) || 20;
  const tall = names.filter(td => td.getBoundingClientRect().height > 2 * line).length;
  const boxed = Array.from(document.querySelectorAll("table")).filter(
    t => t.parentElement.getBoundingClientRect().right <= window.innerWidth + 1).length;
  const tables = document.querySelectorAll("table").length;
  const axes = Array.from(document.querySelectorAll("figcaption .axes")).map(a => a.textContent);
  const unitless = axes.filter(a => a.split(";").some(p => !/y: [^,]*\\(/.test(p))).length;
  const figures = document.querySelectorAll("figure").length;
  const mlperf = document.querySelectorAll("table.mlperf tr").length;
  document.title = `probe over=${over} names=${names.length} tall=${tall} boxed=${boxed} tables=${tables} ` +
                   `figures=${figures} captioned=${axes.length} unitless=${unitless} mlperf=${mlperf}`;
});
</script>"""


def test_the_page_fits_a_laptop_screen(page, tmp_path, record_property):
    text = page.read_text(encoding="utf-8")
    counts = probe(text, LAYOUT, tmp_path, width=1280)
    assert counts["over"] == "0", counts                       # no horizontal overflow at 1280 px
    assert int(counts["names"]) >= 10 and counts["tall"] == "0", counts
    assert counts["boxed"] == counts["tables"] == "2", counts
    assert counts["captioned"] == counts["figures"] and counts["unitless"] == "0", counts
    assert counts["mlperf"] == "2", counts                      # its heading and the one run
    shot = keep(screenshot(page, 1280, 1600, tmp_path), "report-1280")
    record_property("screenshot", str(shot))                    # named in the test's output (JUnit XML)
    print(f"screenshot: {shot}")


def test_each_plot_names_its_axes_with_units_and_a_wide_span_is_logarithmic(page):
    from dnnbench.results.plots import axes_of
    folder = page.parent
    said = {p.name: axes_of(p.read_bytes()) for p in folder.glob("*.png")}
    assert said and all(said.values()), said
    for name, axes in said.items():
        for part in axes.split("; "):
            assert re.search(r"y: [^,]*\(", part), (name, axes)
    # resnet18's 1.41 and 15.7 images/s are 11x apart: their panel is logarithmic; ncf's alone is not
    assert said["throughput.png"].count("(log scale)") == 1 and "samples/s" in said["throughput.png"], said
