"""How fast the history store takes results in and answers a job's query, on SQLite and on
PostgreSQL (a throwaway cluster, as the tests start one).

1. import: N result files (real result JSON, 12 windows each) written to a folder, then what
   `dnnbench history import` does: find, read and validate each file, make its row, record
   them (results/s, end to end); and the store alone (rows/s into Store.add).
2. query: a store of P points (default 1,000,000) over J jobs plus P points of one more job
   (Store.add in batches, not timed; PostgreSQL then VACUUM ANALYZE, as autovacuum would), then a
   job's series (Store.series: one point per image, or per image and day, summed in SQL, as
   `history series` shows it) and its rows (Store.select) for one job of P/J points, one job in
   a one-week window, and the job holding P points (each timed as the median of 5, the
   big job's rows returned whole once); and `history --job` of the big job (its newest 100
   rows and how many it has).

Usage: python benchmarks/history_store.py [--results 10000] [--points 1000000] [--jobs 1000]
                                         [--no-postgres]
"""
import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dnnbench.history.facts import job_key, series_key  # noqa: E402
from dnnbench.history.store import Store  # noqa: E402

TEMPLATE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "results" / "verdict" / "loader-cpu-w0" / "result.json"
T0 = datetime(2026, 1, 1)


def write_results(folder: Path, n: int) -> None:
    base = json.loads(TEMPLATE.read_text())
    rng = random.Random(0)
    for i in range(n):
        d = dict(base, run_id=f"b{i}", job=f"imported-{i % 50}", started=(T0 + timedelta(minutes=i)).isoformat() + "Z")
        d["windows"] = [{"items": 640, "seconds": 0.64 * (1 + rng.gauss(0, 0.01))} for _ in range(12)]
        d["ranks"] = []
        out = folder / f"r{i}" / "result.json"
        out.parent.mkdir(parents=True)
        out.write_text(json.dumps(d))


def timed_import(db: str, folder: Path) -> tuple[float, float]:
    from dnnbench.history.facts import row
    from dnnbench.results.report import find_results
    from dnnbench.workloads import schema
    t0 = time.perf_counter()
    rows = [row(p, schema.read(str(p))) for p in find_results([folder])]
    t1 = time.perf_counter()
    store = Store(db)
    t2 = time.perf_counter()
    store.add(rows)
    t3 = time.perf_counter()
    store.close()
    return len(rows) / (t3 - t0 - (t2 - t1)), len(rows) / (t3 - t2)


def fill(db: str, points: int, jobs: int, big: str) -> None:
    """P points over `jobs` jobs, plus P points of the job `big`, through Store.add in batches of
    20,000 rows (the store's own insert and series sums, without reading result files; setup,
    not timed)."""
    store = Store(db)
    rng = random.Random(1)

    def rows(start: int, count: int, name_of):
        for i in range(start, start + count):
            job = name_of(i)
            v = 1000 * (1 + rng.gauss(0, 0.02))
            yield {"identity": hashlib.sha256(f"{job}-{i}".encode()).hexdigest(), "content_hash": "0" * 64,
                   "run_id": f"p{i}", "kind": "run", "job": job, "job_key": job_key(job), "workload": "resnet50",
                   "status": "ok", "image": f"img:{i % 40}", "digest": None, "base": None, "pytorch": "2.4.1",
                   "cuda": "12.4", "cudnn": "90100", "nccl": "2.21.5", "driver": "550.54", "host": f"node{i % 16}",
                   "gpu": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "started": T0 + timedelta(seconds=i * 30),
                   "throughput": v, "ci_low": v * 0.99, "ci_high": v * 1.01, "unit": "images/s", "path": f"/r/{i}",
                   "recorded": T0, "series_key": series_key("NVIDIA H100 80GB HBM3", f"img:{i % 40}")}
    for name_of, offset in ((lambda i: f"job-{i % jobs}", 0), (lambda i: big, points)):
        for start in range(offset, offset + points, 20_000):
            store.add(list(rows(start, min(20_000, offset + points - start), name_of)))
    if store.engine.dialect.name == "postgresql":
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE results")
    store.close()


def timed_query(db: str, reps: int, how: str, **filters) -> tuple[float, int]:
    store = Store(db)
    times, n = [], 0
    for _ in range(reps):
        t0 = time.perf_counter()
        if how == "select":
            n = len(store.select(**filters))
        elif how == "list":      # `history list --job J` as the command reads it: the newest 100, and the count
            n = len(store.select(**filters, limit=100, newest=True))
            store.count(**filters)
        else:
            n = sum(p["n"] for p in store.series(by=how, **filters))
        times.append(time.perf_counter() - t0)
    store.close()
    return statistics.median(times), n


def run(label: str, db: str, args, work: Path) -> None:
    total, alone = timed_import(db, work / "results")
    print(f"{label}: import {args.results} results: {total:,.0f} results/s end to end "
          f"(read + validate + record), store alone {alone:,.0f} rows/s")
    t0 = time.perf_counter()
    if args.nice_fill:     # the untimed fill yields to other work; the timed queries do not
        os.setpriority(os.PRIO_PROCESS, 0, 19)
    fill(db, args.points, args.jobs, "the-big-job")
    if args.nice_fill:
        os.setpriority(os.PRIO_PROCESS, 0, 0)    # root may raise it back
    print(f"{label}: filled {2 * args.points:,} points in {time.perf_counter() - t0:.0f} s")
    week = T0 + timedelta(seconds=args.points * 30 // 2)     # the middle of the points' span
    for what, reps, how, filters in (
            (f"series of one job of {args.jobs} ({args.points // args.jobs:,} points)", 5, "release", {"job": "job-7"}),
            (f"rows of one job of {args.jobs}", 5, "select", {"job": "job-7"}),
            ("rows of one job, a one-week window", 5, "select",
             {"job": "job-7", "since": week, "until": week + timedelta(days=7)}),
            (f"series by release of the job of {args.points:,} points", 5, "release", {"job": "the-big-job"}),
            (f"series by time (image and day) of the job of {args.points:,} points", 5, "time", {"job": "the-big-job"}),
            (f"series by release of the job of {args.points:,} points, a 4-week window", 5, "release",
             {"job": "the-big-job", "since": week + timedelta(seconds=args.points * 30),
              "until": week + timedelta(seconds=args.points * 30, days=28)}),
            (f"`history --job` of the job of {args.points:,} points (the newest 100 and the count)", 5, "list",
             {"job": "the-big-job"}),
            (f"rows of the job of {args.points:,} points, all returned", 1, "select", {"job": "the-big-job"})):
        seconds, n = timed_query(db, reps, how, **filters)
        print(f"{label}: query {what}: {seconds:.3f} s ({n:,} results)", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=int, default=10_000)
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--no-postgres", action="store_true")
    p.add_argument("--no-sqlite", action="store_true")
    p.add_argument("--nice-fill", action="store_true", help="fill the store at nice 19 (root: queries at 0)")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dnnbench-history-bench-"))
    write_results(work / "results", args.results)
    if not args.no_sqlite:
        run("sqlite", str(work / "history.db"), args, work)
    if not args.no_postgres:
        from tests.postgres import Cluster
        cluster = Cluster()
        try:
            run("postgresql", cluster.url(), args, work)
        finally:
            cluster.close()
    import shutil
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
