"""A run's end takes its own processes, daemons included, and nothing else: the orphans of what
the caller starts beside the run (a daemon started on purpose, another run) are never taken for
the run's (toolkit/containers/engines/reaper.py, through the real ProcessJob of the host runtime
and Apptainer)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from dnnbench.containers.engines.process import TOKEN_ENV, ProcessJob
from tests.test_runs_trust import DAEMON, _alive   # a double fork and setsid: {clear}, then {tail}

def _pid(path, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not path.exists():
        time.sleep(0.05)
    return int(path.read_text())


def _run(code, token):
    job = ProcessJob([sys.executable, "-c", code], env={**os.environ, TOKEN_ENV: token})
    job.start()
    return job


def _end(job):
    job.kill()
    job.cleanup()
    return job.left_behind


@pytest.fixture
def daemons():
    pids = []
    yield pids
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_daemon_started_beside_a_run_outlives_the_runs_end(tmp_path, daemons):
    """The caller (here this test, as a notebook or a suite would) starts a daemon on purpose
    while a run goes: it is not the run's, and the run's end leaves it running."""
    job = _run("import time; time.sleep(600)", "t" * 32)
    other = tmp_path / "other.pid"
    subprocess.run([sys.executable, "-c", DAEMON.format(pidfile=str(other), clear="", tail="")], check=True,
                   start_new_session=True, timeout=60)
    daemons.append(_pid(other))
    assert job.wait(1.0) is None        # the run still going: it was looked at
    left = _end(job)
    assert _alive(daemons[0]) and daemons[0] not in left, left


# no token: seen below the run's first process, which ends only once the supervisor has looked
# (the test says so with a file), not after a time
HELD = "while not os.path.exists({go!r}):\n    time.sleep(0.05)"


@pytest.mark.parametrize("clear, held", [
    ("", False),                                  # its first process ends at once: the token finds it
    ("os.environ.clear()", True),
], ids=["root-ends-at-once", "daemon-without-env"])
def test_a_runs_daemon_ends_with_the_run(tmp_path, daemons, clear, held):
    pidfile, go = tmp_path / "daemon.pid", tmp_path / "go"
    tail = HELD.format(go=str(go)) if held else ""
    job = _run(DAEMON.format(pidfile=str(pidfile), clear=clear, tail=tail), "r" * 32)
    daemons.append(_pid(pidfile))
    if held:
        assert job.wait(0.5) is None      # a look while the run goes: its daemon below it
        go.touch()
    while job.wait(0.5) is None:          # the supervisor's looks while the run goes
        pass
    assert _alive(daemons[0])             # the group's end does not reach it: it left the session
    left = _end(job)
    assert daemons[0] in left and not _alive(daemons[0]), left


def test_one_runs_end_leaves_another_runs_daemon(tmp_path, daemons):
    a, b = tmp_path / "a.pid", tmp_path / "b.pid"
    run_a = _run(DAEMON.format(pidfile=str(a), clear="", tail="time.sleep(600)"), "a" * 32)
    run_b = _run(DAEMON.format(pidfile=str(b), clear="", tail="time.sleep(600)"), "b" * 32)
    daemons += [_pid(a), _pid(b)]
    run_a.wait(0.5)
    run_b.wait(0.5)
    assert _end(run_b) == [daemons[1]] and _alive(daemons[0])
    assert _end(run_a) == [daemons[0]]
