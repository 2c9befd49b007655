"""`dnnbench bisect` over local releases with CPU hogs beside it, several tries: is each answer
right or inconclusive, and how many runs did it take?

Builds RELEASES images FROM --image (tests/releases.py, as tests/test_campaigns_bisect.py does): each
release's optimizer step sleeps 0.2 s, from --slow-from on 0.27 s (about a third slower: the
release that changed a kernel); each has a label of its own. With --work spin the step computes
instead (those seconds of its thread's CPU time): beside hogs its wall time stretches, so the
verdicts need the contention-corrected figure. Starts --hogs busy-loop processes,
runs the bisect --tries times (a fresh run id each), ends the hogs and removes the images. Prints
per try: the answer, right / inconclusive / wrong, runs and seconds.

Usage: python benchmarks/bisect_under_load.py --image dnnbench-wt-NAME:test [--releases 8]
           [--slow-from 6] [--tries 10] [--hogs 2] [--rounds 8] [--work sleep|spin]
           [--results /var/tmp/bisect-load]
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.releases import series  # noqa: E402 - the tests' releases

TINY = ["--batch-size", "1", "--warmup", "1", "--number", "1", "--repeat", "3", "--max-windows", "4"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--image", required=True, help="the image the releases are built FROM (dnnbench build's)")
    p.add_argument("--releases", type=int, default=8)
    p.add_argument("--slow-from", type=int, default=6, help="the first slower release (1-based)")
    p.add_argument("--tries", type=int, default=10)
    p.add_argument("--hogs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--work", choices=("sleep", "spin"), default="sleep",
                   help="what the optimizer step adds: a sleep, or CPU time of its thread")
    p.add_argument("--results", type=Path, default=Path("/var/tmp/bisect-load"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, \
            series(args.image, Path(tmp), "r", args.releases, args.slow_from, [0.2], [0.27],
                   repo="dnnbench-bench-bisect", work=args.work) as refs:
        under_load(args, refs)


def under_load(args, refs: list[str]) -> None:
    tag = uuid.uuid4().hex[:6]
    truth = refs[args.slow_from - 1]
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    tally = {"right": 0, "inconclusive": 0, "wrong": 0}
    try:
        for k in range(args.tries):
            started = time.monotonic()
            res = subprocess.run([sys.executable, "-m", "dnnbench", "bisect", "vae", "--images", ",".join(refs),
                                  "--results", str(args.results), "--run-id", f"{tag}-t{k + 1}", "--tolerance", "0.1",
                                  "--rounds", str(args.rounds), *TINY], capture_output=True, text=True,
                                 env={"COLUMNS": "400", **__import__("os").environ})
            text = " ".join(res.stdout.split())
            args.results.mkdir(parents=True, exist_ok=True)    # each try's words kept beside its runs
            (args.results / f"{tag}-t{k + 1}.out").write_text(res.stdout + res.stderr)
            runs = re.search(r"in (\d+) runs", text)
            found = re.search(r"first slower: (\S+) \(", text)
            span = re.search(r"after (\S+), up to (\S+) \(", text)
            if found:
                outcome = "right" if found.group(1) == truth else "wrong"
                answer = f"first slower: {found.group(1).rsplit('-', 1)[-1]}"
            elif span:
                lo, hi = refs.index(span.group(1)), refs.index(span.group(2))
                outcome = "inconclusive" if lo < refs.index(truth) <= hi else "wrong"
                answer = f"between r{lo + 1} and r{hi + 1}"
            elif "nothing to bisect" in text:
                outcome, answer = "inconclusive", "ends not decidedly apart"
            else:
                outcome, answer = "wrong", f"exit {res.returncode}: {res.stderr.strip().splitlines()[-1:]}"
            tally[outcome] += 1
            print(f"try {k + 1}: {answer} -> {outcome}, {runs.group(1) if runs else '?'} runs, "
                  f"{time.monotonic() - started:.0f} s", flush=True)
    finally:
        for h in hogs:
            h.kill()
    print(f"{args.tries} tries beside {args.hogs} hogs: " + ", ".join(f"{v} {k}" for k, v in tally.items()))


if __name__ == "__main__":
    main()
