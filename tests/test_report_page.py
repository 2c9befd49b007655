"""The HTML report is a page people open: load it in a real browser (Debian's headless
Chromium), from a report of real recorded CPU runs, and check what a reader would see."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess

import pytest

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


def chromium(*args, tmp_path) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is not installed: run `bash scripts/dev-setup.sh` (it installs Debian's chromium)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=5000"]
    return subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("html")
    dnnbench("report", RECORDED, "--format", "html", "--output", folder / "report.html", "--plots", folder, check=0)
    return folder / "report.html"


def test_the_page_shows_every_job_and_draws_every_plot(page, tmp_path):
    text = page.read_text(encoding="utf-8")
    jobs = sorted(set(re.findall(r"<td>((?:resnet18|ncf)[\w-]*)</td>", text)))
    assert jobs == ["ncf-bs64", "resnet18-bs2", "resnet18-bs4", "resnet18-ddp-bs2"]
    probed = tmp_path / "probed.html"
    probed.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    res = chromium("--dump-dom", probed.as_uri(), tmp_path=tmp_path)
    title = re.search(r"<title>(.*?)</title>", res.stdout)
    assert title, res.stderr[-2000:]
    counts = dict(re.findall(r"(\w+)=(\d+)", title.group(1)))
    assert counts["rows"] == "5"            # the heading row and the four jobs
    assert int(counts["images"]) >= 2 and counts["drawn"] == counts["images"], title.group(1)


def test_the_page_renders_without_console_errors(page, tmp_path):
    shot = tmp_path / "report.png"
    res = chromium(f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri(), tmp_path=tmp_path)
    assert shot.exists(), res.stderr[-2000:]
    assert "CONSOLE" not in res.stderr, [line for line in res.stderr.splitlines() if "CONSOLE" in line]
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (1200, 1600)
