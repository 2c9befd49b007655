"""Cold vs warm `dnnbench build`: after a change to workload code only, the dependency layers
(apt, pip) must come from the cache. Builds on a local base with one apt dependency, so the
cached layer is a real one.

Usage: python benchmarks/rebuild.py [--base local:IMAGE]   (default: the test base, scripts/test-base.tag)
       [--apt less]
"""
import argparse
import re
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from dnnbench.containers import build, catalog


def timed_build(base, tag, log_dir, no_cache):
    t0 = time.perf_counter()
    build.docker_build(base, tag=tag, no_cache=no_cache, log_dir=log_dir)
    seconds = time.perf_counter() - t0
    log = max(Path(log_dir).glob("*.log"), key=lambda p: p.stat().st_mtime).read_text()
    steps = len(re.findall(r"^Step \d+/\d+", log, re.M))
    cached = log.count("Using cache")
    return seconds, steps, cached


def main():
    p = argparse.ArgumentParser(description=__doc__)
    tag = (Path(__file__).resolve().parent.parent / "scripts" / "test-base.tag").read_text().strip()
    p.add_argument("--base", default="local:" + tag)
    p.add_argument("--apt", default="less", help="a package for the dependency layer (Debian's mirror over http)")
    a = p.parse_args()
    base = replace(catalog.resolve(a.base)[0], apt=(a.apt,))
    tag = "dnnbench-bench:rebuild"
    original = build._copy_code
    stamp = {"n": 0}

    def copy_with_change(dest):  # a workload code change: one new line in the container side
        original(dest)
        stamp["n"] += 1
        (dest / "dnnbench" / "workloads" / "_bench_stamp.py").write_text("STAMP = %r\n" % time.time())

    build._copy_code = copy_with_change
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp)
        cold = timed_build(base, tag, logs, no_cache=True)
        warm = timed_build(base, tag, logs, no_cache=False)
    for name, (sec, steps, cached) in (("cold (--no-cache)", cold), ("warm (code changed)", warm)):
        print("%-22s %6.1f s   %d steps, %d from cache" % (name, sec, steps, cached))
    print("warm/cold = %.3f" % (warm[0] / cold[0]))


if __name__ == "__main__":
    main()
