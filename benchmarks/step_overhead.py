"""Per-step host overhead of the harness, in microseconds, against a bare loop.

On a model so small that the host dominates (one linear layer on a synthetic batch), whatever
the harness adds around the step (timing, data-wait clock, loss bookkeeping, batch iterator)
shows directly: overhead per step = (1/harness rate - 1/bare rate) x batch. A GPU step of an
H100 resnet50 at batch 256 takes about 100 ms, so the goal of < 50 us is < 0.1 % there; the
figure taken on a CPU predicts the GPU's, because the added work is host Python either way.

Both sides run in this process, alternated (the order swapped every round), several rounds;
prints each round, then the median and range.

Usage: python benchmarks/step_overhead.py [--steps 4000] [--rounds 8] [--batch-size 32]
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import torch

from dnnbench.workloads import harness


class OneLayer(harness.Workload):
    """A one-layer MLP on a synthetic batch: the step is a few microseconds of compute."""
    name = "one_layer"
    unit = "samples"
    default_batch_size = 32
    lr = 0.01

    def build(self, args):
        return torch.nn.Linear(64, 10)

    def synthetic_batch(self, args, device):
        g = torch.Generator().manual_seed(args.seed)
        return (torch.randn(args.batch_size, 64, generator=g).to(device),
                torch.randint(0, 10, (args.batch_size,), generator=g).to(device))

    def loss(self, model, batch):
        return torch.nn.functional.cross_entropy(model(batch[0]), batch[1])


def bare(workload, args, steps):
    """The same step (harness.train_step), the same batch, nothing around it."""
    torch.manual_seed(0)
    model = workload.build(args)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    step = harness.train_step(workload, model, opt, None, "cpu", None)
    batch = workload.synthetic_batch(args, "cpu")
    for _ in range(args.warmup):
        step(batch)
    t0 = time.perf_counter()
    for _ in range(steps):
        step(batch)
    return steps * args.batch_size / (time.perf_counter() - t0)


def with_harness(workload, argv):
    with tempfile.TemporaryDirectory() as out:
        code = harness.run(workload, argv + ["--results", out, "--progress", "1e9"])
        assert code == 0, "harness run failed"
        with open(os.path.join(out, "result.json")) as fh:
            return json.load(fh)["throughput"]["total"]["value"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=4000, help="timed steps per side per round")
    p.add_argument("--windows", type=int, default=10, help="harness windows the steps are split into")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32)
    a = p.parse_args()
    torch.set_num_threads(1)    # the host loop, not intra-op threading, is what is measured
    workload = OneLayer()
    argv = ["--device", "cpu", "--synthetic", "--batch-size", str(a.batch_size), "--warmup", "200",
            "--number", str(a.steps // a.windows), "--repeat", str(a.windows)]
    args = harness.parser_for(workload).parse_args(argv)
    args.lr = workload.lr
    per_step = []
    for r in range(a.rounds):
        got = {}
        for side in (("bare", "harness") if r % 2 == 0 else ("harness", "bare")):
            got[side] = bare(workload, args, a.steps) if side == "bare" else with_harness(workload, argv)
        us = (1.0 / got["harness"] - 1.0 / got["bare"]) * a.batch_size * 1e6
        per_step.append(us)
        print("round %d: bare %.1f us/step, harness %.1f us/step, overhead %+.2f us/step" % (
            r + 1, a.batch_size / got["bare"] * 1e6, a.batch_size / got["harness"] * 1e6, us), flush=True)
    print("per-step host overhead: median %+.2f us (range %+.2f to %+.2f) over %d rounds of %d steps, "
          "torch %s, 1 thread" % (statistics.median(per_step), min(per_step), max(per_step), a.rounds,
                                  a.steps, torch.__version__))


if __name__ == "__main__":
    main()
