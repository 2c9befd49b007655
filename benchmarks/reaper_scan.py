"""What following a run's processes costs: one `Descendants.scan()` (every /proc/PID/stat read
once, the run's tree walked), which a host or Apptainer run does once a second while it runs.
Starts N sleeping children below a root so the tree has something to walk.

Usage: python benchmarks/reaper_scan.py [--children N] [--scans N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

from dnnbench.containers.engines.reaper import Descendants, own_orphans


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--children", type=int, default=20)
    p.add_argument("--scans", type=int, default=200)
    args = p.parse_args()
    code = ("import subprocess, sys, time; ps = [subprocess.Popen([sys.executable, '-c', 'import time; "
            "time.sleep(600)']) for _ in range(%d)]; time.sleep(600)" % args.children)
    root = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, preexec_fn=own_orphans)
    try:
        time.sleep(2.0)
        tree = Descendants(root.pid)
        times = []
        for _ in range(args.scans):
            t0 = time.perf_counter()
            tree.scan()
            times.append(time.perf_counter() - t0)
        procs = sum(1 for n in os.listdir("/proc") if n.isdigit())
        print(f"processes on the machine: {procs}; below the run: {len(tree.seen)}")
        print(f"one scan: median {statistics.median(times) * 1e3:.2f} ms, max {max(times) * 1e3:.2f} ms "
              f"({args.scans} scans); once a second that is {statistics.median(times) * 100:.2f} % of a core")
        t0 = time.perf_counter()
        killed = tree.end()
        print(f"end(): {len(killed)} processes killed and reaped in {(time.perf_counter() - t0) * 1e3:.0f} ms")
    finally:
        root.kill()
        root.wait()


if __name__ == "__main__":
    main()
