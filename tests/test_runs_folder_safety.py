"""The run folder through the file layer: a link, dangling link, FIFO or folder planted as any
file dnnbench keeps in a run folder is refused with one line or replaced, never followed,
written through or blocked on; a forged owner.json never gets an unrelated process killed."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dnnbench.containers.engines.process import process_start
from dnnbench.runs import claim

TINY = ["--batch-size", "2", "--number", "1", "--repeat", "3", "--warmup", "0"]
NAMES = (".lock", ".reserve", "owner.json", "log.txt", "plan.json", "result.json")
KINDS = ("link", "dangling", "fifo", "folder")


def plant(path, kind, victim):
    if kind == "link":
        path.symlink_to(victim)
    elif kind == "dangling":
        path.symlink_to(victim.parent / "created-through-a-link")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_planted_file_is_never_followed_or_blocked_on(tmp_path, name, kind):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("precious\n")
    run_dir = tmp_path / "results" / "r1"
    run_dir.mkdir(parents=True)
    plant(run_dir / name, kind, victim)
    res = subprocess.run([sys.executable, "-m", "dnnbench", "run", "resnet18", "--runtime", "host",
                          "--results", str(tmp_path / "results"), "--run-id", "r1", *TINY],
                         capture_output=True, text=True, timeout=300)
    assert victim.read_text() == "precious\n"                      # never written through
    assert not (outside / "created-through-a-link").exists()       # nothing made outside --results
    assert "Traceback" not in res.stderr
    assert res.returncode in (0, 1, 2), res.stderr
    if res.returncode:
        errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1, res.stderr
    if name == "result.json" or (kind in ("fifo", "folder") and name != "plan.json"):
        assert res.returncode == 2 and (name in res.stderr or "holds a result" in res.stderr), res.stderr


@pytest.fixture
def stranger():
    """An unrelated process group that a forged owner.json points at."""
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield p
    p.kill()
    p.wait()


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_forged_owner_record_does_not_get_a_stranger_killed(tmp_path, stranger):
    run_dir = tmp_path / "results" / "r1"
    run_dir.mkdir(parents=True)
    forged = {"pid": 1, "host": socket.gethostname(), "started": "x", "token": "f" * 32,
              "process": {"pgid": stranger.pid, "start": process_start(stranger.pid)}}
    (run_dir / "owner.json").write_text(json.dumps(forged))
    said = []
    held = claim.claim(run_dir, run_id="r1", say=said.append)
    held.release()
    assert not said
    # ended by our SIGTERM, not by a SIGKILL from the claim, however late the machine shows it
    stranger.terminate()
    assert stranger.wait(timeout=60) == -signal.SIGTERM


def test_a_real_orphan_carrying_the_token_is_killed(tmp_path):
    token = "a" * 32
    orphan = subprocess.Popen(["sleep", "300"], start_new_session=True,
                              env={**os.environ, claim.TOKEN_ENV: token})
    try:
        run_dir = tmp_path / "results" / "r1"
        run_dir.mkdir(parents=True)
        (run_dir / "owner.json").write_text(json.dumps({
            "pid": 1, "host": socket.gethostname(), "token": token,
            "process": {"pgid": orphan.pid, "start": process_start(orphan.pid)}}))
        said = []
        claim.claim(run_dir, run_id="r1", say=said.append).release()
        assert orphan.wait(timeout=30) == -signal.SIGKILL and "killed process group" in said[0]
    finally:
        orphan.kill()


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                   max_size=4), max_leaves=12)


@settings(max_examples=int(os.environ.get("DNNBENCH_HYPOTHESIS_EXAMPLES", 200)), derandomize=True, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.fixed_dictionaries({}, optional={"host": st.just(socket.gethostname()) | st.text(max_size=10),
                                           "token": JSONISH, "process": JSONISH, "container": JSONISH,
                                           "pid": JSONISH}))
def test_any_owner_record_is_data(tmp_path_factory, forged):
    """Whatever an owner.json holds, claiming the folder kills nothing it cannot prove is the
    run's, and fails (if at all) with a DnnbenchError."""
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        if isinstance(forged.get("process"), dict):
            forged["process"].setdefault("pgid", stranger.pid)
            forged["process"].setdefault("start", process_start(stranger.pid))
        forged.pop("container", None)     # the docker path is tested with the engine
        run_dir = tmp_path_factory.mktemp("r") / "run"
        run_dir.mkdir()
        (run_dir / "owner.json").write_text(json.dumps(forged, allow_nan=True))
        claim.claim(run_dir, run_id="run", say=lambda m: None).release()
        assert _alive(stranger.pid)
    finally:
        stranger.kill()
        stranger.wait()
