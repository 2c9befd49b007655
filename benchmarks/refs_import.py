"""How fast `dnnbench refs import` reads the public files and records their references.

For each file: the read alone (the file layer, the source told by content, its reader; median
of --repeat), then its references into a fresh SQLite store (first import: all new), and again
(all already there); then the whole command line on every file at once (a subprocess, start-up
included), into a fresh store and again. With --scale N, also a Lambda v2 file N times the size
of the one given (its node rows repeated under other node addresses), to show rows/s at scale.

Usage: python benchmarks/refs_import.py FILE... [--repeat 5] [--scale 100]
  (the public files: `git show COMMIT:pytorch/pytorch-train-throughput-v2-fp16.csv` and the
  others of tests/fixtures/refs/README.md, from a clone of each repository)
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dnnbench.history.store import Store  # noqa: E402
from dnnbench.refs import sources, store  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def scaled_v2(path: Path, n: int, out: Path) -> Path:
    """Lambda's v2 file with each node row repeated n times under made-up node addresses."""
    lines = path.read_text().splitlines()
    rows = [lines[0]]
    for k in range(n):
        for line in lines[1:]:
            name, rest = line.split(",", 1)
            rows.append(f"{name.replace('_v2', f'_10-0-{k // 250}-{k % 250}_v2', 1)},{rest}")
    out.write_text("\n".join(rows) + "\n")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--scale", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = list(args.files)
        v2 = [f for f in files if "-v2-" in f.name]
        if args.scale and v2:
            files.append(scaled_v2(v2[0], args.scale, Path(tmp) / f"x{args.scale}-{v2[0].name}"))
        print(f"{'file':48} {'bytes':>9} {'rows':>6} {'refs':>6} {'read ms':>8} {'rows/s':>9} "
              f"{'new ms':>8} {'again ms':>8}")
        for k, f in enumerate(files):
            rows = max(len(f.read_bytes().splitlines()) - 1, 1)
            read_s, (_, parsed) = timed(lambda: sources.read(f), args.repeat)
            db = Store(str(Path(tmp) / f"one-{k}.db"))
            t = time.perf_counter()
            store.add(db, parsed.references)
            new_s = time.perf_counter() - t
            t = time.perf_counter()
            store.add(db, parsed.references)
            again_s = time.perf_counter() - t
            db.close()
            print(f"{f.name[-48:]:48} {f.stat().st_size:>9,} {rows:>6,} {len(parsed.references):>6,} "
                  f"{read_s * 1000:>8.1f} {rows / read_s:>9,.0f} {new_s * 1000:>8.1f} {again_s * 1000:>8.1f}")
        db_path = Path(tmp) / "cli.db"
        for what in ("new", "again"):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "dnnbench", "refs", "import", "--db", str(db_path), *map(str, args.files)],
                           check=True, capture_output=True)
            print(f"dnnbench refs import, {len(args.files)} public files, {what}: {time.perf_counter() - t:.2f} s "
                  "(start-up included)")


if __name__ == "__main__":
    main()
