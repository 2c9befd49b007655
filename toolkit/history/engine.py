"""The SQLAlchemy engine of a store: SQLite in WAL mode with a busy timeout (parallel suite
jobs wait their turn), transactions begun by us so DDL is inside them; PostgreSQL with a
connect timeout (an unreachable server is named in seconds, not waited on for minutes)."""
from __future__ import annotations

BUSY_MS = 30_000
CONNECT_S = 10
WRITE = "dnnbench_write"


def make(url: str):
    from sqlalchemy import create_engine, event
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": BUSY_MS / 1000})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi, _record):
            dbapi.isolation_level = None    # transactions (and DDL in them) begun below, not by pysqlite
            cur = dbapi.cursor()
            cur.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            cur.execute("PRAGMA journal_mode = WAL")    # readers never block the writer
            cur.execute("PRAGMA synchronous = NORMAL")  # WAL keeps it consistent on a crash
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn):
            # a writer takes the write lock first (waiting up to BUSY_MS): a read that
            # later turns into a write could fail at once when another writer went first
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE) else "BEGIN")
    else:
        engine = create_engine(url, connect_args={"connect_timeout": CONNECT_S}, pool_pre_ping=True)
    return engine


def writer(engine):
    """A write transaction: on SQLite it holds the write lock from its start."""
    return engine.execution_options(**{WRITE: True}).begin()
