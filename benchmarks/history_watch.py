"""`dnnbench watch` end to end on real images: N releases of the test image (as the bisect
tests build them: each one's optimizer step sleeps a fixed time, the releases from the slow one
on sleep longer), watched with the real Docker engine into a throwaway history. Prints what
watch named, its exit status, how many runs it made (survey and rounds) and the wall time; then
the same command again (everything read back or found in the history: no run).

Usage: DNNBENCH_TEST_IMAGE_TAG=dnnbench-wt-NAME:test python benchmarks/history_watch.py
           [--releases 6] [--slow-from 4] [--every 1] [--rounds 3]
Needs the test image (tests/conftest.py's built_image builds it; this script only reads it).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.releases import series  # noqa: E402
from tests.test_campaigns_bisect import GOOD, SLOW, TINY, WORKLOAD  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--releases", type=int, default=6)
    p.add_argument("--slow-from", type=int, default=4, help="the first slower release, counted from 1")
    p.add_argument("--every", type=int, default=1)
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args()
    base = os.environ.get("DNNBENCH_TEST_IMAGE_TAG", "dnnbench-test:latest")
    work = Path(tempfile.mkdtemp(prefix="dnnbench-watch-bench-"))
    with series(base, work, "w", args.releases, args.slow_from, GOOD, SLOW) as made:
        env = dict(os.environ, DNNBENCH_DB=str(work / "history.db"))
        cmd = [sys.executable, "-m", "dnnbench", "watch", WORKLOAD, "--images", ",".join(made), "--results",
               str(work / "results"), "--run-id", "w", "--tolerance", "0.1", "--rounds", str(args.rounds),
               "--every", str(args.every), *TINY]
        for label in ("first watch", "again (resumed)"):
            t0 = time.monotonic()
            res = subprocess.run(cmd, capture_output=True, text=True, env=env)
            seconds = time.monotonic() - t0
            said = res.stderr.splitlines()
            runs = [line for line in said if line.startswith(("[survey]", "[round"))]
            fresh = [line for line in runs if "(read back)" not in line and "in the history" not in line]
            print(f"{label}: exit {res.returncode} in {seconds:.0f} s; {len(runs)} steps, {len(fresh)} run now")
            for line in res.stdout.splitlines():
                print(f"  {line}")
            for line in said[-1:]:
                print(f"  {line}")
        print(f"slower release planted: {made[args.slow_from - 1]} (after {made[args.slow_from - 2]})")
    shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main()
