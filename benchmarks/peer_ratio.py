"""dnnbench against a peer script, side by side: the same data, batch, workers and timed
iterations, the sides alternated in rotating order over several rounds; prints each round's
ratio (dnnbench / peer) with the median and range.

The peer is somebody else's training script given by path, run unmodified (nothing of it is
committed), one of:
  examples        pytorch/examples' imagenet/main.py (the TBD suite's script), timed by dnnbench's
                  script instrumentation (python -m dnnbench.workloads.instrument: windows of
                  optimizer steps, items from its DataLoader batches), as the built-in side is
  milabench       milabench's benchmarks/torchvision/main.py, the same instrumentation (put
                  benchmate, torchcompat and voir on PYTHONPATH)
  milabench-voir  the same script as milabench runs it, under voir with its voirfile; its own
                  per-batch rates (DATA_FD) give the figure: items / seconds of the timed batches
Both sides count the same iterations (--warmup untimed, then --number x --repeat timed).
--dnnbench-args passes options to the built-in side (e.g. "--malloc-defaults").

Usage: python benchmarks/peer_ratio.py --peer ~/examples/imagenet/main.py --data FAKE_IMAGENET
           [--kind examples] [--arch resnet18] [--batch-size 16] [--workers 2] [--rounds 8]
(make the data with `dnnbench data fake imagenet --to FAKE_IMAGENET --size 224`)
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import bench  # benchmarks/bench.py, beside this script


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


def _voir_rate(cmd, cwd, batch, skip, timed):
    """voir's per-batch rates arrive as JSON lines on DATA_FD (a file here: on stdout voir would
    encode them); the timed batches' items / seconds."""
    with tempfile.TemporaryFile("w+") as data:
        res = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, DATA_FD=str(data.fileno())), pass_fds=(data.fileno(),))
        data.seek(0)
        rates = [json.loads(line)["rate"] for line in data if line.startswith("{") and '"rate"' in line]
    if len(rates) < skip + timed:
        sys.exit("voir gave %d rates, %d wanted:\n%s" % (len(rates), skip + timed, res.stderr[-2000:]))
    return batch * timed / sum(batch / r for r in rates[skip:skip + timed])


def main():
    p = bench.options(__doc__, [("peer", "the peer script (pytorch/examples imagenet/main.py)"), bench.DATA],
                      arch="resnet18", batch_size=16, workers=2, warmup=5, number=10, repeat=2, rounds=8)
    p.add_argument("--kind", choices=("examples", "milabench", "milabench-voir"), default="examples")
    p.add_argument("--voir", default=shutil.which("voir") or "voir", help="voir's script (milabench-voir)")
    p.add_argument("--dnnbench-args", default="", help="options for the built-in side")
    a = p.parse_args()
    py = sys.executable
    timing = ["--warmup", str(a.warmup), "--number", str(a.number), "--repeat", str(a.repeat)]
    data, peer = os.path.abspath(a.data), os.path.abspath(a.peer)
    if a.kind == "examples":
        peer_args = [data, "-a", a.arch, "-b", str(a.batch_size), "-j", str(a.workers), "--epochs", "1",
                     "-p", "1000000"]
    else:
        peer_args = ["--data", data, "--model", a.arch, "--batch-size", str(a.batch_size), "--num-workers",
                     str(a.workers), "--epochs", "1", "--loader", "pytorch"]
    sides = ("dnnbench", "peer")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            got = {}
            for side in (sides if r % 2 == 0 else sides[::-1]):
                out = os.path.join(tmp, "%s-%d" % (side, r))
                if side == "dnnbench":
                    cmd = [py, "-m", "dnnbench.workloads", a.arch, "--data", data, "--batch-size",
                           str(a.batch_size), "--workers", str(a.workers), "--results", out] + timing + \
                        shlex.split(a.dnnbench_args)
                    got[side] = _rate(cmd, out, tmp)
                elif a.kind == "milabench-voir":   # in the script's folder, where its voirfile is
                    cmd = [py, a.voir, "--skip", "0", "--stop", str(a.warmup + a.number * a.repeat),
                           peer] + peer_args
                    got[side] = _voir_rate(cmd, os.path.dirname(peer), a.batch_size, a.warmup,
                                           a.number * a.repeat)
                else:
                    cmd = [py, "-m", "dnnbench.workloads.instrument", "--results", out, "--unit", "images"] + \
                        timing + [peer] + peer_args
                    got[side] = _rate(cmd, out, os.path.dirname(peer) if a.kind == "milabench" else tmp)
            ratios.append(got["dnnbench"] / got["peer"])
            print("round %d: dnnbench %.2f, peer %.2f images/s, ratio %.3f" % (
                r + 1, got["dnnbench"], got["peer"], ratios[-1]), flush=True)
    print("dnnbench%s / %s (%s): %s over %d rounds; %s, batch %d, %d workers, "
          "%d warmup + %d x %d timed iterations" % (
              " " + a.dnnbench_args if a.dnnbench_args else "", os.path.basename(a.peer), a.kind,
              bench.spread(ratios), a.rounds, a.arch, a.batch_size, a.workers, a.warmup, a.repeat, a.number))


if __name__ == "__main__":
    main()
