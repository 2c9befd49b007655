"""The SQLAlchemy engine of a store, for reading or for writing. SQLite: opened by its file
URI, read-only (`mode=ro`, `query_only`) for a read; a writer switches it to WAL with a busy
timeout (parallel suite jobs wait their turn) and begins its transactions itself so DDL is
inside them. PostgreSQL: a connect timeout (an unreachable server is named in seconds, not
waited on for minutes), and every transaction of a read is READ ONLY on the server."""
from __future__ import annotations

import sqlite3
from urllib.parse import quote, urlencode

BUSY_MS = 30_000
CONNECT_S = 10
WRITE = "dnnbench_write"


def sqlite_uri(loc, mode: str, extra: dict | None = None) -> str:
    """The file URI SQLite opens: the store's path, its own URI parameters, and `mode`."""
    params = {**loc.params, **(extra or {}), "mode": mode}
    return f"file:{quote(str(loc.path))}?{urlencode(params)}"


def sqlite_connect(loc, mode: str, extra: dict | None = None) -> sqlite3.Connection:
    return sqlite3.connect(sqlite_uri(loc, mode, extra), uri=True, timeout=BUSY_MS / 1000, isolation_level=None,
                           check_same_thread=False)


def make(loc, write: bool = True):
    from sqlalchemy import create_engine, event
    if loc.kind == "sqlite":
        from sqlalchemy.pool import QueuePool
        mode = loc.params.get("mode", "rwc") if write else "ro"
        engine = create_engine("sqlite+pysqlite://", creator=lambda: sqlite_connect(loc, mode), poolclass=QueuePool)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi, _record):
            dbapi.isolation_level = None    # transactions (and DDL in them) begun below, not by pysqlite
            cur = dbapi.cursor()
            cur.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            if write:    # a read never switches a file to WAL (nor writes anything else)
                cur.execute("PRAGMA journal_mode = WAL")    # readers never block the writer
                cur.execute("PRAGMA synchronous = NORMAL")  # WAL keeps it consistent on a crash
            else:
                cur.execute("PRAGMA query_only = 1")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn):
            # a writer takes the write lock first (waiting up to BUSY_MS): a read that
            # later turns into a write could fail at once when another writer went first
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE) else "BEGIN")
        return engine
    url = loc.url
    args: dict = {}
    if "connect_timeout" not in url.query:
        args["connect_timeout"] = CONNECT_S
    if not write:   # the server refuses any write of this session: a read cannot change the store
        given = url.query.get("options")
        args["options"] = " ".join(x for x in (given if isinstance(given, str) else None,
                                               "-c default_transaction_read_only=on") if x)
    return create_engine(url, connect_args=args, pool_pre_ping=True)


def writer(engine):
    """A write transaction: on SQLite it holds the write lock from its start."""
    return engine.execution_options(**{WRITE: True}).begin()
