"""Time to accuracy: `dnnbench train` against the pytorch/examples ImageNet script's own
training loop, on the same data and settings, the sides alternated over several rounds (each
round one seed for both); prints each round's times and the median ratios with their ranges.

The peer is a user's checkout of pytorch/examples, `imagenet/main.py` (nothing of it is
committed). A copy of it is run with four edits, each one a setting `dnnbench train` has as an
option and main.py hard-codes: the image size (RandomResizedCrop/Resize/CenterCrop for --image-size
instead of 224/256/224), the model's classes (the dataset's, not 1000), the clock started before
its epoch loop, and a stop when an evaluation reaches the target (the time printed there, before
its checkpoint, as dnnbench counts it). Everything else is main.py's own: SGD momentum 0.9, weight
decay 1e-4, StepLR(30), RandomResizedCrop + flip, top-1 from its validate(), a checkpoint per epoch.

The batch size should divide the training images (take 2 of the digits' 1442 away: 1440 = 45 x
32): main.py keeps the last partial batch (2 images at batch 32) and `dnnbench train` drops it,
so otherwise the sides do not train on the same batches.

Usage: python benchmarks/tta_ratio.py --peer ~/examples/imagenet/main.py --data DIGITS
           [--image-size 32] [--batch-size 32] [--workers 0] [--target 90] [--rounds 5]
(DIGITS: the UCI digits as ImageNet folders: `dnnbench data digits --to DIGITS`)
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import bench  # benchmarks/bench.py, beside this script

EDITS = (   # (what main.py says, what the copy says)
    ("transforms.RandomResizedCrop(224)", "transforms.RandomResizedCrop({size})"),
    ("transforms.Resize(256)", "transforms.Resize({resize})"),
    ("transforms.CenterCrop(224)", "transforms.CenterCrop({size})"),
    ("model = models.__dict__[args.arch]()",
     "model = models.__dict__[args.arch](num_classes=len(os.listdir(os.path.join(args.data, 'train'))))"),
    ("    for epoch in range(args.start_epoch, args.epochs):",
     "    _clock0 = time.time()\n    for epoch in range(args.start_epoch, args.epochs):"),
    ("        best_acc1 = max(acc1, best_acc1)\n",
     "        best_acc1 = max(acc1, best_acc1)\n        if acc1 >= {target}:\n"
     "            print('TIME-TO-TARGET %.3f %d' % (time.time() - _clock0, epoch + 1), flush=True)\n"
     "            break\n"),
)


def edited_peer(peer, folder, size, target):
    with open(peer) as fh:
        text = fh.read()
    for old, new in EDITS:
        if text.count(old) != 1:
            sys.exit("%s: expected one %r (another version of main.py?)" % (peer, old))
        text = text.replace(old, new.format(size=size, resize=int(round(size * 256 / 224.0)), target=target))
    path = os.path.join(folder, "main_tta.py")
    with open(path, "w") as fh:
        fh.write(text)
    return path


def run_dnnbench(a, seed, results):
    cmd = [sys.executable, "-m", "dnnbench", "train", a.arch, "--runtime", "host", "--data", a.data,
           "--image-size", str(a.image_size), "--batch-size", str(a.batch_size), "--workers", str(a.workers),
           "--epochs", str(a.epochs), "--target-accuracy", str(a.target), "--seed", str(seed),
           "--results", results, "--run-id", "s%d" % seed, "--quiet"]
    wall = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - wall
    path = os.path.join(results, "s%d" % seed, "result.json")
    if res.returncode != 0 or not os.path.exists(path):
        sys.exit("dnnbench train failed:\n%s" % res.stderr[-2000:])
    with open(path) as fh:
        t = json.load(fh)["training"]
    if not t["reached"]:
        sys.exit("dnnbench: target not reached (best %s)" % t["best"])
    ckpt = [e.get("checkpoint_s") for e in t["epochs"] if e.get("checkpoint_s") is not None]
    epoch_s = t["time_to_target_s"] / t["reached_at_epoch"]
    return {"tta": t["time_to_target_s"], "epochs": t["reached_at_epoch"], "wall": wall,
            "per_epoch": epoch_s, "ckpt_frac": statistics.median(ckpt) / epoch_s if ckpt else None}


def run_peer(a, script, seed, cwd):
    cmd = [sys.executable, script, os.path.abspath(a.data), "-a", a.arch, "-b", str(a.batch_size),
           "-j", str(a.workers), "--epochs", str(a.epochs), "--lr", str(0.1 * a.batch_size / 256),
           "-p", "1000000", "--seed", str(seed)]
    wall = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - wall
    m = re.search(r"TIME-TO-TARGET ([0-9.]+) (\d+)", res.stdout)
    if not m:
        sys.exit("the peer did not reach the target:\n%s%s" % (res.stdout[-1500:], res.stderr[-1500:]))
    tta, epochs = float(m.group(1)), int(m.group(2))
    return {"tta": tta, "epochs": epochs, "wall": wall, "per_epoch": tta / epochs}


def main():
    p = bench.options(__doc__, [("peer", "pytorch/examples imagenet/main.py"), bench.DATA], arch="resnet18",
                      image_size=32, batch_size=32, workers=0, epochs=30, target=90.0, rounds=5)
    a = p.parse_args()
    train_dir = os.path.join(a.data, "train")
    images = sum(len(files) for _, _, files in os.walk(train_dir))
    if images % a.batch_size:
        print("warning: --batch-size %d leaves a partial last batch of %d of the %d training images, which "
              "main.py trains on and dnnbench drops" % (a.batch_size, images % a.batch_size, images))
    tta, per_epoch, ckpt = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        script = edited_peer(a.peer, tmp, a.image_size, a.target)
        for r in range(a.rounds):
            seed = r + 1
            got = {}
            for side in (("dnnbench", "peer") if r % 2 == 0 else ("peer", "dnnbench")):
                got[side] = (run_dnnbench(a, seed, os.path.join(tmp, "dnnbench")) if side == "dnnbench"
                             else run_peer(a, script, seed, tmp))
            d, q = got["dnnbench"], got["peer"]
            tta.append(q["tta"] / d["tta"])
            per_epoch.append(q["per_epoch"] / d["per_epoch"])
            if d["ckpt_frac"] is not None:
                ckpt.append(d["ckpt_frac"])
            print("round %d (seed %d): dnnbench %.1f s to target at epoch %d (%.2f s/epoch, wall %.1f s); "
                  "peer %.1f s at epoch %d (%.2f s/epoch, wall %.1f s)" % (
                      r + 1, seed, d["tta"], d["epochs"], d["per_epoch"], d["wall"], q["tta"], q["epochs"],
                      q["per_epoch"], q["wall"]), flush=True)
    print("peer / dnnbench (above 1: dnnbench faster), %d rounds, %s, %d px, batch %d, %d workers, top-1 %g %%:"
          % (a.rounds, a.arch, a.image_size, a.batch_size, a.workers, a.target))
    print("  time to target: %s" % bench.spread(tta))
    print("  time per epoch on the clock (training + evaluation): %s" % bench.spread(per_epoch))
    if ckpt:
        print("  dnnbench's checkpoint per epoch: %s %% of the epoch" % bench.spread([100 * c for c in ckpt]))


if __name__ == "__main__":
    main()
