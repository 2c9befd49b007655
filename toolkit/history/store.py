"""The store: open it (made and migrated on first use), add rows once, select them. Every
database problem comes out as a DnnbenchError with one line naming the store and why."""
from __future__ import annotations

import functools
import re
from contextlib import contextmanager
from datetime import datetime

from dnnbench.errors import DnnbenchError
from dnnbench.history import engine, location

BATCH = 500


def why(exc: BaseException) -> str:
    """A database error in one line, without SQLAlchemy's SQL echo and background link."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).split("\n[SQL:")[0].split("\n(Background")[0]
    text = re.sub(r"\s+", " ", text).strip()
    return text[:300] or type(orig).__name__


def shown(named: str) -> str:
    """The store's name for a message: a URL's password never printed."""
    if not location.is_url(named):
        return named
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", named)


class Store:
    def __init__(self, db: str | None = None, create: bool = True):
        self.name = shown(location.where(db))
        url = location.url(db, create)
        with self.failing():
            self.engine = engine.make(url)
            from dnnbench.history import schema
            schema.prepare(self.engine)

    @contextmanager
    def failing(self):
        """Any database or file problem inside as one DnnbenchError naming the store."""
        try:
            yield
        except DnnbenchError as exc:
            raise DnnbenchError(f"history store {self.name}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - drivers raise their own classes; each is one line
            from sqlalchemy.exc import SQLAlchemyError
            if isinstance(exc, (SQLAlchemyError, OSError, ValueError)) or type(exc).__module__.startswith(
                    ("psycopg", "sqlite3")):
                raise DnnbenchError(f"history store {self.name}: {why(exc)}") from None
            raise

    def close(self) -> None:
        self.engine.dispose()

    def add(self, rows: list[dict]) -> tuple[int, int, int]:
        """Record rows once each: (new, already there, updated). A result already there under
        the same identity with other content (resumed training rewrote it) is updated in place."""
        from sqlalchemy import select, update

        from dnnbench.history.tables import results
        new = same = changed = 0
        with self.failing():
            for start in range(0, len(rows), BATCH):
                batch = list({r["identity"]: r for r in rows[start:start + BATCH]}.values())
                same += len(rows[start:start + BATCH]) - len(batch)
                with engine.writer(self.engine) as conn:
                    have = dict(conn.execute(select(results.c.identity, results.c.content_hash).where(
                        results.c.identity.in_([r["identity"] for r in batch]))).all())
                    fresh = [r for r in batch if r["identity"] not in have]
                    moved = [r for r in batch if r["identity"] in have and have[r["identity"]] != r["content_hash"]]
                    if fresh:
                        conn.execute(_insert_once(conn), fresh)
                    for r in moved:
                        conn.execute(update(results).where(results.c.identity == r["identity"]).values(**r))
                new += len(fresh)
                changed += len(moved)
                same += len(batch) - len(fresh) - len(moved)
        return new, same, changed

    def select(self, *, job: str | None = None, workload: str | None = None, image: str | None = None,
               base: str | None = None, pytorch: str | None = None, cuda: str | None = None,
               host: str | None = None, gpu: str | None = None, since: datetime | None = None,
               until: datetime | None = None, status: str | None = None, limit: int | None = None,
               columns: tuple[str, ...] | None = None) -> list[dict]:
        """Rows matching every filter given, oldest first (only `columns` when given). Names
        match exactly; versions match a prefix (`--torch 2.4` finds 2.4.1+cu121)."""
        from sqlalchemy import select

        from dnnbench.history.facts import job_key
        from dnnbench.history.tables import results as t
        q = select(*(t.c[c] for c in columns)) if columns else select(t)
        if job is not None:
            q = q.where(t.c.job_key == job_key(job), t.c.job == job)
        for column, value in ((t.c.workload, workload), (t.c.image, image), (t.c.base, base),
                              (t.c.host, host), (t.c.gpu, gpu), (t.c.status, status)):
            if value is not None:
                q = q.where(column == value)
        for column, value in ((t.c.pytorch, pytorch), (t.c.cuda, cuda)):
            if value is not None:   # a prefix at a version boundary: 2.4 finds 2.4.1, not 2.40
                q = q.where((column == value) | column.startswith(value + ".", autoescape=True)
                            | column.startswith(value + "+", autoescape=True))
        if since is not None:
            q = q.where(t.c.started >= since)
        if until is not None:
            q = q.where(t.c.started < until)
        q = q.order_by(t.c.started, t.c.id)
        if limit is not None:
            q = q.limit(limit)
        with self.failing(), self.engine.connect() as conn:
            found = conn.execute(q)
            keys = list(found.keys())
            return [dict(zip(keys, r)) for r in found]   # plain tuples: no Row object per result

    def series(self, job: str, *, by: str = "release", gpu: str | None = None,
               since: datetime | None = None, until: datetime | None = None) -> list[dict]:
        """A job's ok results as series points, in release or time order: one point per GPU
        model and image (by release), or per GPU model, image and day (by time). Each point:
        n results, their mean throughput, sd, and a 95 % CI of the mean (one result: its own
        CI). Summed in SQL from one covering index (ix_results_series): a million results of
        a job are never read as rows, and other jobs' results are never touched."""
        from sqlalchemy import func, select

        from dnnbench.history.facts import job_key
        from dnnbench.history.tables import results as t
        v = t.c.throughput
        q = select(t.c.series_key, func.count(v), func.sum(v), func.sum(v * v), func.min(t.c.started),
                   func.max(t.c.started), func.min(t.c.ci_low), func.max(t.c.ci_high), func.min(t.c.id)).where(
            t.c.job_key == job_key(job), t.c.status == "ok", v.isnot(None))
        if since is not None:
            q = q.where(t.c.started >= since)
        if until is not None:
            q = q.where(t.c.started < until)
        q = q.group_by(t.c.series_key, *((func.date(t.c.started),) if by == "time" else ()))
        with self.failing(), self.engine.connect() as conn:
            groups = conn.execute(q).all()
            first: dict[int, dict] = {}
            facts = [t.c[c] for c in ("id", "job", "image", "base", "gpu", "pytorch", "cuda", "cudnn", "nccl",
                                      "driver", "unit", "workload", "digest")]
            ids = [g[8] for g in groups]
            for start in range(0, len(ids), BATCH):   # each point's facts: its first result's row
                found = conn.execute(select(*facts).where(t.c.id.in_(ids[start:start + BATCH])))
                keys = list(found.keys())
                first.update((r[0], dict(zip(keys, r))) for r in found)
        points = []
        for _key, n, total, squares, started, last, ci_low, ci_high, rid in groups:
            row = first.get(rid)
            if row is None or row["job"] != job or (gpu is not None and row["gpu"] != gpu):
                continue
            points.append(dict(row, status="ok", **_point(n, total, squares, ci_low, ci_high),
                               started=started, last=last, host=None))
        if by == "time":
            return sorted(points, key=lambda p: (p["started"], p["id"]))
        from dnnbench.history.facts import release_key
        return sorted(points, key=release_key)

    def count(self) -> int:
        from sqlalchemy import func, select

        from dnnbench.history.tables import results
        with self.failing(), self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(results)).scalar() or 0)


@functools.lru_cache(maxsize=None)
def _t975(df: int) -> float:
    from scipy import stats
    return float(stats.t.ppf(0.975, df))


def _point(n: int, total: float, squares: float, ci_low, ci_high) -> dict:
    """A series point from its sums: mean, sd and the 95 % CI of the mean (Student's t)."""
    import math
    mean = total / n
    if n == 1:
        return {"n": 1, "throughput": mean, "sd": None, "ci_low": ci_low, "ci_high": ci_high}
    sd = math.sqrt(max(squares - total * total / n, 0.0) / (n - 1))
    half = _t975(n - 1) * sd / math.sqrt(n)
    return {"n": n, "throughput": mean, "sd": sd, "ci_low": mean - half, "ci_high": mean + half}


def _insert_once(conn):
    """INSERT that leaves a row another writer added meanwhile (two machines, one result)."""
    from dnnbench.history.tables import results
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(results).on_conflict_do_nothing(index_elements=["identity"])
