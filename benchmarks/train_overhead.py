"""Per-step host overhead of the training mode (`dnnbench train`), in microseconds, against a
bare loop over the same task.

NCF on made-up ratings: embeddings and a small MLP, so the host loop dominates the step, as it
does on a GPU. The bare side runs the task's own batches, loss, backward and Adam step with
nothing around them; the training side is `train.run` for one epoch, whose timed window is that
epoch (the evaluation and the checkpoint come after the clock stops). Overhead per step =
train seconds per step - bare seconds per step. Both sides in this process, the order swapped
every round.

Usage: python benchmarks/train_overhead.py [--users 3000] [--batch-size 250] [--rounds 8]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.ratings import write_ratings  # noqa: E402 - the test suite's made-up ratings

from dnnbench.workloads import load, train, train_tasks  # noqa: E402
from dnnbench.workloads.harness import Distributed  # noqa: E402


def bare(workload, argv):
    """The task's steps with nothing around them; seconds per step."""
    args = train.parser_for(workload).parse_args(argv)
    task = train_tasks.for_workload(workload.name)(workload, args, Distributed(), "cpu")
    torch.manual_seed(args.seed)
    model = workload.build(args)
    opt = task.optimizer(model)
    steps, batches = task.batches(0, 0)
    t0 = time.perf_counter()
    for batch in batches:
        loss, _ = task.loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return (time.perf_counter() - t0) / steps


def training(workload, argv, batch_size):
    """One epoch of `dnnbench train`'s loop; seconds per step of its timed window."""
    with tempfile.TemporaryDirectory() as out:
        assert train.run(workload, argv + ["--results", out]) == 0, "train run failed"
        with open(os.path.join(out, "result.json")) as fh:
            window = json.load(fh)["windows"][0]
    return window["seconds"] / (window["items"] / batch_size)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", type=int, default=3000, help="made-up users (20 ratings each)")
    p.add_argument("--batch-size", type=int, default=250, help="a multiple of 5: a positive and 4 negatives")
    p.add_argument("--rounds", type=int, default=8)
    a = p.parse_args()
    torch.set_num_threads(1)    # the host loop, not intra-op threading, is what is measured
    workload = load("ncf")
    with tempfile.TemporaryDirectory() as data:
        write_ratings(Path(data), users=a.users, items=400)
        argv = ["--data", data, "--epochs", "1", "--batch-size", str(a.batch_size), "--device", "cpu"]
        training(workload, argv, a.batch_size)          # warm both paths once
        bare(workload, argv)
        per_step = []
        for r in range(a.rounds):
            got = {}
            for side in (("bare", "train") if r % 2 == 0 else ("train", "bare")):
                got[side] = bare(workload, argv) if side == "bare" else training(workload, argv, a.batch_size)
            us = (got["train"] - got["bare"]) * 1e6
            per_step.append(us)
            print("round %d: bare %.1f us/step, train %.1f us/step, overhead %+.2f us/step" % (
                r + 1, got["bare"] * 1e6, got["train"] * 1e6, us), flush=True)
    print("training-mode per-step host overhead: median %+.2f us (range %+.2f to %+.2f) over %d rounds, "
          "ncf batch %d, torch %s, 1 thread" % (statistics.median(per_step), min(per_step), max(per_step),
                                                a.rounds, a.batch_size, torch.__version__))


if __name__ == "__main__":
    main()
