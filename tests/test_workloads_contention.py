"""The run's wait for a CPU (workloads/contention.py) as the windows record it, and its faults:
a kernel without schedstat, worker processes that come and go, counters that wrap or go
backwards, a cgroup that cannot be read. Whatever happens, nothing wrong is stored and the
result is still written."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from dnnbench.results import numbers
from dnnbench.workloads import contention, schema, stats, windows
from dnnbench.workloads.result import Result

SECOND = 10 ** 9


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_this_kernel_counts_the_run_and_its_workers():
    """Real counters: a worker started before the window, one born in it, one that ends in it."""
    tasks = contention.Tasks()
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    old, gone = subprocess.Popen(sleeper), subprocess.Popen(sleeper)
    try:
        opened, t0 = tasks.read(), time.perf_counter()
        assert opened[0] == "schedstat" and (os.getpid(), os.getpid()) in opened[1]
        assert {old.pid, gone.pid} <= {pid for pid, _ in opened[1]}
        gone.kill()
        gone.wait()
        born = subprocess.Popen(["true"])
        _spin(0.3)
        born.wait()
        closed = tasks.read()
        wall = time.perf_counter() - t0
        w = contention.window(opened, closed, wall)
        assert 0.29 <= w["cpu_s"] and 0 <= w["run_queue_s"] <= wall, w
        assert gone.pid not in {pid for pid, _ in closed[1]} and old.pid in {pid for pid, _ in closed[1]}
    finally:
        old.kill()
        old.wait()


def _reading(**tasks) -> tuple:
    return "schedstat", {(1, int(k[1:])): v for k, v in tasks.items()}


def test_one_busy_thread_waits_what_it_waited():
    w = contention.window(_reading(t1=(0, 0)), _reading(t1=(SECOND, SECOND)), 2.0)
    assert w == {"cpu_s": 1.0, "run_queue_s": 1.0}


def test_an_idle_helper_thread_does_not_count():
    before = _reading(t1=(0, 0), t2=(0, 0))
    after = _reading(t1=(SECOND, SECOND), t2=(SECOND // 100, SECOND // 100))
    w = contention.window(before, after, 2.0)
    assert 0.98 < w["run_queue_s"] < 1.0 and abs(w["cpu_s"] - 1.01) < 1e-6, w


def test_several_busy_threads_give_wall_time_only_and_say_why():
    """Threads that wait for each other: one's wait stalls the others or not at all; no count
    tells the time lost, so no wait is stored."""
    before = _reading(t1=(0, 0), t2=(0, 0))
    after = _reading(t1=(SECOND, SECOND), t2=(SECOND // 2, SECOND // 2))
    assert contention.window(before, after, 2.0) == {"cpu_s": 1.5, "wall_only": contention.BUSY_ONLY}


def test_a_counter_that_wraps_is_a_small_step():
    top = 2 ** 64
    w = contention.window(_reading(t1=(top - SECOND // 2, top - 1000)), _reading(t1=(SECOND // 2, 499_000_000)), 1.0)
    assert abs(w["cpu_s"] - 1.0) < 1e-6 and abs(w["run_queue_s"] - 0.499) < 1e-6, w


def test_a_counter_that_goes_backwards_or_jumps_stores_nothing():
    """A reused thread id or a garbled read: the window keeps wall time only (no run_queue_s,
    and cpu_s from the process clock), never a wait it did not have."""
    assert contention.window(_reading(t1=(5 * SECOND, 5 * SECOND)), _reading(t1=(4 * SECOND, 6 * SECOND)), 2.0) == {}
    assert contention.window(_reading(t1=(0, 0)), _reading(t1=(SECOND, 9 * SECOND)), 2.0) == {}
    assert contention.window(None, _reading(t1=(0, 0)), 1.0) == {}
    assert contention.window(_reading(t1=(0, 0)), ("cgroup", (0, 0)), 1.0) == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2 ** 64 - 1), st.integers(0, 2 ** 64 - 1),
                          st.integers(0, 2 ** 64 - 1), st.integers(0, 2 ** 64 - 1)), min_size=1, max_size=6),
       st.floats(1e-3, 100))
def test_whatever_the_counters_say_the_wait_fits_the_window(tasks, wall):
    before = ("schedstat", {(1, i): (a, b) for i, (a, b, _, _) in enumerate(tasks)})
    after = ("schedstat", {(1, i): (c, d) for i, (_, _, c, d) in enumerate(tasks)})
    w = contention.window(before, after, wall)
    assert w == {} or "wall_only" in w or (0 <= w["run_queue_s"] <= wall and w["cpu_s"] >= 0)


def _fake_proc(root, pid: int, schedstat: str | None, cgroup: str | None = None):
    task = root / str(pid) / "task" / str(pid)
    task.mkdir(parents=True)
    (root / str(pid) / "stat").write_text(f"{pid} (python) S 1 1 1")
    if schedstat is not None:
        (task / "schedstat").write_text(schedstat)
    if cgroup is not None:
        (root / str(pid) / "cgroup").write_text(cgroup)


def test_a_kernel_without_schedstat_gives_wall_time_only_and_the_result_is_written(tmp_path, capfd):
    proc = tmp_path / "proc"
    _fake_proc(proc, os.getpid(), None)
    clock = windows.Clock(tasks=contention.Tasks(proc=str(proc), cgroup_root=str(tmp_path / "none")))
    windows._said.clear()
    result = Result("r1", "vae", "images")
    for _ in range(3):
        clock.open()
        _spin(0.01)
        result["windows"].append(clock.close(8))
    result["status"] = "ok"
    assert result.close(str(tmp_path / "out"))
    data = schema.read(tmp_path / "out" / schema.RESULT_FILE)
    assert all("run_queue_s" not in w and w["cpu_s"] > 0 for w in data["windows"])
    assert data["throughput"]["corrected"]["value"] is None
    assert data["throughput"]["corrected"]["why"] == stats.WALL_ONLY
    assert numbers.run_headline(data)["corrected"] is None
    said = [line for line in capfd.readouterr().err.splitlines() if "wall time only" in line]
    assert said == [f"note: {contention.WALL_ONLY}"]     # one line, not one a window


def test_a_container_that_cannot_read_its_cgroup_gives_wall_time_only(tmp_path):
    proc, group = tmp_path / "proc", tmp_path / "cgroup" / "run"
    _fake_proc(proc, os.getpid(), None, cgroup="0::/run\n")
    tasks = contention.Tasks(proc=str(proc), cgroup_root=str(tmp_path / "cgroup"))
    assert tasks.read() is None                  # the cgroup's folder is not there
    group.mkdir(parents=True)
    (group / "cgroup.procs").write_text(f"{os.getpid()}\n")
    (group / "cpu.stat").write_text("usage_usec 1000\n")
    (group / "cpu.pressure").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=250\n")
    assert tasks.read() == ("cgroup", (1_000_000, 250_000))
    (group / "cpu.pressure").chmod(0)
    if not os.access(group / "cpu.pressure", os.R_OK):   # root reads it anyway
        assert tasks.read() is None
    (group / "cpu.pressure").chmod(0o644)
    (group / "cgroup.procs").write_text(f"{os.getpid()}\n1\n")    # another process shares it
    assert tasks.read() is None


def test_the_cgroup_wait_is_a_share_of_the_window():
    opened, closed = ("cgroup", (0, SECOND)), ("cgroup", (SECOND, SECOND + SECOND // 4))
    assert contention.window(opened, closed, 1.0) == {"cpu_s": 1.0, "run_queue_s": 0.25}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 1000), st.floats(0.01, 100), st.floats(0, 1)), min_size=1, max_size=12))
def test_the_corrected_figure_is_never_below_wall_time(parts):
    timed = [{"items": n, "seconds": s, "run_queue_s": s * share} for n, s, share in parts]
    wall, fixed = stats.headline(timed)["value"], stats.corrected(timed)
    assert fixed["value"] >= wall * (1 - 1e-9) and 0 <= fixed["contention"] <= 1
    quiet = stats.corrected([dict(w, run_queue_s=0.0) for w in timed])
    assert abs(quiet["value"] - wall) <= 1e-9 * wall and quiet["contention"] == 0
    assert schema.validate({**_valid(), "windows": timed}) == []


def _valid() -> dict:
    return {"schema_version": schema.SCHEMA_VERSION, "run_id": "r", "workload": "vae", "status": "ok",
            "message": None, "options": {}, "unit": "images/s", "throughput": schema.throughput([]),
            "windows": [], "loss": [], "system": {}, "started": "x", "ended": None, "world_size": 1, "ranks": []}


def test_a_wait_that_is_not_a_number_of_seconds_is_refused_on_read():
    bad = {**_valid(), "windows": [{"items": 1, "seconds": 1.0, "run_queue_s": -1.0}]}
    assert any("run_queue_s" in p for p in schema.validate(bad))
