"""What the script instrumentation costs a script: the same small training loop (a one-layer
MLP, a DataLoader over tensors: the host dominates, so any hook cost shows) run plain and under
`python -m dnnbench.workloads.instrument --run-to-end`, alternated, several rounds. The script
times its own loop (perf_counter around all its steps) and prints it; the ratio of the two is
the overhead, with the per-step cost in microseconds.

Usage: python benchmarks/script_overhead.py [--steps 3000] [--rounds 8]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

SCRIPT = r'''
import sys, time
import torch
torch.set_num_threads(1)
steps = int(sys.argv[1])
ds = torch.utils.data.TensorDataset(torch.randn(steps * 32, 64), torch.randint(0, 10, (steps * 32,)))
dl = torch.utils.data.DataLoader(ds, batch_size=32)
model = torch.nn.Linear(64, 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
t0 = time.perf_counter()
for x, y in dl:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("LOOP %.6f" % (time.perf_counter() - t0))
'''


def _loop_seconds(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(next(line.split()[1] for line in out.splitlines() if line.startswith("LOOP ")))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=8)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "loop.py")
        with open(script, "w") as fh:
            fh.write(SCRIPT)
        plain = [sys.executable, script, str(a.steps)]
        timed = [sys.executable, "-m", "dnnbench.workloads.instrument", "--results", os.path.join(tmp, "r"),
                 "--warmup", "10", "--number", str(a.steps // 20), "--repeat", "10", "--run-to-end",
                 script, str(a.steps)]
        ratios = []
        for r in range(a.rounds):
            got = {}
            for side in (("plain", "timed") if r % 2 == 0 else ("timed", "plain")):
                got[side] = _loop_seconds(plain if side == "plain" else timed)
            ratios.append(got["timed"] / got["plain"])
            print("round %d: plain %.3f s, instrumented %.3f s, overhead %+.2f %% (%+.2f us/step)" % (
                r + 1, got["plain"], got["timed"], 100 * (ratios[-1] - 1),
                (got["timed"] - got["plain"]) / a.steps * 1e6), flush=True)
    print("instrumentation overhead: median %+.2f %% (range %+.2f to %+.2f) over %d rounds of %d steps" % (
        100 * (statistics.median(ratios) - 1), 100 * (min(ratios) - 1), 100 * (max(ratios) - 1), a.rounds, a.steps))


if __name__ == "__main__":
    main()
