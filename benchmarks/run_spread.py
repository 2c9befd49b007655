"""The largest run-to-run spread in the recorded window series (benchmarks/recorded/*.json): each
series cut into runs of the harness's default --repeat windows, each run's figure (sum of items
over sum of seconds), and the largest figure over the smallest. rounds.RUN_SPREAD is this,
rounded up: one run's own interval widened that many times each way holds where another run of
the same job could land, so one run against a fixed target decides only beyond it.

Usage: python benchmarks/run_spread.py [--repeat 10] [FILE ...]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dnnbench.results import rounds  # noqa: E402
from dnnbench.workloads import options  # noqa: E402


def spread(windows: list[dict], repeat: int) -> tuple[int, float]:
    """(runs, largest / smallest run figure) of windows cut into runs of `repeat`."""
    figures = [sum(w["items"] for w in part) / sum(w["seconds"] for w in part)
               for part in (windows[i:i + repeat] for i in range(0, len(windows) - repeat + 1, repeat))]
    return len(figures), max(figures) / min(figures)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=options.BY_NAME["repeat"].default)
    p.add_argument("files", nargs="*", type=Path, default=sorted((ROOT / "benchmarks" / "recorded").glob("*.json")))
    args = p.parse_args()
    largest = 0.0
    for path in args.files:
        runs, factor = spread(json.loads(path.read_text())["windows"], args.repeat)
        largest = max(largest, factor)
        print(f"{path.name}: {runs} runs of {args.repeat} windows, largest/smallest figure {factor:.2f}x")
    print(f"largest run-to-run spread {largest:.2f}x; rounds.RUN_SPREAD {rounds.RUN_SPREAD:g}x")


if __name__ == "__main__":
    main()
