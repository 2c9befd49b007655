"""Harness overhead: the same model, optimizer and batch trained by a bare loop and by the
harness, interleaved in one process; prints both throughputs and the ratio.

Usage: python benchmarks/harness_overhead.py [--workload resnet18] [--device cpu|cuda]
       [--batch-size N] [--steps N] [--rounds N] [--amp fp16] [--channels-last]
"""
import argparse
import json
import os
import statistics
import tempfile
import time

import torch

from dnnbench.workloads import compat, harness, load


def bare_loop(workload, args, steps, device, amp, channels_last):
    """A hand-written loop: no windows, no NaN checks, no data iterator, one sync at the end."""
    torch.manual_seed(0)
    model = workload.build(args).to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9,
                          **compat.optimizer_kwargs(torch.optim.SGD, device, False))
    scaler = compat.grad_scaler(device, amp)
    batch = workload.to_device(workload.synthetic_batch(args, device), device, channels_last)
    # the harness's own step, so the two differ only in what surrounds it
    step = harness.train_step(workload, model, opt, scaler, device, amp)

    for _ in range(args.warmup):
        step(batch)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step(batch)
    sync()
    return steps * args.batch_size / (time.perf_counter() - t0)


def with_harness(name, argv):
    with tempfile.TemporaryDirectory() as out:
        code = harness.run(load(name), argv + ["--results", out, "--progress", "1e9"])
        assert code == 0, "harness run failed"
        with open(os.path.join(out, "result.json")) as fh:
            return json.load(fh)["throughput"]["total"]["overall"]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--workload", default="resnet18")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
    p.add_argument("--windows", type=int, default=4, help="harness windows the steps are split into")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--amp", choices=("none", "fp16", "bf16"), default="none")
    p.add_argument("--channels-last", action="store_true")
    a = p.parse_args()
    amp = None if a.amp == "none" else a.amp
    workload = load(a.workload)
    argv = ["--device", a.device, "--batch-size", str(a.batch_size), "--warmup", "5", "--synthetic",
            "--number", str(a.steps // a.windows), "--repeat", str(a.windows), "--amp", a.amp]
    if a.channels_last:
        argv.append("--channels-last")
    args = harness.parser_for(workload).parse_args(argv)
    if a.device == "cuda":
        torch.backends.cudnn.benchmark = True
    bare, harn = [], []
    for r in range(a.rounds):  # interleaved, order swapped every round: drift (clocks, heat) hits both alike
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):
            if which == 0:
                bare.append(bare_loop(workload, args, a.steps, a.device, amp, a.channels_last))
            else:
                harn.append(with_harness(a.workload, argv))
        print("round %d: bare %.1f  harness %.1f %s/s" % (r + 1, bare[-1], harn[-1], workload.unit), flush=True)
    b, h = statistics.median(bare), statistics.median(harn)
    name = torch.cuda.get_device_name() if a.device == "cuda" else "CPU"
    print("%s on %s, batch %d, amp %s%s: bare loop %.1f, harness %.1f %s/s (medians of %d); overhead %+.2f%%"
          % (a.workload, name, a.batch_size, a.amp, ", channels_last" if a.channels_last else "",
             b, h, workload.unit, a.rounds, (b / h - 1) * 100))


if __name__ == "__main__":
    main()
