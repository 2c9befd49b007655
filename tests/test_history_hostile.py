"""The history against bad input and faults: stores that are not what they claim, names that
look like SQL or hold control characters or run to 10,000 characters, writers in parallel and
a writer killed mid-insert. Every case: one clear line, nothing recorded twice, nothing lost."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.helpers import dnnbench, one_line_error
from tests.history_results import write


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "history.db"
    monkeypatch.setenv("DNNBENCH_DB", str(path))
    return path


def _json(res):
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _filled(db, tmp_path, n=30):
    for i in range(n):
        write(tmp_path / "r", i, 1000)
    assert f"{n} imported" in dnnbench("history", "import", tmp_path / "r", check=0).stderr


def test_a_store_of_a_newer_schema_is_refused_in_one_line_and_left_alone(db, tmp_path):
    _filled(db, tmp_path, 3)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'r9999'")
    def state():
        conn = sqlite3.connect(db)
        try:
            return conn.execute("SELECT version_num FROM alembic_version").fetchall(), conn.execute(
                "SELECT * FROM results ORDER BY id").fetchall()
        finally:
            conn.close()
    before = state()
    line = one_line_error(dnnbench("history"), f"history store {db}: it was written by a newer dnnbench")
    assert "r9999" in line
    write(tmp_path / "more", 99, 1000)
    one_line_error(dnnbench("history", "import", tmp_path / "more"), "newer dnnbench")
    assert state() == before and before[0] == [("r9999",)]


@pytest.mark.parametrize("damage", ["truncated", "not a database", "empty results table of another program"])
def test_a_damaged_store_is_one_line(damage, db, tmp_path):
    if damage == "truncated":
        _filled(db, tmp_path, 200)
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = db.stat().st_size
        with open(db, "r+b") as fh:
            fh.truncate(size // 3)
    elif damage == "not a database":
        db.write_bytes(b"PK\x03\x04 a zip, say" * 500)
    else:
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE results (x)")
    res = dnnbench("history", "--format", "json")
    one_line_error(res, f"history store {db}:")


@pytest.mark.parametrize("name", ["'; DROP TABLE results; --", "job\x1b[31mred\x07\rbell", "x" * 10_000,
                                  "[bold]markup[/bold] :smile:", "ümlaut-\u202eevil"])
def test_hostile_job_names_are_stored_whole_and_shown_escaped(name, db, tmp_path):
    write(tmp_path / "r", 0, 1000, job=name)
    write(tmp_path / "r", 1, 1000, job="plain")
    dnnbench("history", "import", tmp_path / "r", check=0)
    found = _json(dnnbench("history", "--job", name, "-f", "json"))
    assert [r["job"] for r in found] == [name]
    assert len(_json(dnnbench("history", "-f", "json"))) == 2       # the table is still there
    table = dnnbench("history", env={"COLUMNS": "80"})
    assert table.returncode == 0 and "\x1b" not in table.stdout and "\x07" not in table.stdout
    assert max(len(line) for line in table.stdout.splitlines()) <= 80
    if "\x1b" in name:
        assert "\\x1b[31mred\\x07" in table.stdout


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=300))
def test_any_job_name_comes_back_exactly(tmp_path, name):
    from dnnbench.history.facts import job_key
    from dnnbench.history.store import Store
    store = Store(str(tmp_path / "gen.db"))
    try:
        row = {c: None for c in ("run_id", "kind", "workload", "status", "image", "digest", "base", "pytorch", "cuda",
                                 "cudnn", "nccl", "driver", "host", "gpu", "gpu_count", "started", "throughput",
                                 "ci_low", "ci_high", "unit", "path", "recorded")}
        ident = job_key("id" + name) + "x" * 24
        row.update(identity=ident, content_hash="0" * 64, job=name, job_key=job_key(name))
        store.add([row])
        assert [r["job"] for r in store.select(job=name)] == [name]
        assert store.add([row]) == (0, 1, 0)
    finally:
        store.close()


WRITER = """
import sys
from pathlib import Path
from dnnbench.history.record import record
from dnnbench.workloads import schema
for p in sorted(Path(sys.argv[1]).rglob("result.json")):
    record(p, schema.read(str(p)))     # what finalize does at the end of each run
"""


def test_four_suite_jobs_recording_at_once_on_sqlite(db, tmp_path):
    for w in range(4):
        for i in range(25):
            write(tmp_path / f"w{w}", w * 100 + i, 1000)
        for i in range(10):     # a share every writer records: once in the store
            write(tmp_path / f"w{w}", 1000 + i, 500, host="shared")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / f"w{w}")], stderr=subprocess.PIPE,
                              text=True) for w in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0 and "history not updated" not in err, err
    listed = _json(dnnbench("history", "-f", "json"))
    assert len(listed) == 110 and len({r["run_id"] + r["host"] for r in listed}) == 110


KILLED = """
import sys
from pathlib import Path
from dnnbench.history.facts import row
from dnnbench.history.store import Store
from dnnbench.workloads import schema
rows = [row(p, schema.read(str(p))) for p in sorted(Path(sys.argv[1]).rglob("result.json"))]
store = Store()
while True:
    for i, r in enumerate(rows, 1):
        store.add([r])
        print(i, flush=True)      # stored: the test kills it at a row, not after a time
"""


def test_a_writer_killed_mid_insert_loses_nothing_and_import_catches_up(db, tmp_path):
    for i in range(300):
        write(tmp_path / "r", i, 1000)
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(tmp_path / "r")], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    stored = 0
    while stored < 50:           # killed once 50 rows are stored, in the middle of the others
        line = proc.stdout.readline()
        assert line, f"the writer ended (exit {proc.wait()}) after {stored} rows"
        stored = int(line)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM results").fetchone()[0] >= stored   # what it said it kept
    res = dnnbench("history", "import", tmp_path / "r", check=0)
    assert res.returncode == 0 and "0 updated, 0 unreadable" in res.stderr, res.stderr
    assert len(_json(dnnbench("history", "-f", "json"))) == 300
