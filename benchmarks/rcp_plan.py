"""`dnnbench mlperf plan`'s RCP figures against mlperf-logging's rcp_checker, end to end.

For every benchmark of every installed training ruleset in [--first, --last], at every RCP
batch size, --between sizes spread between the smallest and largest RCP (geometrically, whole
numbers) and one below and one above them all, the plan's figures (toolkit/results/rcp.py) are
checked against what `rcp_checker.check_directory` (rcp_pass='pruned_rcps', as the package
checker calls it) says of a folder of result_N.txt logs that converge at a chosen value:

- min: the checker's pass/fail boundary: runs at plan's min - --delta must fail and at
  min + --delta pass (delta 0.005: the two agree to 0.01 epoch, or sample; epochs are read
  rounded to 3 decimals, so a smaller delta proves nothing more).
- mean: a run set converging between min and mean passes and its score is scaled by
  norm = RCP mean / its mean, so norm x its mean is the checker's RCP mean; reported:
  |that - plan's mean|. (Where min == mean, the boundary is the mean.)
- range: above every pruned RCP the checker says "Missing RCP" at any value; the plan says
  "no RCP covers". Below them all it judges against the smallest (and so does the plan).

Logs are minimal but real MLLOG lines that read_submission_file reads (submission_benchmark,
global_batch_size, eval_accuracy with epoch_num or samples_count, run_stop success; Stable
Diffusion's FID and CLIP evaluations), one per olympic slot (3 runs; 9 for unet3d).

Usage: python benchmarks/rcp_plan.py [--first 4.0.0 --last 6.1.0 --between 20 --delta 0.005]
"""
import argparse
import json
import logging
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from dnnbench.results import rcp  # noqa: E402

SAMPLES_KEYED = {"llama2_70b_lora", "flux1", "llama31_405b", "llama31_8b", "gpt_oss_20b", "deepseekv3_671b",
                 "qwen35_397b_grpo", "dlrmv4", "stable_diffusion"}


def log_lines(benchmark, bs, value):
    def rec(key, v, **meta):
        return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": 0, "event_type": "POINT_IN_TIME", "key": key,
                                         "value": v, "metadata": meta})
    lines = [rec("submission_benchmark", benchmark), rec("global_batch_size", bs)]
    if benchmark == "stable_diffusion":
        lines += [rec("eval_accuracy", 80.0, samples_count=value, metric="FID"),
                  rec("eval_accuracy", 0.2, samples_count=value, metric="CLIP")]
    elif benchmark in SAMPLES_KEYED:
        lines.append(rec("eval_accuracy", 0.5, samples_count=value))
    else:
        lines.append(rec("eval_accuracy", 0.5, epoch_num=value))
    lines.append(rec("run_stop", None, status="success"))
    return "\n".join(lines) + "\n"


def checker_says(folder, ruleset, benchmark, bs, value):
    """check_directory on runs that all converge at `value`: (passed, message, norm)."""
    from mlperf_logging.rcp_checker import rcp_checker
    n = 9 if benchmark == "unet3d" else 3
    text = log_lines(benchmark, bs, value)
    for old in Path(folder).glob("result_*.txt"):    # check_directory reads every one
        old.unlink()
    for i in range(n):
        Path(folder, f"result_{i}.txt").write_text(text)
    return rcp_checker.check_directory(folder, "training", ruleset, False, False, rcp_pass=rcp.PASS)


def sizes_for(points, between):
    lo, hi = min(points), max(points)
    spread = sorted({int(round(lo * (hi / lo) ** (k / (between + 1)))) for k in range(1, between + 1)} - set(points))
    if len(spread) < between:    # few whole numbers between geometric steps: every other one, evenly
        pool = [b for b in range(lo + 1, hi) if b not in points]
        spread = sorted({pool[int(k * len(pool) / between)] for k in range(between)}) if len(pool) > between else pool
    return sorted(set(points)), spread, [max(1, lo // 2), hi * 2]


def measure(ruleset, benchmark, between, delta, folder):
    checker = rcp.load(benchmark, ruleset)
    full = sorted({r["BS"] for r in checker.rcp_data.values()})
    at, spread, outside = sizes_for(full, between)
    worst_mean = 0.0
    bad = []
    calls = [0]
    for bs in at + spread + outside:
        p = rcp.point(checker, bs)
        if p["basis"] == "none":
            calls[0] += 1
            ok, msg, _ = checker_says(folder, ruleset, benchmark, bs, 1e12)
            if ok or not msg.startswith("Missing RCP"):
                bad.append(f"{bs}: plan says no RCP, the checker says {msg!r}")
            continue
        # the checker's pass/fail boundary lies within plan's min -+ delta: min - delta fails, min + delta passes
        calls[0] += 2
        below = checker_says(folder, ruleset, benchmark, bs, p["min"] - delta)[0]
        above = checker_says(folder, ruleset, benchmark, bs, p["min"] + delta)[0]
        if below or not above:
            bad.append(f"{bs}: {'passes' if below else 'fails'} at plan's min {'-' if below else '+'} {delta}")
        # inside (min, mean) the score is scaled by norm = RCP mean / the runs' mean; a window too
        # narrow for that (min == mean where the RCP's runs all agree) leaves the boundary as the mean
        window = 1e-6 if benchmark in SAMPLES_KEYED else 0.002
        if p["mean"] - p["min"] > window:
            v = (p["min"] + p["mean"]) / 2
            if benchmark not in SAMPLES_KEYED:    # read_submission_file rounds epoch_num to 3 decimals
                v = round(v, 3)
            calls[0] += 1
            ok, msg, norm = checker_says(folder, ruleset, benchmark, bs, v)
            theirs = norm * v if ok else math.nan
        else:
            theirs = p["min"]
        worst_mean = max(worst_mean, abs(theirs - p["mean"])) if not math.isnan(theirs) else math.inf
    return {"ruleset": ruleset, "benchmark": benchmark, "unit": rcp.unit(benchmark), "rcps": len(at),
            "between": len(spread), "outside": len(outside), "mean": worst_mean, "bad": bad,
            "calls": calls[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--first", default="4.0.0")
    ap.add_argument("--last", default="6.1.0")
    ap.add_argument("--between", type=int, default=20)
    ap.add_argument("--delta", type=float, default=0.005, help="min is checked at -+ this (epochs or samples)")
    args = ap.parse_args()
    logging.disable(logging.CRITICAL)       # the checker logs every decision
    key = rcp._version_key
    chosen = [r for r in rcp.rulesets() if key(args.first) <= key(r) <= key(args.last)]
    print(f"mlperf-logging {rcp._installed()}, rulesets {', '.join(chosen)}; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs")
    print(f"{'ruleset':8} {'benchmark':17} {'unit':7} {'sizes':>12} {'min ok':>7} {'|d mean|':>9} {'calls':>6}")
    rows = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rcp-plan-") as folder:
        for r in chosen:
            for b in rcp.benchmarks(r):
                m = measure(r, b, args.between, args.delta, folder)
                rows.append(m)
                sizes = f"{m['rcps']}+{m['between']}+{m['outside']}"
                print(f"{r:8} {b:17} {m['unit']:7} {sizes:>12} {'no' if m['bad'] else 'yes':>7} {m['mean']:9.4f} {m['calls']:6}",
                      flush=True)
                for line in m["bad"]:
                    print(f"    MISMATCH {line}")
    worst_mean = max(m["mean"] for m in rows)
    n = sum(m["rcps"] + m["between"] + m["outside"] for m in rows)
    bad = sum(len(m["bad"]) for m in rows)
    print(f"{len(rows)} benchmark-rulesets, {n} batch sizes, {sum(m['calls'] for m in rows)} check_directory "
          f"calls in {time.perf_counter() - t0:.0f} s; the checker's boundary within plan's min -+ {args.delta} "
          f"everywhere: {'yes' if not bad else 'no'}; worst |d mean| {worst_mean:.2e} (goal <= 0.01); "
          f"mismatches {bad}")
    return 0 if worst_mean <= 0.01 and not bad else 1


if __name__ == "__main__":
    sys.exit(main())
