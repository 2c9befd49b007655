"""The store: open it through the gate (gate.py: recognised first; made and migrated only by a
writer), add results once each, select them. Every database problem comes out as a
DnnbenchError with one line naming the store (masked) and why (its secrets taken out)."""
from __future__ import annotations

import functools
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from dnnbench.errors import DnnbenchError
from dnnbench.history import engine, location

BATCH = 500
WRITE_LOCK = 4344      # PostgreSQL: the advisory lock writers take in turn (schema.py's migrating one is 4343)
SAME_FAILURE = 20      # a whole batch failing row by row for one reason: the store's problem, not the rows'


def why(exc: BaseException) -> str:
    """A database error in one line, without SQLAlchemy's SQL echo and background link."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).split("\n[SQL:")[0].split("\n(Background")[0]
    text = re.sub(r"\s+", " ", text).strip()
    return text[:300] or type(orig).__name__


def shown(named: str) -> str:
    """The store's name for a message: its password never printed (masked.printable)."""
    from dnnbench.history.masked import printable
    return printable(named)


@dataclass
class Recorded:
    """What `Store.record` did with each row: counts, and the rows left out with why."""
    new: int = 0
    same: int = 0
    changed: int = 0
    refused: list[tuple[dict, str]] = field(default_factory=list)     # a row the database would not take
    conflicts: list[list[dict]] = field(default_factory=list)         # rows claiming one identity, unlike


class Store:
    """A store opened for writing (`create`: made when missing, migrated, writes allowed) or for
    reading (read-only: a read never creates, migrates or changes it)."""

    def __init__(self, db: str | None = None, create: bool = True):
        self.location = location.locate(db)
        self.name = self.location.shown
        self.writing = create
        with self.failing():
            from dnnbench.history import gate
            self.engine = gate.open_store(self.location, write=create)

    @contextmanager
    def failing(self):
        """Any database or file problem inside as one DnnbenchError naming the store."""
        try:
            yield
        except location.NoStore:
            raise
        except DnnbenchError as exc:
            raise DnnbenchError(f"history store {self.name}: {self.location.scrub(str(exc))}") from None
        except Exception as exc:  # noqa: BLE001 - drivers raise their own classes; each is one line
            if _database_error(exc):
                raise DnnbenchError(f"history store {self.name}: {self.location.scrub(why(exc))}") from None
            raise

    def close(self) -> None:
        self.engine.dispose()

    def add(self, rows: list[dict]) -> tuple[int, int, int]:
        """Record rows once each: (new, already there, updated); a row left out (see `record`)
        is a DnnbenchError naming why, after the others are recorded."""
        done = self.record(rows)
        if done.conflicts:
            raise DnnbenchError(f"history store {self.name}: {conflict_line(done.conflicts[0])}")
        if done.refused:
            raise DnnbenchError(f"history store {self.name}: {done.refused[0][1]}")
        return done.new, done.same, done.changed

    def record(self, rows: list[dict]) -> Recorded:
        """Record rows once each, each its own unit: a result already there under the same
        identity and content is left (idempotent), under other content (a resumed training
        rewrote it) updated in place; two rows of this call claiming one identity with unlike
        contents are a conflict (neither recorded); a row the database will not take is left
        out with why, the others recorded. A batch goes in under one savepoint; when it fails,
        each of its rows under its own. Each job's series sums (tables.series) move with the
        rows, in the same transaction."""
        if not self.writing:
            raise DnnbenchError(f"history store {self.name}: opened for reading")
        done = Recorded()
        unique: dict[str, dict] = {}
        claims: dict[str, list[dict]] = {}
        for r in rows:
            claims.setdefault(r["identity"], []).append(r)
        for ident, claimed in claims.items():
            if len({r["content_hash"] for r in claimed}) > 1:
                done.conflicts.append(claimed)
                continue
            unique[ident] = claimed[0]
            done.same += len(claimed) - 1
        order = list(unique.values())
        with self.failing():
            for start in range(0, len(order), BATCH):
                batch = order[start:start + BATCH]
                with engine.writer(self.engine) as conn:
                    if conn.dialect.name == "postgresql":   # one writer at a time, as SQLite's lock does:
                        from sqlalchemy import text
                        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": WRITE_LOCK})  # sums exact
                    try:
                        with conn.begin_nested():
                            counts = _put(conn, batch)
                    except Exception as exc:  # noqa: BLE001 - which row failed is found below, one at a time
                        if not _row_error(exc):
                            raise
                        counts = self._one_by_one(conn, batch, done)
                done.new, done.same, done.changed = (x + y for x, y in zip((done.new, done.same, done.changed),
                                                                            counts))
        return done

    def _one_by_one(self, conn, batch: list[dict], done: Recorded) -> tuple[int, int, int]:
        total = [0, 0, 0]
        failed: list[str] = []
        for r in batch:
            try:
                with conn.begin_nested():
                    counts = _put(conn, [r])
            except Exception as exc:  # noqa: BLE001 - this row's problem: named, the others go on
                if not _row_error(exc):
                    raise
                failed.append(self.location.scrub(why(exc)))
                done.refused.append((r, failed[-1]))
                continue
            total = [x + y for x, y in zip(total, counts)]
        if len(batch) >= SAME_FAILURE and len(failed) == len(batch) and len(set(failed)) == 1:
            del done.refused[-len(failed):]
            raise DnnbenchError(failed[0])     # every row for one reason: the store cannot take any
        return total[0], total[1], total[2]

    def select(self, *, job: str | None = None, workload: str | None = None, image: str | None = None,
               base: str | None = None, pytorch: str | None = None, cuda: str | None = None,
               host: str | None = None, gpu: str | None = None, since: datetime | None = None,
               until: datetime | None = None, status: str | None = None, limit: int | None = None,
               newest: bool = False, columns: tuple[str, ...] | None = None, busy: bool | None = None) -> list[dict]:
        """Rows matching every filter given, oldest first (only `columns` when given; with
        `limit` and `newest`, the newest `limit` of them, still oldest first). Names match
        exactly; versions match a prefix (`--torch 2.4` finds 2.4.1+cu121). `busy` False: only
        results not marked busy (the host was busy: dnnbench.workloads.busy); True: only those."""
        from sqlalchemy import select

        from dnnbench.history.tables import results as t
        q = select(*(t.c[c] for c in columns)) if columns else select(t)
        q = _filtered(q, job=job, workload=workload, image=image, base=base, pytorch=pytorch, cuda=cuda,
                      host=host, gpu=gpu, since=since, until=until, status=status, busy=busy)
        # the newest first from the (job_key, started) index: a limit reads that many rows
        q = q.order_by(t.c.started.desc(), t.c.id.desc()) if newest else q.order_by(t.c.started, t.c.id)
        if limit is not None:
            q = q.limit(limit)
        with self.failing(), self.engine.connect() as conn:
            found = conn.execute(q)
            keys = list(found.keys())
            rows = [dict(zip(keys, r)) for r in found]   # plain tuples: no Row object per result
        return rows[::-1] if newest else rows

    def count(self, **filters) -> int:
        """How many rows match the filters `select` takes (counted in the database)."""
        from sqlalchemy import func, select

        from dnnbench.history.tables import results as t
        with self.failing(), self.engine.connect() as conn:
            q = _filtered(select(func.count()).select_from(t), **filters, by_key=True)
            return int(conn.execute(q).scalar() or 0)

    def series(self, job: str, *, by: str = "release", gpu: str | None = None,
               since: datetime | None = None, until: datetime | None = None,
               include_busy: bool = False) -> list[dict]:
        """A job's ok results as series points, in release or time order: one point per GPU
        model and image (by release), or per GPU model, image and day (by time). Each point:
        n results, their mean throughput, sd, and a 95 % CI of the mean (one result: its own
        CI). Read from the job's sums (tables.series: a row per image and day, however many
        results), or over a window of time summed in SQL from one covering index
        (ix_results_series); a job's rows are never read one by one, other jobs' never touched.
        Results marked busy are in no sum; `include_busy` sums in SQL with them."""
        from sqlalchemy import func, select

        from dnnbench.history.facts import job_key
        from dnnbench.history.tables import results as t
        from dnnbench.history.tables import series as s
        with self.failing(), self.engine.connect() as conn:
            if since is None and until is None and not include_busy:
                groups = [tuple(g) for g in conn.execute(select(
                    s.c.series_key, s.c.n, s.c.total, s.c.squares, s.c.first, s.c.last, s.c.ci_low, s.c.ci_high,
                    s.c.first_id).where(s.c.job_key == job_key(job), s.c.n > 0))]
                if by == "release":
                    groups = _merged(groups)
            else:
                v = t.c.throughput
                q = select(t.c.series_key, func.count(v), func.sum(v), func.sum(v * v), func.min(t.c.started),
                           func.max(t.c.started), func.min(t.c.ci_low), func.max(t.c.ci_high), func.min(t.c.id)).where(
                    t.c.job_key == job_key(job), t.c.status == "ok", v.isnot(None))
                if not include_busy:
                    q = q.where(t.c.busy.isnot(True))
                if since is not None:
                    q = q.where(t.c.started >= since)
                if until is not None:
                    q = q.where(t.c.started < until)
                q = q.group_by(t.c.series_key, *((func.date(t.c.started),) if by == "time" else ()))
                groups = [tuple(g) for g in conn.execute(q)]
            first: dict[int, dict] = {}
            facts = [t.c[c] for c in ("id", "job", "image", "base", "gpu", "pytorch", "cuda", "cudnn", "nccl",
                                      "driver", "unit", "workload", "digest")]
            rep: dict[str, int] = {}      # an image's facts (one row's) serve each of its points
            for g in groups:
                rep[g[0]] = min(rep.get(g[0], g[8]), g[8])
            ids = sorted(set(rep.values()))
            for start in range(0, len(ids), BATCH):
                found = conn.execute(select(*facts).where(t.c.id.in_(ids[start:start + BATCH])))
                keys = list(found.keys())
                first.update((r[0], dict(zip(keys, r))) for r in found)
        points = []
        for key, n, total, squares, started, last, ci_low, ci_high, rid in groups:
            row = first.get(rep[key])
            if not n or row is None or row["job"] != job or (gpu is not None and row["gpu"] != gpu):
                continue
            points.append(dict(row, id=rid, status="ok", **_point(n, total, squares, ci_low, ci_high),
                               started=started, last=last, host=None))
        if by == "time":
            return sorted(points, key=lambda p: (p["started"] or datetime.min, p["id"]))
        from dnnbench.history.facts import release_key
        return sorted(points, key=release_key)



def conflict_line(rows: list[dict]) -> str:
    """Rows claiming one identity with unlike contents, in one line."""
    r = rows[0]
    paths = ", ".join(str(x.get("path")) for x in rows[:3]) + (f" and {len(rows) - 3} more" if len(rows) > 3 else "")
    return (f"conflict: {paths} claim one identity (run id {str(r.get('run_id'))[:80]}, host "
            f"{str(r.get('host'))[:80]}, started {r.get('started')}) with unlike contents: neither recorded")


def _database_error(exc: BaseException) -> bool:
    from sqlalchemy.exc import SQLAlchemyError
    return isinstance(exc, (SQLAlchemyError, OSError, ValueError)) or type(exc).__module__.startswith(
        ("psycopg", "sqlite3"))


def _row_error(exc: BaseException) -> bool:
    """A failure one row can cause (its values), not the store's (a lost connection)."""
    if getattr(exc, "connection_invalidated", False):
        return False
    return _database_error(exc) or isinstance(exc, (UnicodeError, OverflowError, TypeError))


def _put(conn, batch: list[dict]) -> tuple[int, int, int]:
    """Rows not yet there inserted, rows there under other content updated, their series sums
    moved: (new, already there, updated). The caller holds the write lock."""
    from sqlalchemy import select, update

    from dnnbench.history.tables import results as t
    have = {r.identity: r._asdict() for r in conn.execute(select(
        t.c.identity, t.c.content_hash, t.c.id, t.c.job_key, t.c.series_key, t.c.status, t.c.started,
        t.c.throughput, t.c.busy).where(t.c.identity.in_([r["identity"] for r in batch])))}
    fresh = [r for r in batch if r["identity"] not in have]
    moved = [r for r in batch if r["identity"] in have and have[r["identity"]]["content_hash"] != r["content_hash"]]
    added = []
    if fresh:    # the lock: nobody else inserted them meanwhile
        conn.execute(_insert_once(conn), fresh)
        ids = dict(conn.execute(select(t.c.identity, t.c.id).where(
            t.c.identity.in_([r["identity"] for r in fresh]))).all())
        added = [dict(r, id=ids[r["identity"]]) for r in fresh]
    for r in moved:
        conn.execute(update(t).where(t.c.identity == r["identity"]).values(**r))
    _subtract(conn, [have[r["identity"]] for r in moved])
    _add(conn, added + [dict(r, id=have[r["identity"]]["id"]) for r in moved])
    return len(fresh), len(batch) - len(fresh) - len(moved), len(moved)


def _merged(groups: list[tuple]) -> list[tuple]:
    """Per-day sums merged into one per series_key (an image on a GPU model)."""
    out: dict[str, list] = {}
    for key, n, total, squares, first, last, ci_low, ci_high, rid in groups:
        g = out.get(key)
        if g is None:
            out[key] = [key, n, total, squares, first, last, ci_low, ci_high, rid]
            continue
        g[1], g[2], g[3] = g[1] + n, g[2] + total, g[3] + squares
        g[4] = min(x for x in (g[4], first) if x is not None) if (g[4] or first) else None
        g[5] = max(x for x in (g[5], last) if x is not None) if (g[5] or last) else None
        g[8] = min(g[8], rid)
    return [tuple(g) for g in out.values()]


def _day(started) -> str:
    return started.strftime("%Y-%m-%d") if isinstance(started, datetime) else ""


def _counted(row: dict) -> bool:
    """In a series sum: an ok result with a figure, its host not marked busy."""
    return row.get("status") == "ok" and isinstance(row.get("throughput"), (int, float)) and not row.get("busy")


def _add(conn, rows: list[dict]) -> None:
    """Rows' throughputs added to their series sums (tables.series), a row per job, image and day."""
    from sqlalchemy import func

    from dnnbench.history.tables import series as s
    sums: dict[tuple, dict] = {}
    for r in rows:
        if not _counted(r):
            continue
        v, day = r["throughput"], _day(r["started"])
        g = sums.setdefault((r["job_key"], r["series_key"], day), {
            "job_key": r["job_key"], "series_key": r["series_key"], "day": day, "n": 0, "total": 0.0,
            "squares": 0.0, "first": r["started"], "last": r["started"], "ci_low": r.get("ci_low"),
            "ci_high": r.get("ci_high"), "first_id": r["id"]})
        g["n"], g["total"], g["squares"] = g["n"] + 1, g["total"] + v, g["squares"] + v * v
        if r["started"] is not None:
            g["first"] = min(g["first"] or r["started"], r["started"])
            g["last"] = max(g["last"] or r["started"], r["started"])
        g["first_id"] = min(g["first_id"], r["id"])
    if not sums:
        return
    pg = conn.dialect.name == "postgresql"
    least, greatest = (func.least, func.greatest) if pg else (func.min, func.max)   # of two values
    ins = _dialect_insert(conn, s)
    x = ins.excluded
    conn.execute(ins.on_conflict_do_update(index_elements=["job_key", "series_key", "day"], set_={
        "n": s.c.n + x.n, "total": s.c.total + x.total, "squares": s.c.squares + x.squares,
        "first": func.coalesce(least(s.c.first, x.first), x.first),
        "last": func.coalesce(greatest(s.c.last, x.last), x.last),
        "first_id": least(s.c.first_id, x.first_id)}), list(sums.values()))


def _subtract(conn, old: list[dict]) -> None:
    """Rewritten rows' old throughputs taken out of their series sums (the point's first and last
    times stay as they were)."""
    from sqlalchemy import bindparam, delete, update

    from dnnbench.history.tables import series as s
    gone = [{"k_job": r["job_key"], "k_series": r["series_key"], "k_day": _day(r["started"]), "v": r["throughput"]}
            for r in old if _counted(r) and r.get("series_key")]
    if not gone:
        return
    where = (s.c.job_key == bindparam("k_job"), s.c.series_key == bindparam("k_series"), s.c.day == bindparam("k_day"))
    conn.execute(update(s).where(*where).values(n=s.c.n - 1, total=s.c.total - bindparam("v"),
                                                squares=s.c.squares - bindparam("v") * bindparam("v")), gone)
    conn.execute(delete(s).where(s.c.n <= 0))


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


def _dialect_insert(conn, table):
    """INSERT with ON CONFLICT, as the store's database spells it."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
        return insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert
    return sqlite_insert(table)


def _insert_once(conn):
    """INSERT that leaves a row another writer added meanwhile (two machines, one result)."""
    from dnnbench.history.tables import results
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(results).on_conflict_do_nothing(index_elements=["identity"])


def _filtered(q, *, job=None, workload=None, image=None, base=None, pytorch=None, cuda=None, host=None, gpu=None,
              since=None, until=None, status=None, busy=None, by_key: bool = False):
    """`q` with a WHERE for every filter given (Store.select's). A job is found by its key (the
    index) and its name; `by_key` matches the key alone, which a count reads from the index
    without visiting a million rows (a SHA-1 collision of two job names is not a concern)."""
    from dnnbench.history.facts import job_key
    from dnnbench.history.tables import results as t
    if job is not None:
        q = q.where(t.c.job_key == job_key(job))
        if not by_key:
            q = q.where(t.c.job == job)
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
    if busy is not None:    # NULL (no load recorded) counts as not busy
        q = q.where(t.c.busy.is_(True) if busy else t.c.busy.isnot(True))
    return q
