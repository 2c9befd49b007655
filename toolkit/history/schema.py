"""The store's schema version: an older store is migrated (Alembic, the scripts shipped in
migrations/), a newer one is refused in one line, never written to."""
from __future__ import annotations

from pathlib import Path

from dnnbench.errors import DnnbenchError

REVISION = "r0004"     # the head of migrations/versions: bump with each new migration
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# PostgreSQL: one migrating client at a time (two machines starting at once)
_LOCK_KEY = 4343


def current(conn) -> str | None:
    """The store's revision; None for an empty store."""
    from sqlalchemy import inspect, text
    if not inspect(conn).has_table("alembic_version"):
        if inspect(conn).has_table("results"):
            raise DnnbenchError("it has a results table but no schema version: not a dnnbench history "
                                "store (choose another --db)")
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _known() -> list[str]:
    from alembic.script import ScriptDirectory
    return [s.revision for s in ScriptDirectory(str(MIGRATIONS)).walk_revisions()]


def prepare(engine) -> None:
    """Bring the store to REVISION; the fast path (already there) loads no Alembic."""
    with engine.connect() as conn:
        found = current(conn)
    if found == REVISION:
        return
    if found is not None and found not in _known():
        raise DnnbenchError(f"it was written by a newer dnnbench (schema {found}; this one knows up to "
                            f"{REVISION}): upgrade dnnbench, or choose another --db")
    _upgrade(engine)


def _upgrade(engine) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    from dnnbench.history.engine import writer
    # one migration at a time, all of it or none: SQLite's write lock (DDL inside the
    # transaction), PostgreSQL's advisory lock; whoever comes second finds it done
    with writer(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
        if current(conn) == REVISION:
            return
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
