"""The store's schema version: an older store is migrated by a writer (Alembic, the scripts
shipped in migrations/), a newer one is refused in one line, never written to (gate.py decides)."""
from __future__ import annotations

from pathlib import Path

from dnnbench.errors import DnnbenchError

REVISION = "r0004"     # the head of migrations/versions: bump with each new migration
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# PostgreSQL: one migrating client at a time (two machines starting at once)
_LOCK_KEY = 4343


def known() -> list[str]:
    """The revisions this dnnbench's migrations know."""
    from alembic.script import ScriptDirectory
    return [s.revision for s in ScriptDirectory(str(MIGRATIONS)).walk_revisions()]


def refuse_newer(found: str | None) -> None:
    """A revision this dnnbench can bring to REVISION passes; a newer one is refused."""
    if found is not None and found != REVISION and found not in known():
        raise DnnbenchError(f"it was written by a newer dnnbench (schema {found}; this one knows up to "
                            f"{REVISION}): upgrade dnnbench, or choose another --db")


def upgrade(engine, recognise) -> None:
    """Bring a store recognised as empty or ours (gate.recognise) to REVISION: one migration at
    a time, all of it or none (SQLite's write lock with the DDL inside the transaction,
    PostgreSQL's advisory lock); whoever comes second finds it done. The store is recognised
    again under the lock: what changed meanwhile is refused, not migrated."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text

    from dnnbench.history.engine import writer
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with writer(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
        found = recognise(conn)
        if found == REVISION:
            return
        refuse_newer(found)
        config.attributes["connection"] = conn
        command.upgrade(config, "head")
