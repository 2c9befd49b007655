"""Scaling efficiency of a multi-node `dnnbench slurm` job on the test cluster of namespace
nodes (scripts/setup-slurm.sh --nodes N): each round one job with --scaling (a one-process
reference step, then N nodes x 1 process, gloo over the veth links); prints each round's
efficiency, both throughputs, and the median and range over the rounds.

Usage: python benchmarks/slurm_scaling.py [--nodes 2] [--rounds 3] [--batch-size 8]
(as root, with the cluster up; the results go to a temporary folder).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import bench  # benchmarks/bench.py, beside this script


def round_once(results: Path, i: int, a) -> dict:
    run_id = f"scale-{i}"
    subprocess.run([sys.executable, "-m", "dnnbench", "slurm", a.workload, "--runtime", "host", "--nodes",
                    str(a.nodes), "--scaling", "--results", str(results), "--run-id", run_id, "--submit", "--wait",
                    "--batch-size", str(a.batch_size), "--warmup", "2", "--number", str(a.number), "--repeat",
                    str(a.repeat)], check=True, capture_output=True, text=True)
    data = json.loads((results / run_id / "result.json").read_text())
    ref = json.loads((results / run_id / "reference" / "result.json").read_text())
    return {"efficiency": data["scaling"]["efficiency"], "total": data["throughput"]["total"]["value"],
            "one": ref["throughput"]["total"]["value"], "hosts": sorted({r["host"] for r in data["ranks"]})}


def main() -> None:
    p = bench.options(__doc__.splitlines()[0], workload="resnet18", nodes=2, rounds=3, batch_size=8, number=5,
                      repeat=5)
    a = p.parse_args()
    effs = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.rounds):
            r = round_once(Path(tmp), i, a)
            effs.append(r["efficiency"])
            print(f"round {i + 1}: efficiency {r['efficiency']:.3f}  {a.nodes} nodes {r['total']:.2f}/s  "
                  f"one process {r['one']:.2f}/s  hosts {','.join(r['hosts'])}", flush=True)
    print(f"{a.workload} batch {a.batch_size}, {a.nodes} nodes x 1 process: scaling efficiency "
          f"{bench.spread(effs)}, {a.rounds} rounds")


if __name__ == "__main__":
    main()
