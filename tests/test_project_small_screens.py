"""Smaller things a user sees (issue 41, point 6), each checked where it shows: a build's cause
under its error line (no literal \\n), --loader gpu without a GPU said, slurm --dry-run not
pointing at a file it never wrote, a suite's default options not breaking its train: jobs,
PyTorch's worker warning said once."""
from __future__ import annotations

import io
import subprocess
import sys

import pytest

from dnnbench.errors import DnnbenchError
from tests.helpers import dnnbench
from tests.ratings import write_ratings


def test_a_failed_builds_cause_and_hint_are_lines_under_the_error(tmp_path):
    from rich.console import Console

    from dnnbench import cli, console
    from dnnbench.containers import build
    log = tmp_path / "build.log"
    log.write_text("Step 4/9 : RUN pip install x\nERROR: Could not find a version that satisfies x\n"
                   "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed\n")
    exc = build.explain_failure(DnnbenchError("the docker build failed", log=str(log)), None)
    buf = io.StringIO()
    saved, console.err = console.err, Console(file=buf, width=80, highlight=False, emoji=False)
    try:
        cli.print_error(exc)
    finally:
        console.err = saved
    lines = buf.getvalue().splitlines()
    assert "\\n" not in buf.getvalue(), lines
    assert [line for line in lines if line.startswith("error:")] == ["error: the docker build failed"]
    assert any(line.startswith("  hint: the network re-signs TLS") for line in lines), lines
    assert any("--ca-cert FILE" in line for line in lines), lines


def test_the_gpu_loader_without_gpus_says_it_decodes_on_the_cpu():
    res = dnnbench("run", "resnet18", "--runtime", "host", "--loader", "gpu", "--dry-run", check=0)
    assert "--loader gpu without --gpus" in res.stderr and "decoding on the CPU" in res.stderr
    res = dnnbench("run", "resnet18", "--runtime", "host", "--loader", "cpu", "--dry-run", check=0)
    assert "--loader" not in res.stderr


def test_the_harness_names_a_gpu_loader_on_a_cpu_as_such():
    from dnnbench.workloads.harness import _loader_label
    assert _loader_label("gpu", "cpu") == "gpu, decoding on the CPU: no GPU in this run"
    assert _loader_label("gpu", "cuda") == "gpu" and _loader_label("cpu", "cpu") == "cpu"


def test_a_slurm_dry_run_does_not_say_to_sbatch_a_file_it_never_wrote(tmp_path):
    res = dnnbench("slurm", "resnet18", "--runtime", "host", "--nodes", "2", "--results", tmp_path, "--run-id", "d",
                   "--dry-run", check=0)
    assert not (tmp_path / "d").exists()
    assert "submit with: sbatch" not in res.stdout and "no file is written" in res.stdout


def test_a_suites_default_options_do_not_break_its_train_jobs(tmp_path):
    ratings = write_ratings(tmp_path / "ml", users=30, items=100, per_user=5)
    suite = tmp_path / "s.yaml"
    suite.write_text(f"name: s\ndefaults: {{runtime: host, options: {{number: 2, repeat: 2, warmup: 1, workers: 0, "
                     f"seed: 3}}}}\njobs:\n  - {{workload: resnet18, batch_size: 2}}\n"
                     f"  - {{workload: ncf, name: ncf-train, data: {ratings}, train: {{epochs: 1}}}}\n")
    res = dnnbench("suite", "run", suite, "--results", tmp_path / "out", "--dry-run", check=0)
    assert "ncf-train/r1\tncf" in res.stdout and "resnet18-bs2/r1" in res.stdout
    # a train job's own benchmark option is still refused: only the defaults are sifted
    suite.write_text(suite.read_text().replace("train: {epochs: 1}", "train: {epochs: 1}, options: {number: 2}"))
    res = dnnbench("suite", "run", suite, "--results", tmp_path / "out", "--dry-run", check=2)
    assert "--number" in res.stderr


def test_pytorchs_worker_warning_is_said_once_per_run():
    """More DataLoader workers than CPUs (train's default 4 on a 2-core machine): PyTorch's 6-line
    warning at each loader (an epoch's train and eval loaders, said again whenever the warning
    filters are touched) becomes one line of ours, once."""
    pytest.importorskip("torch")
    code = ("import os, sys, warnings, torch\n"
            "from dnnbench.workloads import train_tasks\n"
            "data = torch.utils.data.TensorDataset(torch.zeros(4, 1))\n"
            "for _ in range(3):\n"
            "    n = train_tasks.workers((os.cpu_count() or 1) + 2)\n"
            "    torch.utils.data.DataLoader(data, num_workers=n).check_worker_number_rationality()\n"
            "    warnings.filterwarnings('ignore', message='unrelated')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "This DataLoader will create" not in res.stderr and res.stderr.count("DataLoader workers share") == 1, \
        res.stderr


def test_plots_lists_the_files_it_wrote(tmp_path):
    from tests.helpers import ROOT
    pytest.importorskip("matplotlib")
    res = dnnbench("report", ROOT / "tests" / "fixtures" / "results" / "cpu-suite", "--plots", tmp_path / "p", check=0)
    written = sorted(p.name for p in (tmp_path / "p").iterdir())
    assert "throughput.png" in written
    assert all(f"wrote {tmp_path / 'p' / name}" in res.stderr for name in written), res.stderr
