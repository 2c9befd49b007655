"""The one "host was busy" rule (dnnbench.workloads.busy) and everything that uses it: the
verdict (`host-bound`, no hint to buy a GPU), the run's summary line, report's note, the store's
mark, and `history peers`/`series`/`changes`, which leave marked results out by default, say
how many, and take them with --include-busy. The busy results are the recorded fixture with the
load and CPU time of the run in issue 53 (load 10.2, 28.7 s of CPU in a 160 s window)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dnnbench.workloads import busy, verdict
from tests.helpers import ROOT, cli_inprocess
from tests.history_results import write

FIXTURE = ROOT / "tests" / "fixtures" / "results" / "cpu-suite" / "resnet18-bs4" / "r1" / "result.json"


def loaded(data: dict, load1: float, cpu_share: float, cores: int = 2) -> dict:
    """The result with each timed window recording `load1` and `cpu_share` of its seconds of CPU."""
    data = json.loads(json.dumps(data))
    data["windows"] = [dict(w, load1=load1, cpu_s=w["seconds"] * cpu_share) for w in data["windows"]]
    data["system"] = dict(data.get("system") or {}, cpu_count=cores)
    data.pop("verdict", None)
    return data


def busy_file(path: Path, load1: float = 10.2, cpu_share: float = 28.7 / 160) -> Path:
    path.write_text(json.dumps(loaded(json.loads(path.read_text()), load1, cpu_share)))
    return path


@pytest.mark.parametrize("load1, share, cores, said", [
    (10.2, 28.7 / 160, 2, True),      # issue 53's run: every core taken, the run got 18 % of one
    (10.2, 1.9, 2, False),            # a loaded machine, but the run got its cores
    (0.4, 0.2, 2, False),             # a quiet machine; a run that waits (on a GPU, on I/O)
    (3.0, 0.3, 8, False),             # a load under the cores: there was room
    (8.0, 0.3, 8, True),
    (None, 0.2, 2, None), (4.0, None, 2, None), (4.0, 0.2, None, None),   # not recorded: not judged
])
def test_the_rule(load1, share, cores, said):
    assert busy.judge(load1, share, cores) is said


def test_a_busy_cpu_run_is_host_bound_with_no_gpu_to_buy():
    data = loaded(json.loads(FIXTURE.read_text()), 10.2, 28.7 / 160)
    v = verdict.judge(data)
    assert v["label"] == "host-bound" and "--gpus" not in v["hint"] and "quiet machine" in v["hint"]
    assert v["evidence"][0] == "host busy: load 10.2 on 2 cores, this process 18% of one core"
    assert busy.of_result(data).startswith("the host was busy: load 10.2 on 2 cores, this run's process got 18%")
    quiet = loaded(json.loads(FIXTURE.read_text()), 0.5, 1.8)
    assert verdict.judge(quiet)["label"] == "compute-bound" and busy.of_result(quiet) is None


def test_the_run_summary_and_report_say_it_in_one_line(tmp_path, capsys):
    from dnnbench.results.record import show_outcome
    run = tmp_path / "run"
    run.mkdir()
    busy_file(_copy(FIXTURE, run / "result.json"))
    show_outcome(run, json.loads((run / "result.json").read_text()))
    shown = capsys.readouterr().out
    lines = [line for line in shown.splitlines() if "the host was busy" in line]
    assert len(lines) == 1 and "host-bound" in shown, shown
    code, text, _ = cli_inprocess("report", tmp_path)
    assert code == 0 and "the host was busy: load 10.2 on 2 cores" in " ".join(text.split()), text


def _copy(src: Path, dest: Path) -> Path:
    dest.write_bytes(src.read_bytes())
    return dest


@pytest.fixture(scope="module")
def cluster():
    from tests.postgres import Cluster
    c = Cluster()
    yield c
    c.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    """Eight ok results of one job in the store (SQLite, or a fresh database on a real PostgreSQL),
    two of them on a busy host (slow: 40/s)."""
    db = str(tmp_path / "h.db")
    if request.param == "postgresql":
        import uuid

        from sqlalchemy import create_engine, text
        cluster = request.getfixturevalue("cluster")
        name = f"busy_{uuid.uuid4().hex[:8]}"
        engine = create_engine(cluster.url().replace("postgresql://", "postgresql+psycopg://"),
                               isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text(f"CREATE DATABASE {name}"))
        engine.dispose()
        db = cluster.url().replace("@/postgres?", f"@/{name}?")
    for i in range(8):
        path = write(tmp_path / "res", i, 40.0 if i in (2, 5) else 100.0, image="dnnbench:ngc-24.10")
        if i in (2, 5):
            busy_file(path)
    code, _, err = cli_inprocess("history", "import", tmp_path / "res", "--db", db)
    assert code == 0, err
    return db, tmp_path / "res"


def test_the_store_marks_busy_results(store):
    from dnnbench.history.store import Store
    db, _ = store
    s = Store(db, create=False)
    try:
        marks = sorted((r["run_id"], r["busy"]) for r in s.select(columns=("run_id", "busy")))
    finally:
        s.close()
    assert [m for _, m in marks].count(True) == 2 and all(m is not True for r, m in marks
                                                         if r not in ("h0002-node1", "h0005-node1"))


def test_peers_series_and_changes_leave_busy_results_out_and_say_how_many(store):
    db, res = store
    mine = res / "h0007-node1"
    code, text, _ = cli_inprocess("history", "peers", mine, "--db", db, "--json")
    facts = json.loads(text)
    assert facts["n"] == 5 and facts["left_out_busy"] == 2 and facts["word"] == "normal", facts
    code, text, _ = cli_inprocess("history", "peers", mine, "--db", db, "--include-busy", "--json")
    assert json.loads(text)["n"] == 7 and json.loads(text)["left_out_busy"] == 0
    code, text, _ = cli_inprocess("history", "peers", mine, "--db", db)
    flat = " ".join(text.split())
    assert "left out: 2 result(s) whose host was busy" in flat and "--include-busy" in flat, text
    code, text, err = cli_inprocess("history", "series", "resnet50-bs64", "--db", db, "--format", "json")
    assert sum(p["n"] for p in json.loads(text)) == 6 and "left out: 2 result(s)" in err
    code, text, err = cli_inprocess("history", "series", "resnet50-bs64", "--db", db, "--format", "json",
                                    "--include-busy")
    assert sum(p["n"] for p in json.loads(text)) == 8 and "left out" not in err
    code, text, err = cli_inprocess("history", "changes", "resnet50-bs64", "--db", db, "--format", "json")
    assert code == 0 and json.loads(text) == [] and "left out: 2 result(s)" in err


def test_a_busy_result_says_so_against_its_peers(store):
    db, res = store
    code, text, _ = cli_inprocess("history", "peers", res / "h0005-node1", "--db", db)
    flat = " ".join(text.split())
    assert ": slower" in flat and "the host was busy: load 10.2" in flat, text
