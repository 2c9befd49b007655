"""How long `dnnbench --help` (and `dnnbench bases`) take to start: the CLI must stay light.

Usage: python benchmarks/cli_startup.py [--runs N]
"""
import argparse
import shutil
import statistics
import subprocess
import sys
import time


def timed(cmd, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=20)
    args = p.parse_args()
    exe = shutil.which("dnnbench") or sys.exit("dnnbench is not on PATH (pip install -e .)")
    timed([exe, "--help"], 2)  # warm the page cache
    for cmd in ([exe, "--help"], [exe, "bases"], [sys.executable, "-c", "pass"]):
        t = timed(cmd, args.runs)
        print("%-40s median %6.3f s  min %6.3f s  max %6.3f s  (%d runs)"
              % (" ".join(c.split("/")[-1] for c in cmd), statistics.median(t), min(t), max(t), args.runs))


if __name__ == "__main__":
    main()
