"""The results history: a real SQLite store (a file in tmp), real result files, the real CLI."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import ROOT, dnnbench, one_line_error
from tests.history_results import store_at

RECORDED = ROOT / "tests" / "fixtures" / "results" / "cpu-suite"
COUNT = len(list(RECORDED.rglob("result.json")))


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "store" / "history.db"
    monkeypatch.setenv("DNNBENCH_DB", str(path))
    return path


def rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT identity, job, kind, throughput FROM results").fetchall()


def test_a_store_is_made_migrated_and_records_each_result_once(db):
    from dnnbench.history.facts import row
    from dnnbench.history.schema import REVISION
    from dnnbench.history.store import Store
    from dnnbench.workloads import schema
    files = sorted(RECORDED.rglob("result.json"))
    made = [row(p, schema.read(str(p))) for p in files]
    store = Store()
    assert store.add(made) == (COUNT, 0, 0)
    assert store.add(made + made) == (0, 2 * COUNT, 0)
    store.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == REVISION
    assert len(rows(db)) == COUNT


def test_an_older_store_is_migrated_in_place(db):
    from sqlalchemy import inspect

    from dnnbench.history.schema import REVISION
    from dnnbench.history.store import Store
    engine = store_at(db, "r0001")
    assert "ix_results_job_gpu" not in {i["name"] for i in inspect(engine).get_indexes("results")}
    Store().close()
    assert "ix_results_job_gpu" in {i["name"] for i in inspect(engine).get_indexes("results")}
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == REVISION


def test_a_schema_2_store_gets_the_series_index_and_its_rows_their_series_key(db):
    from sqlalchemy import MetaData, Table, inspect

    from dnnbench.history.facts import row
    from dnnbench.history.store import Store
    from dnnbench.workloads import schema
    engine = store_at(db, "r0002")
    old = [{k: v for k, v in row(p, schema.read(str(p))).items() if k != "series_key"}
           for p in sorted(RECORDED.rglob("result.json"))]
    with engine.begin() as conn:    # rows as schema 2 held them: no series_key
        conn.execute(Table("results", MetaData(), autoload_with=conn).insert(), old)
    store = Store()
    assert "ix_results_series" in {i["name"] for i in inspect(engine).get_indexes("results")}
    job = "resnet18-bs4"
    points = store.series(job)
    assert sum(p["n"] for p in points) == sum(1 for r in old if r["job"] == job and r["status"] == "ok") > 0
    assert store.add([row(p, schema.read(str(p))) for p in sorted(RECORDED.rglob("result.json"))])[1] == COUNT
    store.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM results WHERE series_key IS NULL").fetchone()[0] == 0


SCRIPTS = ROOT / "tests" / "fixtures" / "scripts"
TIMING = ["--warmup", "1", "--number", "2", "--repeat", "3"]


def _json(res) -> list:
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_a_run_is_recorded_where_its_result_is_finalized_and_listed(db, tmp_path):
    res = dnnbench("run", "--script", SCRIPTS / "plain_loop.py", "--runtime", "host", "--results", tmp_path,
                   "--run-id", "h1", "--unit", "samples", *TIMING)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "history not updated" not in res.stderr
    listed = _json(dnnbench("history", "list", "--format", "json"))
    assert [(r["run_id"], r["kind"], r["status"]) for r in listed] == [("h1", "script", "ok")]
    assert listed[0]["path"] == str(tmp_path / "h1" / "result.json") and listed[0]["throughput"] > 0
    # importing the same folder afterwards finds it already there: nothing recorded twice
    res = dnnbench("history", "import", tmp_path, check=0)
    assert "0 imported, 1 already there" in res.stderr
    assert len(_json(dnnbench("history", "list", "--format", "json"))) == 1


@pytest.mark.parametrize("plant", ["folder", "fifo", "link", "under a file", "read-only", "not a database"])
def test_a_bad_store_never_fails_a_run_one_warning_line(plant, tmp_path, monkeypatch):
    store = tmp_path / "store" / "history.db"
    store.parent.mkdir()
    if plant == "folder":
        store.mkdir()
    elif plant == "fifo":
        os.mkfifo(store)
    elif plant == "link":
        store.symlink_to(tmp_path / "elsewhere.db")
    elif plant == "under a file":
        store.parent.rmdir()
        store.parent.write_text("a file where the store's folder should be")
    elif plant == "not a database":
        store.write_bytes(b"\x00garbage" * 1000)
    named = str(store)
    if plant == "read-only":   # a store the user may read but not write (SQLite's own read-only mode)
        dnnbench("history", "import", RECORDED, env={"DNNBENCH_DB": str(store)}, check=0)
        named = f"sqlite:///file:{store}?mode=ro&uri=true"
    monkeypatch.setenv("DNNBENCH_DB", named)
    res = dnnbench("run", "--script", SCRIPTS / "plain_loop.py", "--runtime", "host", "--results", tmp_path,
                   "--run-id", "h2", "--unit", "samples", *TIMING)
    assert res.returncode == 0, res.stderr[-3000:]
    warned = [line for line in res.stderr.splitlines() if "history not updated" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: history not updated: history store"), res.stderr
    assert json.loads((tmp_path / "h2" / "result.json").read_text())["status"] == "ok"


def test_import_counts_and_the_queries(db, tmp_path):
    bad = tmp_path / "bad" / "x"
    bad.mkdir(parents=True)
    (bad / "result.json").write_text("{not json")
    res = dnnbench("history", "import", RECORDED, tmp_path / "bad", check=1)     # 1: some were left out
    assert f"{COUNT} imported, 0 already there, 0 updated, 1 unreadable" in res.stderr
    assert len([line for line in res.stderr.splitlines() if line.startswith("warning: skipped")]) == 1
    every = _json(dnnbench("history", "list", "-f", "json"))
    assert len(every) == COUNT
    assert {r["job"] for r in _json(dnnbench("history", "list", "--job", "resnet18-bs4", "-f", "json"))} == {"resnet18-bs4"}
    assert _json(dnnbench("history", "list", "--since", "1m", "-f", "json")) == []
    assert len(_json(dnnbench("history", "list", "--since", "2026-11-01", "--until", "2100-01-01", "-f", "json"))) == COUNT
    assert _json(dnnbench("history", "list", "--torch", "2.1", "-f", "json")) == []     # 2.1 is not 2.14
    assert len(_json(dnnbench("history", "list", "--torch", "2.14", "--gpu", "CPU", "-f", "json"))) == COUNT
    csv_text = dnnbench("history", "list", "-f", "csv", check=0).stdout
    assert csv_text.splitlines()[0].startswith("started,job,") and len(csv_text.splitlines()) == COUNT + 1
    table = dnnbench("history", env={"COLUMNS": "80"}, check=0).stdout
    assert "resnet18-bs4" in table and max(len(line) for line in table.splitlines()) <= 80
    series = json.loads(dnnbench("history", "series", "resnet18-bs4", "--by", "time", "-f", "json", check=0).stdout)
    assert sum(p["n"] for p in series) == 2     # a point per image and day, each with its results counted
    one_line_error(dnnbench("history", "series", "nosuchjob"), "no ok result of job 'nosuchjob'")
    one_line_error(dnnbench("history", "list", "--since", "last tuesday"), "--since")
    peers = json.loads(dnnbench("history", "peers", RECORDED / "resnet18-bs4" / "r1", "--json", check=0).stdout)
    assert peers["n"] == 1 and peers["percentile"] in (0.0, 100.0) and peers["gpu"] == "CPU"
    assert dnnbench("history", "changes", check=0).stdout.startswith("no lasting change")


def test_nothing_recorded_yet_is_an_empty_history_not_an_error(db):
    res = dnnbench("history", check=0)
    assert "does not exist (nothing recorded yet)" in res.stderr and "Traceback" not in res.stderr


def test_history_is_off_when_asked(db, tmp_path):
    from dnnbench.history.record import record
    os.environ["DNNBENCH_HISTORY"] = "off"
    try:
        assert record(tmp_path / "result.json", {"run_id": "x"}) is False
    finally:
        del os.environ["DNNBENCH_HISTORY"]
    assert not db.exists()


SUITE = ("name: hist\ndefaults: {runtime: host, batch_size: 2, options: {warmup: 0, number: 1, repeat: 2}}\n"
         "jobs:\n  - workload: resnet18\n  - name: pair\n    workload: resnet18\n    parallel: 2\n")


def test_suite_jobs_are_recorded_and_parallel_copies_once_as_their_combined_result(db, tmp_path):
    (tmp_path / "s.yaml").write_text(SUITE)
    res = dnnbench("suite", "run", tmp_path / "s.yaml", "--results", tmp_path / "out", timeout=900)
    assert res.returncode == 0 and "history not updated" not in res.stderr, res.stderr[-3000:]
    listed = _json(dnnbench("history", "list", "-f", "json"))
    assert sorted(r["job"] for r in listed) == ["pair-bs2", "resnet18-bs2"]
    combined = json.loads((tmp_path / "out" / "hist" / "pair-bs2" / "r1" / "result.json").read_text())
    assert len(combined["copies"]) == 1
    res = dnnbench("history", "import", tmp_path / "out", check=0)
    assert "0 imported, 2 already there, 0 updated, 0 unreadable (2 parallel copies" in res.stderr, res.stderr


def _made(i: int, job: str, image: str, day: int, value: float | None, status: str = "ok") -> dict:
    from datetime import datetime, timedelta

    from dnnbench.history.facts import job_key, series_key
    return {"identity": f"{i:064d}", "content_hash": f"{hash((value, status)) & 0xffff:064d}", "run_id": f"r{i}",
            "kind": "run", "job": job, "job_key": job_key(job), "workload": "w", "status": status, "image": image,
            "digest": None, "base": None, "pytorch": "2.4.1", "cuda": None, "cudnn": None, "nccl": None,
            "driver": None, "host": "h", "gpu": "CPU", "gpu_count": 0,
            "started": datetime(2026, 11, 1) + timedelta(days=day, minutes=i), "throughput": value,
            "ci_low": None if value is None else value * 0.99, "ci_high": None if value is None else value * 1.01,
            "unit": "items", "path": f"/r/{i}", "recorded": datetime(2026, 11, 27),
            "series_key": series_key("CPU", image)}


RESULT = st.tuples(st.sampled_from(["a", "b'; DROP TABLE results; --"]), st.sampled_from(["img:1", "img:2", "img:10"]),
                   st.integers(0, 3), st.one_of(st.none(), st.floats(1, 1000)), st.sampled_from(["ok", "ok", "failed"]))


@settings(max_examples=25, deadline=None)
@given(st.lists(RESULT, min_size=1, max_size=30), st.lists(st.tuples(st.integers(0, 29), st.floats(1, 1000)),
                                                           max_size=5))
def test_a_series_read_from_its_sums_is_the_series_of_its_rows(results, rewritten):
    """The sums kept as results are added (and rewritten: a resumed training's result) give the
    same series points as summing the rows themselves (the index path a time window takes)."""
    import tempfile
    from datetime import datetime

    from dnnbench.history.store import Store
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "h.db"))
        rows = [_made(i, *r) for i, r in enumerate(results)]
        store.add(rows)
        again = [dict(rows[i], throughput=v, content_hash=f"{i + 7:064d}") for i, v in rewritten if i < len(rows)]
        store.add(again)
        for job in {r["job"] for r in rows}:
            for by in ("release", "time"):
                summed = store.series(job, by=by)
                counted = store.series(job, by=by, since=datetime(2000, 1, 1))
                assert [(p["image"], p["n"]) for p in summed] == [(p["image"], p["n"]) for p in counted]
                assert [p["throughput"] for p in summed] == pytest.approx([p["throughput"] for p in counted])
        store.close()


@settings(max_examples=25, deadline=None)
@given(st.lists(RESULT, min_size=1, max_size=30), st.integers(1, 35))
def test_the_newest_n_are_the_last_n_of_every_row_and_the_count_is_every_row(results, last):
    """`history --last N` reads the newest N from the index: the same rows as the last N of all
    of them, oldest first; the count the title gives is the number of rows the filter matches."""
    import tempfile

    from dnnbench.history.store import Store
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "h.db"))
        store.add([_made(i, *r) for i, r in enumerate(results)])
        for filters in ({}, {"job": "a"}, {"job": "b'; DROP TABLE results; --", "status": "ok"}, {"image": "img:10"}):
            every = store.select(**filters)
            assert store.select(**filters, limit=last, newest=True) == every[-last:]
            assert store.count(**filters) == len(every)
        store.close()


def test_the_history_table_lists_the_newest_100_and_says_how_many_there_are(db):
    from dnnbench.history.store import Store
    store = Store(str(db))
    store.add([_made(i, "big", "img:1", i % 4, float(i)) for i in range(130)])
    store.close()
    res = dnnbench("history", "--job", "big", "--last", "100", "-f", "json", check=0)
    assert [r["run_id"] for r in _json(res)] == [f"r{i}" for i in sorted(range(130), key=lambda i: (i % 4, i))][-100:]
    table = dnnbench("history", "--job", "big", env={"COLUMNS": "80"}, check=0).stdout
    assert "the newest 100 of 130 results (--last 0: all)" in " ".join(table.split())
    assert len([line for line in table.splitlines() if line.startswith("2026-11-")]) == 100
    assert len(_json(dnnbench("history", "list", "--job", "big", "-f", "json"))) == 130    # a file: every row
    assert len(_json(dnnbench("history", "list", "--job", "big", "--last", "7", "-f", "json"))) == 7
