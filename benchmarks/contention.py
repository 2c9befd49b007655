"""Does the contention-corrected figure hold beside CPU hogs? The same job quiet and beside 1, 2
and 4 busy-loop processes, the hog counts alternated (0 1 2 4, 4 2 1 0, ...), several rounds;
per job and hog count, the median over rounds of the wall-clock figure and of the corrected one
(workloads/contention.py, stats.corrected), each over the quiet round's figure of its round.

Jobs:
  vae-1t   the harness's real CPU training (python -m dnnbench.workloads vae --device cpu) on one
           thread (OMP_NUM_THREADS=1): compute-bound
  vae      the same on PyTorch's own threads (one a core): the windows say wall time only
           (several busy threads), so only the wall figure is printed
  sleep    a step of 20 ms of compute and 20 ms of sleep, timed by the harness's Clock: the
           sleep is no wait for a CPU, so the correction holds only while the compute's share
           of the step is what waits
  membw    a step that copies a 64 MiB buffer (memory-bandwidth-bound): a hog on the other
           core slows it through the memory bus and caches, which no run queue shows

Hogs: `cpu` busy loops (the default), or `membw` loops that copy a 64 MiB buffer (they load the
memory bus as well as a CPU: what the correction cannot see).

Usage: python benchmarks/contention.py [--jobs vae-1t,sleep,membw,vae] [--hogs 0,1,2,4] [--rounds 3]
           [--windows 5] [--hog-kind cpu|membw]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


HOGS = {"cpu": "while True: pass", "membw": "b = bytearray(64 << 20)\nwhile True: bytes(b)"}


def child(job: str, windows: int) -> None:
    """A job timed by the harness's Clock, its windows printed as JSON (sleep, membw)."""
    from dnnbench.workloads import schema, windows as windows_mod
    clock = windows_mod.Clock()
    buf = bytearray(64 << 20)
    out = []
    for _ in range(windows + 1):        # the first window is warmup
        clock.open()
        for _ in range(10):
            if job == "sleep":
                end = time.process_time() + 0.02
                while time.process_time() < end:
                    pass
                time.sleep(0.02)
            else:
                bytes(buf)
        out.append(clock.close(10))
    print(json.dumps(schema.throughput(out[1:])))


def measure(job: str, windows: int) -> tuple[float, float | None, float | None]:
    """(wall figure, corrected figure, contention share) of one run of the job."""
    if job in ("vae", "vae-1t"):
        env = dict(os.environ, **({"OMP_NUM_THREADS": "1"} if job == "vae-1t" else {}))
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "dnnbench.workloads", "vae", "--device", "cpu", "--batch-size", "4",
                            "--number", "5", "--repeat", str(windows), "--warmup", "2", "--synthetic",
                            "--results", tmp], check=True, capture_output=True, env=env)
            tp = json.loads((Path(tmp) / "result.json").read_text())["throughput"]
    else:
        res = subprocess.run([sys.executable, __file__, "--child", job, "--windows", str(windows)], check=True,
                             capture_output=True, text=True)
        tp = json.loads(res.stdout.strip().splitlines()[-1])
    return tp["total"]["value"], tp["corrected"]["value"], tp["corrected"]["contention"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", default="vae-1t,sleep,membw,vae")
    p.add_argument("--hogs", default="0,1,2,4")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--windows", type=int, default=5)
    p.add_argument("--hog-kind", choices=sorted(HOGS), default="cpu")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child, args.windows)
    counts = [int(x) for x in args.hogs.split(",")]
    assert counts[0] == 0, "the first hog count is the quiet reference: 0"
    print(f"{os.cpu_count()} CPUs, load average at the start {os.getloadavg()[0]:.1f}")
    for job in args.jobs.split(","):
        wall: dict[int, list[float]] = {n: [] for n in counts}
        fixed: dict[int, list[float]] = {n: [] for n in counts}
        shares: dict[int, list[float]] = {n: [] for n in counts}
        for r in range(args.rounds):
            seen = {}
            for n in (counts if r % 2 == 0 else counts[::-1]):
                hogs = [subprocess.Popen([sys.executable, "-c", HOGS[args.hog_kind]]) for _ in range(n)]
                try:
                    time.sleep(0.5 if n else 0)
                    seen[n] = measure(job, args.windows)
                finally:
                    for h in hogs:
                        h.kill()
                        h.wait()
                print(f"  {job} round {r + 1} hogs {n}: wall {seen[n][0]:.3g}/s corrected "
                      f"{seen[n][1] or float('nan'):.3g}/s waiting {100 * (seen[n][2] or 0):.0f} % "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
            for n in counts:
                wall[n].append(seen[n][0] / seen[0][0])
                if seen[n][1] and seen[0][1]:
                    fixed[n].append(seen[n][1] / seen[0][1])
                    shares[n].append(seen[n][2])
        print(f"{job}: figure beside N {args.hog_kind} hogs / quiet figure, median of {args.rounds} rounds")
        for n in counts[1:]:
            corrected = f"{statistics.median(fixed[n]):.3f}" if fixed[n] else "-"
            waited = f"{100 * statistics.median(shares[n]):.0f} %" if shares[n] else "-"
            print(f"  {n} hogs: wall {statistics.median(wall[n]):.3f}  corrected {corrected}  waiting {waited}")


if __name__ == "__main__":
    main()
