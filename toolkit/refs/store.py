"""References in the history store's `reference_numbers` table: added once each (by identity;
a new value under the same identity updated in place), selected. Never in `results`, never in
a job's series."""
from __future__ import annotations

import math
from datetime import datetime, timezone

from dnnbench.refs import reference as ref


def add(store, rows: list[dict]) -> tuple[int, int, int]:
    """One file's references in one transaction: (new, already there, updated)."""
    from sqlalchemy import select, update

    from dnnbench.history import engine
    from dnnbench.history.tables import reference_numbers as t
    rows = list({r["identity"]: r for r in rows}.values())
    new = same = changed = 0
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    with store.failing(), engine.writer(store.engine) as conn:
        for start in range(0, len(rows), 500):
            batch = rows[start:start + 500]
            have = {r.identity: r._asdict() for r in conn.execute(select(t.c.identity, *(t.c[k] for k in ref.CONTENT))
                                                                  .where(t.c.identity.in_([r["identity"] for r in batch])))}
            fresh = [dict(r, imported=now) for r in batch if r["identity"] not in have]
            moved = [r for r in batch if r["identity"] in have and not _same(have[r["identity"]], r)]
            if fresh:
                conn.execute(t.insert(), fresh)
            for r in moved:
                conn.execute(update(t).where(t.c.identity == r["identity"]).values(**dict(r, imported=now)))
            new += len(fresh)
            changed += len(moved)
            same += len(batch) - len(fresh) - len(moved)
    return new, same, changed


def _same(old: dict, new: dict) -> bool:
    """The stored content is the new one: figures equal to 1e-9 (MLPerf's summary.json rounds
    to 10 digits what the summarizer's csv writes whole), the rest exactly; the file's name is
    where a figure was last read, not part of it."""
    for k in ref.CONTENT:
        a, b = old.get(k), new.get(k)
        if k == "file" or a == b:
            continue
        if isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-9):
            continue
        return False
    return True


def select(store, workload: str | None = None, gpu: str | None = None, source: str | None = None) -> list[dict]:
    """References, ordered by workload, GPU, count and source. `gpu` matches the GPU's model
    through the alias table (any spelling of it), or the name as stored when the table does not
    know it; `workload` dnnbench's workload or the source's own name."""
    from sqlalchemy import or_, select as query

    from dnnbench.history.tables import reference_numbers as t
    from dnnbench.refs import tables
    q = query(t)
    if workload is not None:
        q = q.where(or_(t.c.workload == workload, t.c.source_workload == workload))
    if source is not None:
        q = q.where(t.c.source == source)
    with store.failing(), store.engine.connect() as conn:
        found = conn.execute(q.order_by(t.c.workload, t.c.source_workload, t.c.gpu, t.c.gpu_count, t.c.source,
                                        t.c.system, t.c.id))
        keys = list(found.keys())
        rows = [dict(zip(keys, r)) for r in found]
    if gpu is not None:
        model = tables.gpu_model(gpu)
        rows = [r for r in rows if (tables.gpu_model(r["gpu"]) == model if model else ref.key(r["gpu"]) == ref.key(gpu))]
    return rows
