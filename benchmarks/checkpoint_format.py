"""Writing and reading a training checkpoint: dnnbench's format (JSON header, raw tensor bytes,
SHA-256; workloads/checkpoint.py) against torch.save / torch.load(weights_only=True), in memory
(no disk in the figure), for a model's weights plus SGD momentum, as `dnnbench train` keeps them.

The write runs in the checkpoint thread while training goes on; the read once per resume.
Prints the median of --rounds for each, the order swapped every round.

Usage: python benchmarks/checkpoint_format.py [--model resnet50] [--rounds 5]
"""
import argparse
import io
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from dnnbench.workloads import checkpoint  # noqa: E402


def state_of(name):
    import torchvision
    model = getattr(torchvision.models, name)()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 3, 64, 64)).sum().backward()
    opt.step()
    return {"model": model.state_dict(), "optimizer": {"kind": "SGD", "state": opt.state_dict()},
            "epoch": 1, "step": 0, "rng": {"torch": torch.get_rng_state()}}


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    state = state_of(a.model)
    times = {k: [] for k in ("dnnbench write", "dnnbench read", "torch.save", "torch.load weights_only")}
    size = {}
    for r in range(a.rounds):
        for side in (("dnnbench", "torch") if r % 2 == 0 else ("torch", "dnnbench")):
            buf = io.BytesIO()
            if side == "dnnbench":
                dt, _ = timed(lambda: checkpoint.write(buf, state))
                times["dnnbench write"].append(dt)
                data = buf.getvalue()
                size["dnnbench"] = len(data)
                times["dnnbench read"].append(timed(lambda: checkpoint.read(data))[0])
            else:
                dt, _ = timed(lambda: torch.save(state, buf))
                times["torch.save"].append(dt)
                data = buf.getvalue()
                size["torch"] = len(data)
                times["torch.load weights_only"].append(
                    timed(lambda: torch.load(io.BytesIO(data), weights_only=True))[0])
    print("%s weights + SGD momentum: dnnbench %.1f MB, torch.save %.1f MB; torch %s, %d rounds"
          % (a.model, size["dnnbench"] / 1e6, size["torch"] / 1e6, torch.__version__, a.rounds))
    for k, v in times.items():
        print("  %-26s median %.3f s  (min %.3f, max %.3f)" % (k, statistics.median(v), min(v), max(v)))


if __name__ == "__main__":
    main()
