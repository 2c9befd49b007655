"""How fast `dnnbench data prepare imagenet` extracts, against the hand-run shell steps it
replaces (tar -xf the train tar, then each class tar; tar -xf val), on archives in the ILSVRC2012
layout made of ImageNet-sized JPEGs (~110 KB, 500x375 noise).

Usage: python benchmarks/prepare_throughput.py [--classes 40] [--per-class 60] [--val 800] [--workers 1,2,4]
"""
import argparse
import io
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path


def jpeg(rng):
    from PIL import Image
    img = Image.frombytes("RGB", (500, 375), bytes(rng.getrandbits(8) for _ in range(500 * 375 * 3)))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=75)
    return buf.getvalue()


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def make(root, classes, per_class, val):
    rng = random.Random(0)
    pool = [jpeg(rng) for _ in range(16)]        # reuse a few images: the bytes, not the pixels, matter
    wnids = ["n%08d" % (1440764 + i) for i in range(classes)]
    with tarfile.open(root / "ILSVRC2012_img_train.tar", "w") as outer:
        for w in wnids:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as inner:
                for i in range(per_class):
                    add(inner, "%s_%d.JPEG" % (w, i), pool[i % len(pool)])
            add(outer, w + ".tar", buf.getvalue())
    with tarfile.open(root / "ILSVRC2012_img_val.tar", "w") as tar:
        for i in range(val):
            add(tar, "ILSVRC2012_val_%08d.JPEG" % (i + 1), pool[i % len(pool)])
    (root / "val_map.txt").write_text("".join("ILSVRC2012_val_%08d.JPEG %s\n" % (i + 1, wnids[i % classes])
                                              for i in range(val)))
    return sum(p.stat().st_size for p in root.glob("*.tar"))


def shell_baseline(src, dest):
    train = dest / "train"
    train.mkdir(parents=True)
    subprocess.run(["tar", "-xf", str(src / "ILSVRC2012_img_train.tar"), "-C", str(train)], check=True)
    for t in train.glob("*.tar"):
        d = train / t.stem
        d.mkdir()
        subprocess.run(["tar", "-xf", str(t), "-C", str(d)], check=True)
        t.unlink()
    (dest / "val").mkdir()
    subprocess.run(["tar", "-xf", str(src / "ILSVRC2012_img_val.tar"), "-C", str(dest / "val")], check=True)


def timed(fn):
    subprocess.run(["sync"])
    t0 = time.perf_counter()
    fn()
    subprocess.run(["sync"])          # count the writes reaching the disk, not the page cache
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--classes", type=int, default=40)
    p.add_argument("--per-class", type=int, default=60)
    p.add_argument("--val", type=int, default=800)
    p.add_argument("--workers", default="1,2,4")
    args = p.parse_args()
    exe = shutil.which("dnnbench") or sys.exit("dnnbench is not on PATH (pip install -e .)")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        src = Path(tmp) / "tars"
        src.mkdir()
        size = make(src, args.classes, args.per_class, args.val)
        files = args.classes * args.per_class + args.val
        print("archives: %d classes x %d + %d val = %d JPEGs, %.0f MiB (cpu: %d cores)"
              % (args.classes, args.per_class, args.val, files, size / 2**20, os.cpu_count()))
        runs = [("shell: tar -xf, then each class tar (seed READMEs' steps, no val sorting)",
                 lambda d: shell_baseline(src, d))]
        for w in args.workers.split(","):
            runs.append(("dnnbench data prepare --workers %s (val sorted)" % w,
                         lambda d, w=w: subprocess.run([exe, "data", "prepare", "imagenet", "--from", str(src), "--to",
                                                        str(d), "--val-map", str(src / "val_map.txt"), "--workers", w],
                                                       check=True, stderr=subprocess.DEVNULL)))
        for label, fn in runs:
            dest = Path(tmp) / "out"
            seconds = timed(lambda: fn(dest))
            print("%-72s %6.2f s  %7.1f MiB/s  %7.0f files/s" % (label, seconds, size / 2**20 / seconds, files / seconds))
            shutil.rmtree(dest)


if __name__ == "__main__":
    main()
