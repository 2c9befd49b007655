"""A run is dependable: a signal at any phase (before the container exists, between docker's
create and start, while it streams) leaves result.json (status interrupted) and no container
or process; a second Ctrl-C escalates, saying so; one run id has one owner, and a dead owner's
orphans are removed by the next; a full results disk ends in one `error:` line and a result.

Signals are real (sent to the real dnnbench process, or to this one at a chosen phase of the
real engine's job), waits are for lines or events with generous bounds, never fixed sleeps:
scripts/test.sh runs these a second time beside a CPU hog."""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from dnnbench.runs import interrupts, launch
from tests.helpers import dnnbench, one_line_error

pytestmark = pytest.mark.signals
TINY = ["--batch-size", "2", "--number", "1", "--repeat", "2", "--warmup", "1"]
LONG = ["--batch-size", "2", "--number", "5", "--repeat", "1000"]
WAIT = 600          # seconds at most for a line on a busy 2-core machine; a hang still fails


def _id(prefix: str) -> str:
    """A run id no other checkout on this docker daemon uses (container names are global)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _containers(run_id: str) -> list[str]:
    return subprocess.run(["docker", "ps", "-a", "-q", "--filter", f"label=io.dnnbench.run-id={run_id}"],
                          capture_output=True, text=True, check=True).stdout.split()


def _until(predicate, what: str, seconds: float = WAIT):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"waited {seconds:.0f}s for {what}")


def _in_log(run_dir, text: str) -> bool:
    log = run_dir / "log.txt"
    return log.exists() and text in log.read_text(errors="replace")


def _start(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dnnbench", "run", "resnet18", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(run_dir) -> dict:
    return json.loads((run_dir / "result.json").read_text())


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --- a signal at each phase, sent to this process by the real job at that phase ---------

class SignalAt:
    """A real engine job that sends this process SIGINT at one phase of its life."""

    def __init__(self, job, phase: str):
        self._job, self._phase = job, phase

    def __getattr__(self, name):
        return getattr(self._job, name)

    def _at(self, phase: str) -> None:
        if phase == self._phase:
            os.kill(os.getpid(), signal.SIGINT)

    def create(self):
        self._at("before create")
        self._job.create()
        self._at("between create and start")   # docker: the container exists, not started

    def start(self):
        self._job.start()
        self._at("just after start")


def _execute_with_signal(monkeypatch, plan, phase):
    real = launch.job_for
    monkeypatch.setattr(launch, "job_for", lambda p: (lambda jc: (SignalAt(jc[0], phase), jc[1]))(real(p)))
    try:
        return launch.execute(plan, quiet=True)
    except KeyboardInterrupt:
        pytest.fail(f"SIGINT {phase} escaped as KeyboardInterrupt: no result written, nothing cleaned")


PHASES = ["before create", "between create and start", "just after start"]


@pytest.mark.engine
@pytest.mark.parametrize("phase", PHASES)
def test_docker_signal_at_each_phase_records_interrupted_and_removes_the_container(
        phase, built_image, tmp_path, monkeypatch):
    run_id = _id("phase")
    plan = launch.build_plan(launch.RunOptions(workload="resnet18", image=built_image, results=tmp_path,
                                               run_id=run_id, batch_size=2, number=5, repeat=1000))
    data, code = _execute_with_signal(monkeypatch, plan, phase)
    assert code == 130 and data["status"] == "interrupted"
    assert _result(tmp_path / run_id)["status"] == "interrupted"
    assert _containers(run_id) == []
    if phase != "just after start":
        assert data["host"]["ended"] == "interrupted" and "before the run started" in data["message"]


@pytest.mark.parametrize("phase", PHASES)
def test_host_signal_at_each_phase_records_interrupted_and_leaves_no_process(phase, tmp_path, monkeypatch):
    plan = launch.build_plan(launch.RunOptions(workload="resnet18", runtime="host", results=tmp_path,
                                               run_id="p", batch_size=2, number=5, repeat=1000))
    data, code = _execute_with_signal(monkeypatch, plan, phase)
    assert code == 130 and _result(tmp_path / "p")["status"] == "interrupted"
    owner = json.loads((tmp_path / "p" / "owner.json").read_text())
    if "process" in owner:
        assert not _alive(owner["process"]["pgid"])


@pytest.mark.engine
def test_ctrl_c_as_the_container_is_made_end_to_end(built_image, tmp_path):
    """SIGINT to `dnnbench run` the moment docker reports the container created: whichever
    step it lands in, the run ends 130 with an interrupted result and no container."""
    run_id = _id("early")
    events = subprocess.Popen(["docker", "events", "--filter", f"label=io.dnnbench.run-id={run_id}",
                               "--filter", "event=create", "--format", "{{.Action}}"],
                              stdout=subprocess.PIPE, text=True)
    try:
        proc = _start("--image", built_image, "--results", tmp_path, "--run-id", run_id, "--quiet", *LONG)
        ready, _, _ = select.select([events.stdout], [], [], WAIT)
        assert ready and events.stdout.readline().strip() == "create", proc.stderr.read()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT)
    finally:
        events.kill()
        events.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and _result(tmp_path / run_id)["status"] == "interrupted"
    assert _containers(run_id) == []


# --- escalation ------------------------------------------------------------------------

STUBBORN = ("import signal, sys, time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "{term}"
            "print('stubborn %s' % 'up', flush=True)\n"   # a line the command line does not hold
            "time.sleep(3600)\n")


def _stubborn_plan(tmp_path, run_id, ignore_term):
    plan = launch.build_plan(launch.RunOptions(workload="resnet18", runtime="host", results=tmp_path,
                                               run_id=run_id))
    term = "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else ""
    plan.argv = [sys.executable, "-c", STUBBORN.format(term=term)]
    return plan


def _signal_on(run_dir, lines: list[str]):
    """In a thread: for each line in turn, wait for it in the run's log, then SIGINT us."""
    def send():
        for line in lines:
            deadline = time.monotonic() + WAIT
            while not _in_log(run_dir, line) and time.monotonic() < deadline:
                time.sleep(0.1)
            if interrupts._active is None:   # the run is over: a SIGINT now would stop pytest
                return
            os.kill(os.getpid(), signal.SIGINT)
    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("ignore_term", [False, True])
def test_second_ctrl_c_escalates_to_sigterm_then_sigkill_and_says_so(tmp_path, ignore_term, capfd):
    plan = _stubborn_plan(tmp_path, "esc", ignore_term)
    run_dir = tmp_path / "esc"
    # Ctrl-C once the run is up; again once the SIGINT it ignores has been sent; a third time
    # (when it ignores SIGTERM too) once SIGTERM has been sent.
    lines = ["stubborn up", "SIGINT sent"] + (["SIGTERM sent"] if ignore_term else [])
    sender = _signal_on(run_dir, lines)
    try:
        data, code = launch.execute(plan, quiet=True)
    except KeyboardInterrupt:
        pytest.fail("a second Ctrl-C escaped as KeyboardInterrupt")
    sender.join(timeout=WAIT)
    assert code == 130 and data["status"] == "interrupted"
    log = (run_dir / "log.txt").read_text()
    assert "SIGINT sent" in log and "stopping: SIGTERM sent, SIGKILL in" in log
    assert ("killing the run (SIGKILL)" in log) == ignore_term
    screen = capfd.readouterr().err
    assert "SIGTERM sent" in screen                        # said on screen too, even with --quiet
    owner = json.loads((run_dir / "owner.json").read_text())
    assert not _alive(owner["process"]["pgid"])


def test_sigterm_interrupts_a_host_run_like_ctrl_c(tmp_path):
    proc = _start("--runtime", "host", "--results", tmp_path, "--run-id", "t", *LONG)
    _until(lambda: _in_log(tmp_path / "t", "warmup done"), "warmup")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 130, err
    assert _result(tmp_path / "t")["status"] == "interrupted"
    assert "SIGINT sent" in err


# --- one owner per run id --------------------------------------------------------------

def test_a_second_run_of_a_live_run_id_is_refused_and_the_first_is_untouched(tmp_path):
    # LONG, then Ctrl-C: the first is still running when the second asks, however slow the
    # machine makes the second's start (a short first run once ended before it)
    first = _start("--runtime", "host", "--results", tmp_path, "--run-id", "same", "--quiet", *LONG)
    _until(lambda: _in_log(tmp_path / "same", "warmup done"), "the first run's warmup")
    line = one_line_error(dnnbench("run", "resnet18", "--runtime", "host", "--results", tmp_path,
                                   "--run-id", "same", *TINY), "already running", f"pid {first.pid}")
    assert "choose another" in line
    first.send_signal(signal.SIGINT)
    out, err = first.communicate(timeout=WAIT)
    assert first.returncode == 130, err
    assert _result(tmp_path / "same")["status"] == "interrupted"
    log = (tmp_path / "same" / "log.txt").read_text()
    assert log.count("$ ") == 1 and log.count("warmup done") == 1


def test_a_refused_run_leaves_no_empty_folder(tmp_path):
    one_line_error(dnnbench("run", "resnet18", "--image", "dnnbench-no-such:image", "--results", tmp_path,
                            "--run-id", "x"))
    assert not (tmp_path / "x").exists()


@pytest.mark.engine
def test_a_killed_runs_orphan_container_is_removed_by_the_next_run(built_image, tmp_path):
    run_id = _id("orphan")
    first = _start("--image", built_image, "--results", tmp_path, "--run-id", run_id, "--quiet", *LONG)
    _until(lambda: _in_log(tmp_path / run_id, "warmup done"), "the first run's warmup")
    first.kill()                                  # SIGKILL: no handler runs, the container lives on
    first.wait()
    assert _containers(run_id), "the container should outlive a SIGKILLed dnnbench"
    res = dnnbench("run", "resnet18", "--image", built_image, "--results", tmp_path, "--run-id", run_id,
                   "--quiet", *TINY, timeout=WAIT, check=0)
    assert f"removed container dnnbench-{run_id}" in res.stderr and f"pid {first.pid}" in res.stderr
    data = _result(tmp_path / run_id)
    assert data["status"] == "ok" and data["host"]["exit_code"] == 0
    assert _containers(run_id) == []


def test_a_killed_runs_orphan_process_is_stopped_by_the_next_run(tmp_path):
    first = _start("--runtime", "host", "--results", tmp_path, "--run-id", "o", "--quiet", *LONG)
    _until(lambda: _in_log(tmp_path / "o", "warmup done"), "the first run's warmup")
    first.kill()
    first.wait()
    orphan = json.loads((tmp_path / "o" / "owner.json").read_text())["process"]["pgid"]
    assert _alive(orphan), "the harness should outlive a SIGKILLed dnnbench"
    # held still, as an orphan that is busy computing: its next line would meet the dead reader's
    # closed pipe and end it with a result of its own, so what the next run finds is not a race
    os.killpg(orphan, signal.SIGSTOP)
    res = dnnbench("run", "resnet18", "--runtime", "host", "--results", tmp_path, "--run-id", "o", "--quiet",
                   *TINY, timeout=WAIT, check=0)
    assert f"killed process group {orphan}" in res.stderr
    assert not _alive(orphan)
    assert _result(tmp_path / "o")["status"] == "ok"


# --- a full results disk ---------------------------------------------------------------

@pytest.fixture()
def small_disk(tmp_path):
    """A real tmpfs of limited size (mounting needs root, as CI and the dev setup run)."""
    if os.geteuid() != 0:
        pytest.fail("the disk-full tests mount a tmpfs and need root (CI and scripts/test.sh run as root)")
    point = tmp_path / "disk"
    point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(point)], check=True)
    yield point
    subprocess.run(["umount", "-l", str(point)], check=False)


def _fill(folder) -> None:
    with open(folder / "filler", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass


@pytest.mark.parametrize("runtime", ["host", pytest.param("docker", marks=pytest.mark.engine)])
def test_results_disk_filling_up_mid_run_gives_one_error_line_and_a_result(runtime, small_disk, request):
    where = ["--runtime", "host"] if runtime == "host" else ["--image", request.getfixturevalue("built_image")]
    run_id = _id("full")
    run_dir = small_disk / run_id
    proc = _start(*where, "--results", small_disk, "--run-id", run_id, "--quiet",
                  "--batch-size", "2", "--number", "1", "--repeat", "8", "--warmup", "1")
    _until(lambda: _in_log(run_dir, "warmup done"), "warmup")
    _fill(small_disk)                             # the disk fills up while the run goes on
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 1, err
    assert "Traceback" not in out + err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "ran out of space" in errors[0] and str(run_dir) in errors[0], err
    data = _result(run_dir)
    assert data["status"] == "error" and "ran out of space" in data["message"]
    last = (run_dir / "log.txt").read_text().splitlines()[-1]
    assert "ran out of space" in last and str(run_dir) in last
    if runtime == "docker":
        assert _containers(run_id) == []


def test_a_container_that_exits_at_once_is_read_whole_before_it_is_removed(tmp_path):
    """The run's lines are read before cleanup removes the container, however late the reader
    gets to them (on a busy machine a container that failed at once was removed first, and its
    one line, the reason, was lost)."""
    from dnnbench.runs.supervise import supervise

    class Quick:
        output_goes_with_cleanup = True
        removed = False

        def create(self):
            pass

        def start(self):
            pass

        def lines(self):
            time.sleep(1.0)                   # the reader comes late: the job has long ended
            if self.removed:
                raise RuntimeError("404 Client Error: No such container")
            yield "OSError: [Errno 30] Read-only file system: '/data/intruder'"

        def wait(self, timeout):
            return 1

        def interrupt(self):
            pass

        terminate = kill = interrupt

        def cleanup(self):
            self.removed = True

    job = Quick()
    outcome = supervise(job, log_path=tmp_path / "log.txt")
    assert outcome.exit_code == 1 and job.removed
    assert "Read-only file system" in (tmp_path / "log.txt").read_text()
