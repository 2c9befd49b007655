"""The container side runs on old bases (NGC 21.07 = Python 3.8, PowerAI = 3.7): check it statically."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONTAINER_SIDE = [ROOT / "workloads", ROOT / "toolkit" / "__init__.py"]


def test_container_side_needs_at_most_python_37():
    exe = shutil.which("vermin") or str(Path(sys.executable).parent / "vermin")
    res = subprocess.run([exe, "-q", "--no-tips", "--violations", "--eval-annotations", "--backport", "dataclasses",
                          "-t=3.7-"] + [str(p) for p in CONTAINER_SIDE], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_container_side_never_imports_the_host_side():
    for path in (ROOT / "workloads").rglob("*.py"):
        text = path.read_text()
        for host_module in ("typer", "rich", "jinja2", "docker", "spython", "yaml"):
            assert f"import {host_module}" not in text and f"from {host_module}" not in text, (path, host_module)


def test_no_unused_imports_or_names():
    """pyflakes over every side: an unused import or a dead local is how dead code starts."""
    res = subprocess.run([sys.executable, "-m", "pyflakes", "toolkit", "workloads", "tests", "benchmarks"],
                         cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
