"""Change detection on simulated series: how often `dnnbench history changes` finds a lasting
step, and how often it cries wolf on a series without one, beside TorchBench's fixed rule (a
point more than 7 % from the one before).

Each series: 30 points, each with Gaussian noise of sd 1-3 % (drawn per series; each point's
95 % CI says so, as a run's windows would), and for step series a lasting step of -S %
(a regression) starting at a random point with at least 3 points on either side. Found: a
change flagged within 1 point of the true step. False alarm: any change flagged on a step-free
series.

The oracle column is the power a test would have that knew where the step is and the exact
noise (a two-sided z test at 5 %): no method that has to find the step can beat it.

Usage: python benchmarks/history_detection.py [--series 200] [--seed 1] [--ci-noise]
"""
import argparse
import time

import numpy as np

from dnnbench.history.changes import MIN_SIZE, detect, torchbench_rule

N = 30
STEPS = (1, 2, 3, 5, 7, 10)


def series(rng, step_pct, noise):
    sd = rng.uniform(*noise)
    values = 1000 * (1 + rng.normal(0, sd, N))
    at = int(rng.integers(MIN_SIZE, N - MIN_SIZE + 1))
    if step_pct:
        values[at:] *= 1 - step_pct / 100
    return list(values), [1.96 * sd * 100] * N, at


def found(flags, at):
    return any(abs(k - at) <= 1 for k in flags)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--series", type=int, default=200, help="series per step size")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ci-noise", action="store_true",
                   help="one table, each point's 95 %% CI half-width 1-3 %% (sd 0.51-1.53 %%)")
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    noises = [(0.01, 0.03), (0.01, 0.01), (0.02, 0.02), (0.03, 0.03)]
    if args.ci_noise:   # "noise of 1-3 %" read as each point's 95 % CI half-width: sd 0.51-1.53 %
        noises = [(0.01 / 1.96, 0.03 / 1.96)]
    for noise in noises:
        table(rng, args.series, noise)
    print(f"({time.perf_counter() - t0:.1f} s)")


def oracle(step_pct, noise):
    from scipy.stats import norm
    rng = np.random.default_rng(0)
    sd = rng.uniform(*noise, 100_000)
    at = rng.integers(MIN_SIZE, N - MIN_SIZE + 1, 100_000)
    z = step_pct / 100 / (sd * np.sqrt(1 / at + 1 / (N - at)))
    return float(norm.cdf(z - 1.96).mean() * 100)


def table(rng, count, noise):
    band = f"{noise[0] * 100:.2g}" + ("" if noise[0] == noise[1] else f"-{noise[1] * 100:.3g}")
    print(f"\n{count} series of {N} points per row, noise sd {band} %")
    print(f"{'step':>6}  {'ours (+-1 point)':>16}  {'ours (anywhere)':>15}  {'TorchBench 7 %':>14}  {'oracle':>7}")
    for step in (0, *STEPS):
        ours = anywhere = tb = 0
        for i in range(count):
            values, ci, at = series(rng, step, noise)
            flags = [k for k, *_ in detect(values, ci, seed=i)]
            tbf = torchbench_rule(values)
            anywhere += bool(flags)
            if step:
                ours += found(flags, at)
                tb += found(tbf, at)
            else:
                tb += bool(tbf)
        if not step:
            print(f"{'none':>6}  {'-':>16}  {anywhere / count * 100:>13.1f} %  {tb / count * 100:>12.1f} %  "
                  f"{'-':>7}   (false alarms)")
        else:
            print(f"{step:>4} %  {ours / count * 100:>14.1f} %  {anywhere / count * 100:>13.1f} %  "
                  f"{tb / count * 100:>12.1f} %  {oracle(step, noise):>5.1f} %")


if __name__ == "__main__":
    main()
