"""One gate opens every store (toolkit/history/gate.py): what is not empty and not a dnnbench
store is refused in one line and left byte for byte as it was (its hash, and no file made
beside it), a read never creates, migrates or changes anything (no WAL switch either), a
`sqlite:///` URL that is a link is refused as the path is; the same on a real PostgreSQL."""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import cli_inprocess
from tests.history_results import store_at, write

READS = [["history"], ["history", "list", "-f", "json"], ["history", "series", "resnet50-bs64"],
         ["history", "changes"]]


def _state(folder: Path) -> dict:
    """Every file of the folder and its hash."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _one_line(code: int, err: str, *fragments: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, err)
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def _other_application(path: Path, journal: str, with_results: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO users (name) VALUES (?)", [(f"user{i}",) for i in range(50)])
    if with_results:     # a table named as ours, and an alembic_version of its own
        conn.execute("CREATE TABLE results (id INTEGER PRIMARY KEY, score REAL)")
        conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        conn.execute("INSERT INTO alembic_version VALUES ('ae1027a6acf')")
    return conn


@pytest.mark.parametrize("journal", ["delete", "wal", "wal, in use"])
@pytest.mark.parametrize("with_results", [False, True], ids=["own tables", "own results table"])
@pytest.mark.parametrize("named", ["path", "url", "file uri"])
def test_another_applications_sqlite_file_is_refused_and_left_as_it_was(tmp_path, journal, with_results, named):
    folder = tmp_path / "app"
    folder.mkdir()
    db = folder / "app.db"
    conn = _other_application(db, journal.split(",")[0], with_results)
    if journal != "wal, in use":
        conn.close()       # a WAL file checkpointed into the database and gone
    else:                  # the application is running: its writes still in its -wal
        conn.execute("INSERT INTO users (name) VALUES ('late')")
    # while the application runs, its -shm is shared memory every reader marks (SQLite's read
    # locks), not data: the database and its -wal are what must stay as they were
    kept = (lambda: {k: v for k, v in _state(folder).items() if not k.endswith("-shm")}) \
        if journal == "wal, in use" else (lambda: _state(folder))
    before = kept()
    results = tmp_path / "results"
    write(results, 0, 1000)
    url = {"path": str(db), "url": f"sqlite:///{db}", "file uri": f"sqlite:///file:{db}?uri=true"}[named]
    for argv in [*READS, ["history", "peers", str(results / "h0000-node1")], ["history", "import", str(results)]]:
        code, out, err = cli_inprocess(*argv, "--db", url)
        _one_line(code, err, "not a dnnbench history store", "it is left as it is")
        assert kept() == before, argv
    if journal == "wal, in use":
        assert conn.execute("SELECT count(*) FROM users").fetchone()[0] == 51
        conn.close()


def test_a_file_that_is_not_sqlite_is_never_handed_to_sqlite(tmp_path):
    (tmp_path / "app").mkdir()
    db = tmp_path / "app" / "notes.txt"
    db.write_bytes(b"my notes, not a database\n" * 40)
    before = _state(tmp_path / "app")
    write(tmp_path / "results", 0, 1000)
    for argv in [*READS, ["history", "import", str(tmp_path / "results")]]:
        code, _, err = cli_inprocess(*argv, "--db", str(db))
        _one_line(code, err, "not a SQLite database")
    assert _state(tmp_path / "app") == before


def test_a_read_never_creates_migrates_or_changes_a_store(tmp_path):
    from dnnbench.history.schema import REVISION
    missing = tmp_path / "nowhere" / "history.db"
    for argv in READS:
        code, _, err = cli_inprocess(*argv, "--db", str(missing))
        assert code in (0, 2) and "does not exist" in err, err
    assert not missing.parent.exists()
    empty = tmp_path / "empty" / "history.db"
    empty.parent.mkdir()
    empty.touch()
    for argv in READS:
        code, _, err = cli_inprocess(*argv, "--db", str(empty))
        assert code in (0, 2) and "is empty (nothing recorded yet)" in err, err
    assert _state(empty.parent) == {"history.db": hashlib.sha256(b"").hexdigest()}
    # an older dnnbench's store: named, not migrated by a read; migrated by the next write
    old = tmp_path / "old" / "history.db"
    store_at(old, "r0002").dispose()
    before = _state(old.parent)
    for argv in READS:
        code, _, err = cli_inprocess(*argv, "--db", str(old))
        _one_line(code, err, "holds schema r0002", "a read never changes a store")
    assert _state(old.parent) == before
    results = tmp_path / "results"
    write(results, 0, 1000)
    code, _, err = cli_inprocess("history", "import", str(results), "--db", str(old))
    assert code == 0 and "1 imported" in err, err
    with sqlite3.connect(old) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == REVISION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    # our store, read: not a byte of it changes (its WAL files are SQLite's own)
    before = _state(old.parent)["history.db"]
    for argv in [*READS, ["history", "peers", str(results / "h0000-node1"), "--json"]]:
        code, _, err = cli_inprocess(*argv, "--db", str(old))
        assert code in (0, 1), err
    assert _state(old.parent)["history.db"] == before


def test_a_read_opens_sqlite_read_only(tmp_path):
    from sqlalchemy import text

    from dnnbench.errors import DnnbenchError
    from dnnbench.history.store import Store
    db = str(tmp_path / "history.db")
    Store(db).close()
    store = Store(db, create=False)
    try:
        with pytest.raises(Exception, match="readonly|read-only|query_only"):
            with store.engine.begin() as conn:
                conn.execute(text("CREATE TABLE x (y)"))
        with pytest.raises(DnnbenchError, match="opened for reading"):
            store.add([])
    finally:
        store.close()


@pytest.mark.parametrize("form", ["sqlite:///{p}", "sqlite:///file:{p}?uri=true", "sqlite+pysqlite:///{p}", "{p}"])
@pytest.mark.parametrize("planted", ["link to a store", "link beside it (-wal)"])
def test_a_sqlite_url_that_is_a_link_is_refused_as_the_path_is(tmp_path, form, planted):
    elsewhere = tmp_path / "elsewhere.db"
    write(tmp_path / "r", 0, 1000)
    code, _, err = cli_inprocess("history", "import", str(tmp_path / "r"), "--db", str(elsewhere))
    assert code == 0, err
    store = tmp_path / "store" / "history.db"
    store.parent.mkdir()
    if planted == "link to a store":
        store.symlink_to(elsewhere)
    else:
        Path(f"{store}-wal").symlink_to(tmp_path / "victim")
    before = _state(tmp_path)
    for argv in (["history", "list", "-f", "json"], ["history", "import", str(tmp_path / "r")]):
        code, _, err = cli_inprocess(*argv, "--db", form.format(p=store))
        _one_line(code, err, "a symbolic link")
    assert _state(tmp_path) == before and not (tmp_path / "victim").exists()
