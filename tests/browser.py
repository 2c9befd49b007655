"""A page loaded in a real browser (Debian's headless Chromium), as people open the HTML report
and the history page: what a probe script counted once it loaded, and a screenshot."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium(*args, tmp_path) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is not installed: run `bash scripts/dev-setup.sh` (it installs Debian's chromium)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=5000"]
    return subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=120)


def probe(text: str, script: str, tmp_path, width: int | None = None) -> dict[str, str]:
    """Load a copy of the page `text` with `script` before </body>, a script that reports what
    loaded in the title (`probe name=N ...`); those counts by name. `width`: the window's, in px."""
    probed = tmp_path / "probed.html"
    probed.write_text(text.replace("</body>", script + "</body>"), encoding="utf-8")
    size = [f"--window-size={width},900"] if width else []
    res = chromium(*size, "--dump-dom", probed.as_uri(), tmp_path=tmp_path)
    title = re.search(r"<title>(.*?)</title>", res.stdout)
    assert title, res.stderr[-2000:]
    return dict(re.findall(r"(\w+)=(\d+)", title.group(1)))


def screenshot(page, width: int, height: int, tmp_path):
    """The page drawn at width x height: the PNG's path; the page logged no console error."""
    shot = tmp_path / f"{page.stem}.png"
    res = chromium(f"--screenshot={shot}", f"--window-size={width},{height}", page.as_uri(), tmp_path=tmp_path)
    assert shot.exists(), res.stderr[-2000:]
    assert "CONSOLE" not in res.stderr, [line for line in res.stderr.splitlines() if "CONSOLE" in line]
    return shot


def keep(shot: Path, name: str) -> Path:
    """A screenshot copied where it outlives pytest's temporary folders (which other test runs on
    the machine prune): $DNNBENCH_TEST_SHOTS, else /var/tmp/dnnbench-test-shots; its path."""
    folder = Path(os.environ.get("DNNBENCH_TEST_SHOTS", "/var/tmp/dnnbench-test-shots"))
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / f"{name}.png"
    shutil.copyfile(shot, kept)
    return kept
