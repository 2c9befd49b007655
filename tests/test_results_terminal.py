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
    assert any(line.startswith("(hidden at 80 columns:") for line in lines)     # what did not fit is named
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


# --- issue 41: the column that decides is on screen at 80 columns; numbers never split ---------

def _numbers(lines: list[str]) -> list[str]:
    """Every figure a table row shows (1,674.8; -29.7; 0.998), as printed."""
    return [t for line in lines for t in re.findall(r"(?<![\w.,:/-])-?\d[\d,]*\.\d+(?![\w.,:/-])", line)]


def _header(lines: list[str], *names: str) -> None:
    """Each header on screen (a header may wrap between its words: `+-95%` / `CI %`)."""
    text = " ".join(" ".join(line.split()) for line in lines)
    missing = [n for n in names if not re.search(rf"(^|\s){re.escape(n)}($|\s)", text)]
    assert not missing, f"not on screen at 80 columns: {missing}\n" + "\n".join(lines)


def test_report_keeps_n_and_failed_and_says_why_a_ci_is_wide(tmux):
    lines = dnnbench_screen(tmux, "report", str(FIXTURE))
    _header(lines, "job", "n", "throughput", "verdict")
    assert any("(system: CPU; failed: 0)" in line for line in lines), lines   # one value in every row: said once
    assert_whole(lines, _numbers(lines) + ["too", "few", "runs"], "report numbers")
    assert any(line.startswith("(hidden at 80 columns:") for line in lines), lines


def test_report_against_a_baseline_shows_what_decides(tmux):
    sock, conf, folder, env = tmux
    baseline = folder / "targets.yaml"
    baseline.write_text("resnet18-bs2: 50.0\nresnet18-bs4: {target: 10, lower: -0.05}\nncf-bs64: 100\n")
    lines = dnnbench_screen(tmux, "report", str(FIXTURE), "--baseline", str(baseline))
    _header(lines, "throughput", "diff%", "vs target")
    assert any(re.search(r"resnet18-bs2 .* fail\s*$", line) for line in lines), lines    # the fail is on screen
    assert_whole(lines, _numbers(lines) + ["resnet18-bs2", "resnet18-bs4", "ncf-bs64"], "report --baseline")


def _compare_images_results(root, images, rounds=3):
    """What `compare-images --images A,B,C --rounds 3 --run-id cmp` leaves: each image's round
    folders with a finished result, for `report` to read."""
    import json
    src = json.loads((FIXTURE / "resnet18-bs4" / "r1" / "result.json").read_text())
    for i, image in enumerate(images):
        for n in range(rounds):
            name = f"{i:02d}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', image.rsplit('/', 1)[-1])}" + (
                "" if n == 0 else f"-round{n + 1}")
            data = dict(src, run_id=f"cmp.{name}", started=f"2026-01-01T00:0{i}:0{n}", job=None)
            data["windows"] = [dict(w, seconds=w["seconds"] * (1 + 0.5 * i) * (1 + 0.01 * n)) for w in src["windows"]]
            data["host"] = dict(src["host"], runtime="docker", image=image, base=None, machine="box")
            data["system"] = dict(src["system"], pytorch=f"2.{i}.0", host=f"{i}{n}ab34cd56ef")
            (root / "cmp" / name).mkdir(parents=True)
            (root / "cmp" / name / "result.json").write_text(json.dumps(data))


# `compare-images` with its measurements made by a deterministic stand-in (the images are not on
# this machine, and a finished step is read back only under its identity): each image's runs take
# its work, a little different each run, so the rounds decide
COMPARE_DRIVER = """
import itertools, sys
from dnnbench.results import numbers
from dnnbench.campaigns import bisect
WORK = dict(zip(sys.argv[1].split(","), (1.0, 1.5, 2.0)))
count = itertools.count()
def measure(step, base, template, dataset=None):
    k = WORK[step.image] * (1 + 0.004 * (next(count) % 3 - 1))
    windows = [{"items": 8, "seconds": k, "data_wait": 0.0, "load1": 1.0} for _ in range(5)]
    step.result = {"status": "ok", "windows": windows, "world_size": 1, "ranks": [],
                   "system": {"pytorch": "2.%d.0" % list(WORK).index(step.image)}}
    step.headline = numbers.run_headline(step.result)
    step.load = 1.0
    return step
bisect.measure = measure
bisect.check_first = lambda *a: True
from dnnbench.cli import main
sys.argv = ["dnnbench", "compare-images", "resnet18", "--images", sys.argv[1]] + sys.argv[2:]
main()
"""


def test_compare_images_rounds_keep_the_verdict_and_report_has_a_row_per_image(tmux):
    sock, conf, folder, env = tmux
    images = ["registry.example.com/team/pytorch:24.01-py3", "registry.example.com/team/pytorch:24.05-py3",
              "registry.example.com/team/pytorch:24.10-py3"]
    driver = folder / "compare_driver.py"
    driver.write_text(COMPARE_DRIVER)
    lines = screen(tmux, sys.executable, str(driver), ",".join(images), "--rounds", "3",
                   "--results", str(folder / "measured"), "--run-id", "cmp", "--batch-size", "4")
    _header(lines, "image", "verdict", "throughput")
    rows = [line for line in lines if line.startswith("registry.")]
    assert [row.split()[-1] for row in rows] == ["first", "slower", "slower"], lines
    assert_whole(lines, images + _numbers(rows), "compare-images --rounds 3")
    root = folder / "cmp-results"
    _compare_images_results(root, images)
    lines = dnnbench_screen(tmux, "report", str(root / "cmp"))
    rows = [line for line in lines if line.startswith("registry.")]
    assert len(rows) == 3, lines                                   # one row per image, never pooled
    assert_whole(lines, images + _numbers(lines), "report of compare-images")
    assert not any("slow host" in line for line in lines)         # container ids are not hosts


def test_images_keeps_base_size_and_age(tmux):
    lines = dnnbench_screen(tmux, "images", "--sif-dir", str(ROOT))
    _header(lines, "image", "base", "size", "age")
    assert not any(re.search(r"\d$", line) and re.match(r"^\s+(GiB|MiB)\b", nxt)
                   for line, nxt in zip(lines, lines[1:])), lines   # a size never split from its unit


def test_wide_says_it_is_for_a_wide_terminal(tmux):
    for cmd in (["report"], ["images"], ["bases"], ["compare"], ["workloads"]):
        lines = dnnbench_screen(tmux, *cmd, "--help")
        text = " ".join(" ".join(line.split()) for line in lines)
        assert "for a terminal wider than the table" in text, (cmd, lines)


def test_help_lists_cut_no_description_and_split_no_option(tmux):
    lines = dnnbench_screen(tmux, "--help")
    assert not any(line.rstrip().endswith("...") for line in lines if not line.startswith("Usage:")), lines
    for prefix in (["run"], ["slurm"], ["compare-images"], ["train"]):
        lines = dnnbench_screen(tmux, *prefix, "--help")
        cut = [line for line in lines if re.search(r"[A-Za-z0-9]-$", line.rstrip())]
        assert not cut, f"{prefix} --help breaks a word at its hyphen: {cut}"
