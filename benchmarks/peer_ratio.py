"""dnnbench against a peer script, side by side: the same data, batch, workers and timed
iterations, the sides alternated in rotating order over several rounds; prints each round's
ratio (dnnbench / peer) with the median and range.

The peer is somebody else's training script given by path, run unmodified (nothing of it is
committed): e.g. a checkout of pytorch/examples, `imagenet/main.py`. It is timed by dnnbench's
script instrumentation (python -m dnnbench.workloads.instrument: windows of optimizer steps,
items from its DataLoader batches), the built-in workload by the harness; both count the same
iterations (--warmup untimed, then --number x --repeat timed).

Usage: python benchmarks/peer_ratio.py --peer ~/examples/imagenet/main.py --data FAKE_IMAGENET
           [--arch resnet18] [--batch-size 16] [--workers 2] [--rounds 8]
(make the data with `dnnbench data fake imagenet --to FAKE_IMAGENET --size 224`)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def _rate(cmd, out, cwd):
    res = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    path = os.path.join(out, "result.json")
    if not os.path.exists(path):
        sys.exit("no result from %s:\n%s" % (" ".join(cmd), res.stderr[-2000:]))
    with open(path) as fh:
        data = json.load(fh)
    if data["status"] != "ok":
        sys.exit("%s: %s" % (" ".join(cmd[:4]), data["message"]))
    return data["throughput"]["total"]["value"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer", required=True, help="the peer script (pytorch/examples imagenet/main.py)")
    p.add_argument("--data", required=True, help="an ImageNet-layout folder (train/, val/)")
    p.add_argument("--arch", default="resnet18")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--number", type=int, default=10)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--rounds", type=int, default=8)
    a = p.parse_args()
    py = sys.executable
    timing = ["--warmup", str(a.warmup), "--number", str(a.number), "--repeat", str(a.repeat)]
    peer_args = [os.path.abspath(a.data), "-a", a.arch, "-b", str(a.batch_size), "-j", str(a.workers),
                 "--epochs", "1", "-p", "1000000"]
    sides = ("dnnbench", "peer")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            got = {}
            for side in (sides if r % 2 == 0 else sides[::-1]):
                out = os.path.join(tmp, "%s-%d" % (side, r))
                if side == "dnnbench":
                    cmd = [py, "-m", "dnnbench.workloads", a.arch, "--data", a.data, "--batch-size",
                           str(a.batch_size), "--workers", str(a.workers), "--results", out] + timing
                else:
                    cmd = [py, "-m", "dnnbench.workloads.instrument", "--results", out, "--unit", "images"] + \
                        timing + [os.path.abspath(a.peer)] + peer_args
                got[side] = _rate(cmd, out, tmp)
            ratios.append(got["dnnbench"] / got["peer"])
            print("round %d: dnnbench %.2f, peer %.2f images/s, ratio %.3f" % (
                r + 1, got["dnnbench"], got["peer"], ratios[-1]), flush=True)
    print("dnnbench / %s: median %.3f (range %.3f-%.3f) over %d rounds; %s, batch %d, %d workers, "
          "%d warmup + %d x %d timed iterations" % (
              os.path.basename(a.peer), statistics.median(ratios), min(ratios), max(ratios), a.rounds,
              a.arch, a.batch_size, a.workers, a.warmup, a.repeat, a.number))


if __name__ == "__main__":
    main()
