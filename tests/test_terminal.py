"""Every screen read as a person sees it: the command runs in a real 80x24 terminal (a tmux
pane; rich and the help formatter take the width from the tty, not from COLUMNS), the pane's
whole history is captured, and each identifier the screen shows (a base, a workload, a job,
an option, a header) must be found whole on one line: nothing split mid-token."""
from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from tests.helpers import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "results" / "cpu-suite"
_count = itertools.count()


@pytest.fixture(scope="module")
def tmux(tmp_path_factory):
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed: run `sudo bash scripts/dev-setup.sh`")
    folder = tmp_path_factory.mktemp("tmux")
    conf = folder / "tmux.conf"
    # exit-empty off and a session that stays: killing the last screen's session must not
    # take the server down while the next new-session connects ("server exited unexpectedly")
    conf.write_text("set -s exit-empty off\nset -g history-limit 20000\n"
                    "set -g default-terminal screen-256color\n")
    sock = f"dnnbench-test-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
    subprocess.run(["tmux", "-L", sock, "-f", str(conf), "new-session", "-d", "-s", "keep", "sleep 3600"],
                   check=True, env=env)
    yield sock, conf, folder, env
    subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def screen(tmux, *command: str) -> list[str]:
    """The lines a person sees after `command` ran in an 80x24 terminal (scrolled-off ones too)."""
    sock, conf, folder, env = tmux
    name = f"s{next(_count)}"
    done = folder / f"{name}.done"
    shell = f"cd {shlex.quote(str(folder))}; {shlex.join(command)}; touch {shlex.quote(str(done))}; sleep 600"
    base = ["tmux", "-L", sock, "-f", str(conf)]
    subprocess.run(base + ["new-session", "-d", "-s", name, "-x", "80", "-y", "24", shell], check=True, env=env)
    deadline = time.monotonic() + 300          # bounded, generous: a busy machine is slow
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.exists(), f"{command} did not finish"
    text = subprocess.run(base + ["capture-pane", "-p", "-t", name, "-S", "-", "-E", "-"],
                          capture_output=True, text=True, check=True).stdout
    subprocess.run(base + ["kill-session", "-t", name], capture_output=True)
    return text.splitlines()


def dnnbench_screen(tmux, *args: str) -> list[str]:
    return screen(tmux, sys.executable, "-m", "dnnbench", *args)


def assert_whole(lines: list[str], identifiers, what: str) -> None:
    """Each identifier on one line, as a token of its own (not cut at the screen's edge)."""
    assert all(len(line) <= 80 for line in lines)
    split = [i for i in identifiers
             if not any(re.search(rf"(^|[\s(,`\[<|]){re.escape(i)}($|[\s),.:;`\]>|])", line) for line in lines)]
    assert not split, f"{what}: split or missing at 80 columns: {split}\n" + "\n".join(lines)


def test_bases_at_80_columns(tmux):
    from dnnbench.containers import catalog
    lines = dnnbench_screen(tmux, "bases")
    assert_whole(lines, list(catalog.catalog()) + ["base", "pytorch", "cuda/rocm", "python", "distro"], "bases")
    assert any(line.startswith("(hidden:") for line in lines)     # what did not fit is named
    # --wide: every column, each row one line however wide (read from a pipe: no terminal wrap)
    sock, conf, folder, env = tmux
    wide = subprocess.run([sys.executable, "-m", "dnnbench", "bases", "--wide"], capture_output=True, text=True,
                          env={**env, "COLUMNS": "80"}, cwd=folder).stdout.splitlines()
    assert any(re.search(r"^ngc-24\.10 .* nvcr\.io/nvidia/pytorch:24\.10-py3", line) for line in wide), wide


def test_workloads_list_and_detail_at_80_columns(tmux):
    from dnnbench.workloads import WORKLOADS
    lines = dnnbench_screen(tmux, "workloads")
    assert_whole(lines, list(WORKLOADS) + ["workload", "--data", "unit"], "workloads")
    assert len(lines) < 60
    detail = dnnbench_screen(tmux, "workloads", "maskrcnn")
    assert_whole(detail, ["maskrcnn", "--reference-setup", "reference:", "differs:"], "workloads maskrcnn")


def test_report_and_compare_at_80_columns(tmux):
    jobs = ["ncf-bs64", "resnet18-bs2", "resnet18-bs4", "resnet18-ddp-bs2"]
    lines = dnnbench_screen(tmux, "report", str(FIXTURE))
    assert_whole(lines, jobs + ["compute-bound", "throughput", "samples/s", "images/s"], "report")
    lines = dnnbench_screen(tmux, "compare", str(FIXTURE), str(FIXTURE))
    assert_whole(lines, jobs + ["inconclusive", "B/A"], "compare")


def test_run_summary_at_80_columns_has_no_per_gpu_column_on_a_cpu(tmux):
    code = ("import json, pathlib; from dnnbench.results.record import show_outcome; "
            f"p = pathlib.Path({str(FIXTURE / 'resnet18-bs4' / 'r1')!r}); "
            "show_outcome(p, json.loads((p / 'result.json').read_text()))")
    lines = screen(tmux, sys.executable, "-c", code)
    assert_whole(lines, ["resnet18", "compute-bound", "throughput", "images/s", "verdict"], "run summary")
    assert not any("per GPU" in line for line in lines)


def test_doctor_and_images_at_80_columns(tmux):
    assert_whole(dnnbench_screen(tmux, "doctor"), ["docker", "apptainer/singularity", "piece", "status"], "doctor")
    assert_whole(dnnbench_screen(tmux, "images", "--sif-dir", str(ROOT)), ["image", "kind"], "images")


def _commands():
    """Every command and subcommand of the CLI, as argv prefixes."""
    import typer

    from dnnbench.cli import app
    found = []

    def walk(cmd, prefix):
        subs = getattr(cmd, "commands", None)
        found.append((prefix, cmd))
        for name, sub in (subs or {}).items():
            walk(sub, prefix + [name])
    walk(typer.main.get_command(app), [])
    return found


@pytest.mark.parametrize("prefix", [p for p, _ in _commands()], ids=lambda p: " ".join(p) or "dnnbench")
def test_help_at_80_columns_splits_no_option(tmux, prefix):
    cmd = dict((tuple(p), c) for p, c in _commands())[tuple(prefix)]
    flags = [o for p in cmd.params for o in list(p.opts) + list(p.secondary_opts) if o.startswith("--")]
    lines = dnnbench_screen(tmux, *prefix, "--help")
    assert any(line.startswith("Usage: dnnbench") for line in lines), lines
    assert_whole(lines, flags + list(getattr(cmd, "commands", None) or {}), f"{' '.join(prefix)} --help")
