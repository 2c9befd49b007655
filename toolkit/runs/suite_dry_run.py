"""What `suite run --dry-run` shows: a header line naming the suite and where its results would
go, then one tab-separated line per run under a header row (run, workload, image, batch, amp,
gpus, parallel; scripts can still cut them) and per watch entry, then how long the runs took
before (each run's earlier result in the suite folder, else its job's newest in the history
store), and a warning when runs ask for GPUs this machine does not show."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Callable

from dnnbench.console import info, visible, warn

HEADER = ("run", "workload", "image", "batch", "amp", "gpus", "parallel")


def _seconds(path: Path) -> float | None:
    """started -> ended of a result file, or None (absent, unreadable, unfinished)."""
    from dnnbench.workloads import schema
    try:
        data = schema.read(str(path))
        took = (datetime.fromisoformat(str(data["ended"])) - datetime.fromisoformat(str(data["started"])))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return took.total_seconds() if took.total_seconds() >= 0 else None


def earlier(runs: list, suite_dir: Path) -> dict[str, float]:
    """Each run's seconds the last time it (or its job) ran: its own result in the suite folder,
    else the newest ok result of its job in the history store (a store that cannot be read: none)."""
    from dnnbench.workloads import schema
    took: dict[str, float] = {}
    for r in runs:
        seconds = _seconds(suite_dir / r.run_id / schema.RESULT_FILE)
        if seconds is not None:
            took[r.run_id] = seconds
    missing = {r.job for r in runs if r.run_id not in took}
    if missing:
        try:
            from dnnbench.history.store import Store
            store = Store(None, create=False)
        except Exception:  # noqa: BLE001 - no store (or an unreadable one): no estimate from it
            return took
        try:
            for job in missing:
                rows = store.select(job=job, status="ok", limit=1, newest=True, columns=("path",))
                seconds = _seconds(Path(rows[0]["path"])) if rows and rows[0].get("path") else None
                for r in runs:
                    if r.job == job and seconds is not None and r.run_id not in took:
                        took[r.run_id] = seconds
        except Exception:  # noqa: BLE001 - the estimate is a courtesy, never the dry run's failure
            pass
        finally:
            store.close()
    return took


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"


def _row(*cells) -> str:
    """One tab-separated line: each cell on one line, a tab in a name shown, never a column."""
    return "\t".join(visible(c, one_line=True).replace("\t", "\\t") for c in cells)


def show(name: str, path: Path, suite_dir: Path, runs: list, watches: list, plan_for: Callable,
         folder_of_watch: Callable) -> None:
    from dnnbench.runs import gpus as gpus_mod
    jobs = len({r.job for r in runs})
    print(visible(f"suite {name} ({path}): {len(runs)} run(s) of {jobs} job(s)"
                  + (f", {len(watches)} watch entr{'y' if len(watches) == 1 else 'ies'}" if watches else "")
                  + f"; nothing runs with --dry-run; results would go to {suite_dir}", one_line=True))
    wanting = []
    if runs:
        print("\t".join(HEADER))
    for r in runs:
        plan = plan_for(r)
        image = plan.image or f"none ({plan.runtime}: this machine's Python)"
        print(_row(r.run_id, r.workload, image, r.batch_size or "default", r.amp, r.spec.get("gpus") or "-",
                   r.spec.get("parallel") or "-"))
        if plan.gpus:
            wanting.append((r, plan))
    if watches:
        print("\t".join(("watch", "workload", "batch", "amp", "releases", "every")))
    for w in watches:
        print(_row(folder_of_watch(w), w.workload, w.spec.get("batch_size") or "default",
                   w.spec.get("amp") or "default", len(w.releases), w.every))
    took = earlier(runs, suite_dir)
    if runs:
        known = [took[r.run_id] for r in runs if r.run_id in took]
        if known:
            info(f"time: about {_duration(sum(known))} for {len(known)} of {len(runs)} run(s), from their earlier "
                 "results" + (f"; {len(runs) - len(known)} never ran here: no estimate for them"
                              if len(known) < len(runs) else ""))
        else:
            info(f"time: no estimate (none of the {len(runs)} run(s) ran here before)")
    if wanting:
        accelerators = {plan.accelerator for _, plan in wanting}
        seen = [g for a in accelerators for g in (gpus_mod.visible(a) or [])]
        if not seen:
            warn(f"{len(wanting)} run(s) ask for GPUs ({', '.join(sorted({str(r.spec.get('gpus')) for r, _ in wanting}))})"
                 " and this machine shows none: they would be refused when the suite runs (run it where the "
                 "GPUs are, or set `gpus: none` in the suite to try it on the CPU)")
