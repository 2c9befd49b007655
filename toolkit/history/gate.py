"""The one way a store is opened: it is recognised first, then used. Empty (no file, an empty
file or database): made when writing, "nothing recorded yet" when reading. A dnnbench store
(an `alembic_version` of ours): its revision; an older one is migrated only by a writer, under
the write lock. Anything else (another application's database, one with its own `results`
table, a file that is not SQLite) is refused in one line and left byte for byte as it was: it is
looked at read-only, and a SQLite file in WAL mode with no WAL beside it as immutable (no -wal
or -shm made next to somebody else's file). A read never creates, migrates or changes a store."""
from __future__ import annotations

import re

from dnnbench.errors import DnnbenchError
from dnnbench.history import engine as engines
from dnnbench.history import location, schema

OURS = re.compile(r"r\d{4}")      # dnnbench's revisions (migrations/versions), newer ones included
SQLITE_HEADER = b"SQLite format 3\0"
SHOWN_NAMES = 3


class NotOurs(DnnbenchError):
    """The store holds something that is not a dnnbench history: refused, never changed."""


def relations(conn) -> list[str]:
    """The tables, views and sequences of the store (PostgreSQL: in its current schema)."""
    from sqlalchemy import text
    if conn.dialect.name == "sqlite":
        q = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    else:
        q = ("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
             "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')")
    return sorted(str(r[0]) for r in conn.execute(text(q)))


def _listing(names: list[str]) -> str:
    from dnnbench.console import visible
    shown = ", ".join(visible(n[:40], one_line=True) for n in names[:SHOWN_NAMES])
    return shown + (f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")


def recognise(conn) -> str | None:
    """The store's revision, None when it is empty; NotOurs for anything else."""
    from sqlalchemy import text
    names = relations(conn)
    if not names:
        return None
    if "alembic_version" not in names:
        raise NotOurs(f"not a dnnbench history store: it holds {_listing(names)} and no dnnbench schema version "
                      f"(another application's database?); it is left as it is: choose another --db / "
                      f"{location.ENV_DB}")
    found = [r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))]
    if len(found) != 1 or not OURS.fullmatch(str(found[0])):
        raise NotOurs(f"not a dnnbench history store: its schema version is another application's "
                      f"({_listing([str(v) for v in found]) or 'none'}); it is left as it is: choose another --db / "
                      f"{location.ENV_DB}")
    return str(found[0])


def _probe_sqlite(loc) -> str | None:
    """A SQLite file recognised without changing it: its header read first (a file that is not
    SQLite is never handed to SQLite), then its tables read-only."""
    from dnnbench.workloads import fileio
    assert loc.path is not None
    import os
    try:
        fd = fileio.open_fd(str(loc.path))   # no link followed, no FIFO waited on
        try:
            head = os.read(fd, 100)
        finally:
            os.close(fd)
    except OSError as exc:
        raise loc.failure(f"cannot read it: {exc.strerror or exc}") from None
    if not head:
        return None
    if not head.startswith(SQLITE_HEADER) or len(head) < 100:
        raise NotOurs("not a SQLite database (nor a dnnbench history store); it is left as it is: choose another "
                      f"--db / {location.ENV_DB}")
    wal = head[18] == 2 and head[19] == 2
    extra = {"immutable": "1"} if wal and fileio.kind_at(f"{loc.path}-wal") == "missing" else None
    import sqlite3
    try:
        conn = engines.sqlite_connect(loc, "ro", extra)
    except sqlite3.Error as exc:
        raise loc.failure(str(exc)) from None
    try:
        from sqlalchemy import create_engine
        from sqlalchemy.pool import StaticPool
        probe = create_engine("sqlite+pysqlite://", creator=lambda: conn, poolclass=StaticPool)
        try:
            with probe.connect() as c:
                return recognise(c)
        finally:
            probe.dispose()
    finally:
        conn.close()


def open_store(loc, write: bool):
    """The engine of a recognised store (see the module's docstring). Errors come out as they
    are (the caller names the store); NoStore for a read of an empty one."""
    if loc.kind == "sqlite":
        location.check_file(loc, create=write)
        found = _probe_sqlite(loc) if loc.path.exists() else None
        if not write:
            _readable(loc, found)
        engine = engines.make(loc, write)
    else:
        engine = engines.make(loc, write)
        try:
            with engine.connect() as conn:
                found = recognise(conn)
            if not write:
                _readable(loc, found)
        except BaseException:
            engine.dispose()
            raise
    if write and found != schema.REVISION:
        try:
            schema.refuse_newer(found)
            schema.upgrade(engine, recognise)
        except BaseException:
            engine.dispose()
            raise
    return engine


def _readable(loc, found: str | None) -> None:
    if found is None:
        raise location.NoStore(f"history store {loc.shown} is empty (nothing recorded yet)")
    schema.refuse_newer(found)
    if found != schema.REVISION:
        raise DnnbenchError(f"it holds schema {found}, this dnnbench reads {schema.REVISION}: the next write brings it "
                            f"up to date (a run, or `dnnbench history import` of a results folder); a read never "
                            f"changes a store")
