"""The MLPerf log's cost per epoch, and MLPerf's time to train against dnnbench's own.

1. Writing: the events one epoch writes to mlperf_log.txt (block_start, epoch_start,
   epoch_stop, eval_start, eval_accuracy, eval_stop, block_stop), through mllog to a real file
   in a temporary folder, --epochs-logged times; microseconds per epoch (median of --rounds).
2. Runs: --runs trainings of resnet18 on the UCI digits (`dnnbench data digits`, 32 px, batch 32,
   the closed-division schedule) to 76 % top-1, each in its own process as `dnnbench train`
   runs it; per run: the mean epoch (on the clock), the log's share of it (1. / epoch), and
   run_start -> run_stop from mlperf_log.txt against dnnbench's time_to_target_s.

Usage: python benchmarks/mlperf_overhead.py [--runs 3] [--rounds 5] [--epochs-logged 2000]
"""
import argparse
import argparse as _ap
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from dnnbench.datasets.digits import write_digits  # noqa: E402 - the real digits (`dnnbench data digits`)

from dnnbench.results import mlperf  # noqa: E402
from dnnbench.workloads import mlperf_log  # noqa: E402


class _Workload(object):
    name = "resnet18"


def log_cost_per_epoch(epochs):
    """Seconds the training thread spends in the log's calls per epoch."""
    with tempfile.TemporaryDirectory() as out:
        args = _ap.Namespace(results=out, run_id="bench", resume=False, eval_every=1, epochs=epochs + 1)
        log = mlperf_log.Log(args, _Workload(), 0)
        log.started = True
        t0 = time.perf_counter()
        for e in range(epochs):
            log.epoch_start(e, 0)
            log.epoch_stop(e + 1)
            log.eval_start(e + 1)
            log.eval_result(e + 1, 50.0, False)
        spent = time.perf_counter() - t0
        log.close({"status": "ok", "training": {}})
    return spent / epochs


def one_run(digits, out):
    cmd = [sys.executable, "-m", "dnnbench.workloads.train", "resnet18", "--data", str(digits), "--results",
           str(out), "--image-size", "32", "--batch-size", "32", "--workers", "0", "--lr-schedule", "poly",
           "--lr", "0.025", "--mlperf", "closed", "--target-accuracy", "76", "--epochs", "10", "--seed", "1"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=1800)
    with open(os.path.join(out, "result.json")) as fh:
        result = json.load(fh)
    log = mlperf.summary(mlperf.events(Path(out, "mlperf_log.txt").read_text()))
    epochs = result["training"]["epochs"]
    return result["training"], log, result["training"]["on_clock_s"] / len(epochs)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--epochs-logged", type=int, default=2000)
    a = p.parse_args()
    per_epoch = statistics.median(log_cost_per_epoch(a.epochs_logged) for _ in range(a.rounds))
    print(f"log writing: {per_epoch * 1e6:.1f} us per epoch (7 events, median of {a.rounds} rounds of "
          f"{a.epochs_logged} epochs)")
    with tempfile.TemporaryDirectory() as tmp:
        digits = write_digits(Path(tmp) / "digits")
        for i in range(a.runs):
            training, log, epoch_s = one_run(digits, Path(tmp) / f"run{i}")
            tta, mlp = training["time_to_target_s"], log["time_to_train_s"]
            print(f"run {i}: epoch {epoch_s:.2f} s, log {100 * per_epoch / epoch_s:.4f} % of it; "
                  f"reached at epoch {training['reached_at_epoch']}: dnnbench {tta:.3f} s, "
                  f"run_start -> run_stop {mlp:.3f} s, difference {1000 * (mlp - tta):+.0f} ms")


if __name__ == "__main__":
    main()
