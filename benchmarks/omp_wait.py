"""A CPU training step with OpenMP's default wait and with OMP_WAIT_POLICY=PASSIVE, on a quiet
machine and beside one CPU hog per core: why the tests set PASSIVE (tests/conftest.py).

Each figure is one child process timing 15 steps of resnet18 (32 px, batch 32, SGD) after 3
warm-up steps; the two settings alternate, several rounds; median and range are printed.

Usage: .venv/bin/python benchmarks/omp_wait.py [--rounds 3]
"""
import argparse
import os
import statistics
import subprocess
import sys

STEP = r'''
import time, torch, torchvision
m = torchvision.models.resnet18(num_classes=10); opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(32, 3, 32, 32); y = torch.randint(0, 10, (32,))
def step():
    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()
for _ in range(3):
    step()
t = time.perf_counter()
for _ in range(15):
    step()
print((time.perf_counter() - t) / 15 * 1000)
'''
SETTINGS = {"default": {}, "PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"}}


def ms_per_step(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    out = subprocess.run([sys.executable, "-c", STEP], env={**env, **extra}, capture_output=True, text=True,
                         check=True, timeout=1200).stdout
    return float(out.split()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    print(f"resnet18 32 px batch 32, ms per training step; {os.cpu_count()} cores, {a.rounds} rounds")
    for busy in (False, True):
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)] \
            if busy else []
        try:
            figures = {name: [] for name in SETTINGS}
            for _ in range(a.rounds):
                for name, extra in SETTINGS.items():     # the sides alternate
                    figures[name].append(ms_per_step(extra))
        finally:
            for h in hogs:
                h.kill()
        where = f"beside {len(hogs)} CPU hogs" if busy else "quiet"
        for name, values in figures.items():
            print(f"{where:>20}  {name:<8} median {statistics.median(values):7.1f}  "
                  f"range {min(values):.1f}-{max(values):.1f}")


if __name__ == "__main__":
    main()
