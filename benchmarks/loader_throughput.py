"""Decoded images/s per --loader backend and worker count: the `loader` workload (decode,
RandomResizedCrop, flip, normalize; no model) over a fake ImageNet of photo-sized JPEGs, each
configuration in its own process, as a user would run it. Prints a markdown table.

Usage: python benchmarks/loader_throughput.py [--device cpu|cuda] [--loaders cpu,gpu,dali]
       [--workers 0,1,2] [--images 512] [--size 500x375] [--batch-size 32] [--data DIR]
A backend this machine lacks (dali without DALI) is reported as such, not measured.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from dnnbench.workloads import data, loaders


def measure(dataset, device, loader, workers, batch_size, image_size, number, repeat, folder):
    cmd = [sys.executable, "-W", "ignore", "-m", "dnnbench.workloads", "loader", "--device", device,
           "--data", dataset, "--loader", loader, "--workers", str(workers), "--batch-size", str(batch_size),
           "--image-size", str(image_size), "--warmup", "2", "--number", str(number), "--repeat", str(repeat),
           "--results", folder, "--progress", "1000"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    path = os.path.join(folder, "result.json")
    if not os.path.exists(path):
        return None, res.stderr.strip().splitlines()[-1:] or ["no result"]
    with open(path) as fh:
        result = json.load(fh)
    if result["status"] != "ok":
        return None, [result.get("message") or result["status"]]
    return result, []


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--loaders", default="cpu,gpu,dali")
    p.add_argument("--workers", default="0,1,2")
    p.add_argument("--images", type=int, default=512)
    p.add_argument("--size", default="500x375", help="JPEG size, WxH (ImageNet's typical photo)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--number", type=int, default=4)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--data", default=None, help="an imagenet-layout folder (default: a fake one, made once)")
    args = p.parse_args()

    dataset = args.data
    if dataset is None:
        w, h = (int(v) for v in args.size.split("x"))
        dataset = os.path.join(tempfile.gettempdir(), "dnnbench-loader-bench-%d-%dx%d" % (args.images, w, h))
        data.fake_imagenet(dataset, images=args.images, classes=8, size=(w, h))
    dali_ok, dali_why = loaders.dali_support()
    print("device %s, %s, dataset %s, batch %d, output %dx%d" % (
        args.device, dali_why, dataset, args.batch_size, args.image_size, args.image_size))
    print("\n| loader | workers | images/s (mean) | sd | data wait | ran |")
    print("|---|---|---|---|---|---|")
    for loader in args.loaders.split(","):
        if loader == "dali" and not dali_ok:
            print("| dali | - | - | - | - | not measured: %s |" % dali_why)
            continue
        for workers in (int(v) for v in args.workers.split(",")):
            with tempfile.TemporaryDirectory() as folder:
                result, problems = measure(dataset, args.device, loader, workers, args.batch_size,
                                           args.image_size, args.number, args.repeat, folder)
            if result is None:
                print("| %s | %d | - | - | - | failed: %s |" % (loader, workers, "; ".join(problems)[:200]))
                continue
            tp = result["throughput"]["total"]
            print("| %s | %d | %.1f | %.1f | %.0f %% | %s |" % (
                loader, workers, tp["value"], tp["sd"], 100 * (result.get("data_wait_fraction") or 0),
                result["loader"]["used"]))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
