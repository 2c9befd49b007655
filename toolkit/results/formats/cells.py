"""What every report format shows: the columns (those a report's rows fill), each cell as text,
and the lines under the table (the score, slow hosts)."""
from __future__ import annotations

from dnnbench.console import number, visible
from dnnbench.results import fleet, numbers

COLUMNS = [("system", "system"), ("job", "job"), ("n", "n"), ("failed", "failed"), ("throughput", "throughput"),
           ("ci95_pct", "+-95% CI %"), ("median", "window median"), ("sd_pct", "sd% (runs)"), ("unit", "unit"),
           ("verdict", "verdict")]
TRIMMED_COLUMNS = [("trimmed", "trimmed"), ("trimmed_n", "n trimmed")]
TRAINING_COLUMNS = [("reached", "reached target"), ("tta_s", "time to target s"), ("best", "best eval %")]
SCALING_COLUMNS = [("world_size", "ranks"), ("scaling", "scaling eff.")]
BASELINE_COLUMNS = [("target", "target"), ("bounds", "bounds"), ("diff_pct", "diff%"), ("target_verdict", "vs target")]
RATES = {"throughput", "median", "trimmed", "target"}   # printed with numbers.fmt, as everywhere
# what a row is (always kept, never split), the report's figure and its verdicts (kept after the
# row's name, wrapped at spaces: console.Column), then the rest by rank, highest kept longest
KEYS = {"job", "image"}
HEADLINE = {"throughput"}
DECIDES = {"verdict", "reached", "target_verdict"}
RANK = {"tta_s": 9, "best": 6, "ci95_pct": 7, "unit": 9, "system": 7, "target": 9, "diff_pct": 9,
        "scaling": 6, "n": 8, "trimmed": 5, "failed": 5, "world_size": 4, "median": 3, "sd_pct": 2,
        "trimmed_n": 2, "bounds": 2}
STATISTIC = ("Throughput: items over seconds summed over every timed window of a job's runs (times ranks, "
             "plus parallel copies: statistic sum_items/sum_seconds), recomputed from each result's raw "
             "windows; its 95 % CI comes from the spread of the windows (one run) or of the runs (several); "
             "the window median beside it; with 5 or more runs, trimmed = the same without the fastest and "
             "the slowest run.")


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "pass" if v else "FAIL"
    if isinstance(v, float):
        return number(v, digits)
    return str(v)


def columns(table: list[dict], with_baseline: bool) -> list[tuple[str, str]]:
    """The columns the rows fill: `image` only when the jobs ran on more than one (a job's image is
    part of its identity: runs of different images are different rows)."""
    images = COLUMNS[:2] + [("image", "image")] + COLUMNS[2:] if len({r.get("image") for r in table
                                                                        if r.get("n") or r.get("failed")}) > 1 else COLUMNS
    return images + (TRIMMED_COLUMNS if any(r.get("trimmed") is not None for r in table) else []) \
        + (TRAINING_COLUMNS if any(r.get("reached") for r in table) else []) \
        + (SCALING_COLUMNS if any(r.get("scaling") for r in table) else []) \
        + (BASELINE_COLUMNS if with_baseline else [])


def cell(row: dict, key: str) -> str:
    if key in RATES:
        return numbers.fmt(row.get(key))
    if key == "best" and row.get("best") is not None:     # which evaluation: top-1, HR@10
        return f"{fmt(row['best'])} {row.get('metric') or ''}".strip()
    if key == "image" and row.get("image") is None:
        return "host" if row.get("n") or row.get("failed") else "-"
    return fmt(row.get(key), 2 if key == "scaling" else 1)


def md_cell(text: str) -> str:
    """A markdown table cell: `|` and line breaks of names cannot split or end the row."""
    return visible(text, one_line=True).replace("\\", "\\\\").replace("|", "\\|")


def notes(table: list[dict], total_score: float | None) -> list[str]:
    """The lines under the table: the score against a baseline, each wide CI and why, each
    verdict against the baseline left inconclusive and why, each slow host of a fleet."""
    lines = [] if total_score is None else [
        f"score (weighted geometric mean of throughput/target): {total_score:.3f}"]
    for r in table:   # one line a job whose CI is wide: why, in words (results/load.why_wide)
        if r.get("ci_note"):
            ci = "no 95% CI" if r.get("ci95_pct") is None else f"+-95% CI {fmt(r['ci95_pct'])} %"
            lines.append(f"{r['job']}{' @ ' + r['image'] if r.get('image') else ''}: {ci}, wide: {r['ci_note']}")
    for r in table:   # runs whose host was busy (dnnbench.workloads.busy): their figure is the host's
        if r.get("busy"):
            lines.append(f"{r['job']}: {len(r['busy'])} of {r.get('n') or len(r['busy'])} run(s): {r['busy'][0]}")
    for r in table:   # a verdict against the baseline that is not pass or fail: what would decide it
        if r.get("target_why"):
            lines.append(f"{r['job']}: vs target {r.get('target_verdict')}: {r['target_why']}")
    return lines + [fleet.describe(r["job"], r["unit"] or "", slow) for r in table for slow in r.get("slow_hosts") or []] \
        + [f"{r['job']}: {line}" for r in table for line in r.get("undecided_hosts") or []]
