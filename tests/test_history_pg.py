"""The history on a real PostgreSQL server (a throwaway cluster on a Unix socket, never a
mock): recording, import, queries, two machines writing at once, a wrong password, and the
server stopped under a run."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.helpers import ROOT, dnnbench, one_line_error
from tests.history_results import write
from tests.postgres import Cluster
from tests.test_history_import import hostile_import, hostile_results

SCRIPTS = ROOT / "tests" / "fixtures" / "scripts"
TIMING = ["--warmup", "1", "--number", "2", "--repeat", "3"]


@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    yield c
    c.close()


@pytest.fixture
def pg(cluster, monkeypatch):
    """A fresh, empty database on the cluster for each test."""
    from sqlalchemy import create_engine, text
    engine = create_engine(cluster.url().replace("postgresql://", "postgresql+psycopg://"))
    with engine.begin() as conn:     # every table of the schema: an empty database, as the gate knows it
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()
    monkeypatch.setenv("DNNBENCH_DB", cluster.url())
    return cluster.url()


def _json(res):
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_record_import_and_query_on_postgresql(pg, tmp_path):
    res = dnnbench("run", "--script", SCRIPTS / "plain_loop.py", "--runtime", "host", "--results", tmp_path / "runs",
                   "--run-id", "pg1", "--unit", "samples", *TIMING)
    assert res.returncode == 0 and "history not updated" not in res.stderr, res.stderr[-3000:]
    for i in range(9):
        write(tmp_path / "r", i, 1000 * (0.9 if i >= 5 else 1.0), image=f"local:rel-4.{i}",
              pytorch="2.5.1" if i >= 5 else "2.4.1")
    res = dnnbench("history", "import", tmp_path / "r", tmp_path / "runs", check=0)
    assert "9 imported, 1 already there" in res.stderr, res.stderr
    assert len(_json(dnnbench("history", "list", "-f", "json"))) == 10
    assert len(_json(dnnbench("history", "list", "--torch", "2.5", "-f", "json"))) == 4
    assert [r["run_id"] for r in _json(dnnbench("history", "--job", "resnet50-bs64", "--since", "2026-10-01T03:00Z",
                                                "--until", "2026-10-01T05:00Z", "-f", "json"))] == [
        "h0003-node1", "h0004-node1"]
    series = _json(dnnbench("history", "series", "resnet50-bs64", "-f", "json"))     # from the job's sums
    assert [(p["image"], p["n"]) for p in series] == [(f"local:rel-4.{i}", 1) for i in range(9)]
    found = json.loads(dnnbench("history", "changes", "resnet50-bs64", "-f", "json", check=1).stdout)
    assert [(c["before"]["image"], c["after"]["image"]) for c in found] == [("local:rel-4.4", "local:rel-4.5")]
    # the password never reaches the screen
    assert "s3cret" not in res.stderr and "***" in res.stderr


WRITER = """
import sys
from pathlib import Path
from dnnbench.history.facts import row
from dnnbench.history.store import Store
from dnnbench.workloads import schema
paths = sorted(Path(sys.argv[2]).rglob("result.json"))
rows = [row(p, schema.read(str(p))) for p in paths]
store = Store(sys.argv[1])
for r in rows:               # one result at a time, as runs finish: the most interleaving
    store.add([r])
store.close()
"""


def test_two_machines_writing_at_once_are_both_seen_and_nothing_twice(pg, tmp_path):
    for i in range(40):
        write(tmp_path / "a", i, 1000, host="nodeA")
        write(tmp_path / "b", i, 900, host="nodeB")
    for i in range(20):      # results both machines hold (a shared results folder): recorded once
        write(tmp_path / "a", 100 + i, 800, host="shared")
        write(tmp_path / "b", 100 + i, 800, host="shared")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg, str(tmp_path / side)], stderr=subprocess.PIPE,
                              text=True) for side in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    listed = _json(dnnbench("history", "list", "-f", "json"))
    hosts = [r["host"] for r in listed]
    assert (hosts.count("nodeA"), hosts.count("nodeB"), hosts.count("shared")) == (40, 40, 20)


def test_a_wrong_password_is_one_line(pg, cluster):
    line = one_line_error(dnnbench("history", "--db", cluster.url("wrong")), "history store postgresql://postgres:***@")
    assert "password authentication failed" in line and "wrong" not in line


def test_the_server_stopped_under_a_run_costs_one_warning_line(pg, cluster, tmp_path):
    cluster.stop()
    try:
        res = dnnbench("run", "--script", SCRIPTS / "plain_loop.py", "--runtime", "host", "--results", tmp_path,
                       "--run-id", "pg2", "--unit", "samples", *TIMING)
    finally:
        cluster.start()
    assert res.returncode == 0, res.stderr[-3000:]
    warned = [line for line in res.stderr.splitlines() if "history not updated" in line]
    assert len(warned) == 1 and "history store postgresql://postgres:***@" in warned[0], res.stderr
    assert json.loads((tmp_path / "pg2" / "result.json").read_text())["status"] == "ok"
    # the import catches up afterwards
    assert "1 imported" in dnnbench("history", "import", tmp_path, check=0).stderr


def test_references_import_once_and_place_a_result_on_postgresql(pg, tmp_path):
    """dnnbench refs on PostgreSQL: the public excerpts imported once (again: nothing new, the
    summary's rounded minutes the same as the summarizer's whole ones), listed, and a result
    placed against them by `history peers`."""
    from tests import refs_results
    refs = ROOT / "tests" / "fixtures" / "refs"
    files = [refs / "lambda" / "pytorch-train-throughput-v2-fp16.csv", refs / "mlperf" / "v5.1" /
             "Quanta_Cloud_Technology" / "summary.json", refs / "mlperf" / "summarizer-5.1.0" / "summary.csv"]
    assert dnnbench("refs", "import", *files).returncode == 0
    again = dnnbench("refs", "import", *files)
    assert again.returncode == 0 and again.stderr.count(" 0 new,") == 3 and "1 updated" not in again.stderr
    listed = _json(dnnbench("refs", "list", "--gpu", "NVIDIA H100 80GB HBM3", "--workload", "resnet50", "-f", "json"))
    assert {(r["system"], r["gpu_count"], r["samples"]) for r in listed} == {
        ("LambdaOD_Texas_1xH100_80GB_SXM5_v2", 1, 11), ("LambdaOD_Texas_8xH100_80GB_SXM5_v2", 8, 7)}
    peers = _json(dnnbench("history", "peers", refs_results.write(tmp_path, 2790.0), "--json"))
    assert [r["in_spread"] for r in peers["references"]["matched"]] == ["within"]


def _relations(url: str) -> list:
    from sqlalchemy import create_engine, text
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                                     "WHERE n.nspname = 'public'")).all()
    finally:
        engine.dispose()


def _snapshot(url: str) -> list:
    """Every relation of the database's schema, and the other application's rows."""
    from sqlalchemy import create_engine, text
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.connect() as conn:
            names = conn.execute(text("SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON "
                                      "n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY 1")).all()
            rows = conn.execute(text("SELECT * FROM shop_orders ORDER BY id")).all()
        return [names, rows]
    finally:
        engine.dispose()


@pytest.mark.parametrize("other", ["a foreign table", "a results table of its own"])
def test_another_applications_database_is_refused_and_left_as_it_was(pg, tmp_path, other):
    from sqlalchemy import create_engine, text
    engine = create_engine(pg.replace("postgresql://", "postgresql+psycopg://"))
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE shop_orders (id serial PRIMARY KEY, item text)"))
        conn.execute(text("INSERT INTO shop_orders (item) SELECT 'item' || g FROM generate_series(1, 20) g"))
        if other == "a foreign table":      # file_fdw ships with the server: a table that lives elsewhere
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS file_fdw"))
            conn.execute(text("CREATE SERVER IF NOT EXISTS files FOREIGN DATA WRAPPER file_fdw"))
            conn.execute(text("CREATE FOREIGN TABLE passwd (line text) SERVER files OPTIONS (filename '/etc/hostname')"))
        else:
            conn.execute(text("CREATE TABLE results (id serial PRIMARY KEY, score real)"))
    engine.dispose()
    before = _snapshot(pg)
    write(tmp_path / "r", 0, 1000)
    for argv in (["history"], ["history", "series", "resnet50-bs64"], ["history", "import", tmp_path / "r"]):
        one_line_error(dnnbench(*argv), "not a dnnbench history store", "left as it is")
    assert _snapshot(pg) == before


def test_a_read_is_a_read_only_transaction_and_never_migrates(pg, tmp_path):
    from sqlalchemy import text

    from dnnbench.history.location import NoStore
    from dnnbench.history.store import Store
    res = dnnbench("history", "--db", pg, check=0)
    assert "is empty (nothing recorded yet)" in res.stderr
    with pytest.raises(NoStore):          # an empty database: a read makes nothing in it
        Store(pg, create=False)
    assert _relations(pg) == []
    write(tmp_path / "r", 0, 1000)
    dnnbench("history", "import", tmp_path / "r", check=0)
    store = Store(pg, create=False)
    try:
        with pytest.raises(Exception, match="read-only transaction"):
            with store.engine.begin() as conn:
                conn.execute(text("CREATE TABLE x (y int)"))
    finally:
        store.close()


def test_bad_results_are_named_and_the_good_ones_stored_on_postgresql(pg, tmp_path):
    """PostgreSQL refuses more than SQLite (a NUL, an index entry over 2.7 kB): the same lines."""
    from tests.test_history_import import BAD, hostile
    good = [write(tmp_path / "r", i, 1000) for i in range(3)]
    bad = {key: hostile(tmp_path / "r", 10 + n, change) for n, (key, (_, change, _)) in enumerate(BAD.items())}
    res = dnnbench("history", "import", tmp_path / "r")
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    for key, path in bad.items():
        assert any(str(path) in x and BAD[key][2] in x for x in res.stderr.splitlines()), (key, res.stderr)
    assert sorted(r["path"] for r in _json(dnnbench("history", "list", "-f", "json"))) == sorted(map(str, good))


def test_rows_the_server_refuses_are_left_out_one_by_one(pg):
    """Past the checks of facts.row (a row built by other code): the batch's savepoint fails,
    each row goes in under its own, the one the server refuses is named, the rest stored."""
    from dnnbench.history.facts import job_key
    from dnnbench.history.store import Store
    store = Store(pg)
    try:
        rows = []
        for i in range(5):
            r = {c: None for c in ("run_id", "kind", "workload", "status", "image", "digest", "base", "pytorch",
                                   "cuda", "cudnn", "nccl", "driver", "host", "gpu", "gpu_count", "started",
                                   "throughput", "ci_low", "ci_high", "unit", "path", "recorded")}
            r.update(identity=f"{i:064d}", content_hash="0" * 64, job="j", job_key=job_key("j"), path=f"p{i}")
            rows.append(r)
        import hashlib      # over PostgreSQL's index entry limit, even compressed
        rows[2]["gpu"] = "".join(hashlib.sha256(str(n).encode()).hexdigest() for n in range(300))
        rows[3]["host"] = "a\0b"             # no NUL in PostgreSQL text
        done = store.record(rows)
        assert (done.new, done.same, done.changed) == (3, 0, 0)
        assert sorted(r["path"] for r, _ in done.refused) == ["p2", "p3"]
        assert sorted(r["path"] for r in store.select()) == ["p0", "p1", "p4"]
        assert store.record(rows).same == 3      # again: nothing twice
    finally:
        store.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad_sets=st.lists(hostile_results(), min_size=1, max_size=4))
def test_generated_hostile_results_never_keep_the_good_ones_out_on_postgresql(pg, bad_sets):
    import uuid
    hostile_import(pg, bad_sets, uuid.uuid4().hex[:8])
