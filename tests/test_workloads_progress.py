"""Long work is never silent: a training epoch's steps, its evaluation and the warmup say how
far they are, with a rate and an ETA (workloads/progress.py); a suite's bar has an ETA."""
from __future__ import annotations

import subprocess
import sys

from dnnbench.workloads import progress
from tests.ratings import write_ratings


def test_a_ticker_speaks_at_its_interval_never_for_the_last_step(monkeypatch):
    monkeypatch.delenv("DNNBENCH_PROGRESS_S", raising=False)
    said: list[str] = []
    t = progress.Ticker("epoch 2/5:", 100, said.append, every=0.0 + 1e-9)
    t.tick(0)
    t.tick(40)
    t.tick(100)
    assert len(said) == 1 and said[0].startswith("epoch 2/5: 40/100 steps (40%)") and "ETA " in said[0]
    quiet: list[str] = []
    t = progress.Ticker("x", 100, quiet.append, every=3600)
    for k in range(100):
        t.tick(k)
    assert quiet == []
    monkeypatch.setenv("DNNBENCH_PROGRESS_S", "0")        # 0: no lines at all
    t = progress.Ticker("x", 100, quiet.append, every=1e-9)
    t.tick(50)
    assert quiet == []


def test_a_resumed_epoch_counts_from_where_it_starts():
    said: list[str] = []
    t = progress.Ticker("epoch 1/1:", 100, said.append, every=1e-9, start=90)
    t.tick(90)
    t.tick(95)
    assert len(said) == 1 and said[0].startswith("epoch 1/1: 95/100 steps (95%)")


def test_eta_reads_in_hours_minutes_seconds():
    assert [progress.fmt_eta(s) for s in (5, 75, 3 * 3600 + 120)] == ["5s", "1m15s", "3h02m"]


def _lines(cmd, **env):
    import os
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "DNNBENCH_PROGRESS_S": "0.000001", **env})
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stderr.splitlines()


def test_a_training_epoch_says_its_steps_with_an_eta(tmp_path):
    ratings = write_ratings(tmp_path / "ml", users=30, items=300, per_user=5)
    lines = _lines([sys.executable, "-m", "dnnbench.workloads.train", "ncf", "--data", str(ratings),
                    "--results", str(tmp_path / "r"), "--epochs", "1", "--batch-size", "16"])
    steps = [line for line in lines if line.startswith("[ncf train] epoch 1/1: ")]
    assert steps and all(" steps (" in line and " ETA " in line for line in steps), lines


def test_the_warmup_says_its_steps(tmp_path):
    lines = _lines([sys.executable, "-m", "dnnbench.workloads", "resnet18", "--device", "cpu", "--synthetic",
                    "--batch-size", "1", "--warmup", "3", "--number", "1", "--repeat", "1",
                    "--results", str(tmp_path)])
    assert any(line.startswith("[resnet18] warmup: 1/3 steps") for line in lines), lines

