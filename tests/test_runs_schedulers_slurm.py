"""How `slurm --wait` decides that a job has ended (Slurm's answer, not sbatch --wait's return):
squeue's answers scripted by a stand-in on the PATH (the real cluster's requeue test exercises
the same path)."""
import os
import stat
import subprocess
import sys
import time

import pytest
from hypothesis import given, strategies as st

from dnnbench.runs import launch
from dnnbench.runs.schedulers import SCHEDULERS, Watch
from dnnbench.runs.supervise import Outcome

SLURM = SCHEDULERS["slurm"]

# each line: "rc|stdout|stderr", one per squeue call; the last repeats
SQUEUE = """#!/bin/sh
n=$(cat "$STATE/n" 2>/dev/null || echo 0); echo $((n + 1)) > "$STATE/n"
line=$(sed -n "$((n + 1))p" "$STATE/answers"); [ -n "$line" ] || line=$(tail -n 1 "$STATE/answers")
rc=${line%%|*}; rest=${line#*|}; printf '%s\\n' "${rest%%|*}"; printf '%s\\n' "${rest#*|}" >&2; exit "$rc"
"""


class Never:
    count = 0

    def sleep(self, seconds):
        pass   # the two-second second look costs nothing here


@pytest.fixture
def squeue(tmp_path, monkeypatch):
    exe = tmp_path / "bin" / "squeue"
    exe.parent.mkdir()
    exe.write_text(SQUEUE)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STATE", str(tmp_path))

    def answers(*lines):
        (tmp_path / "answers").write_text("\n".join(lines) + "\n")
        (tmp_path / "n").unlink(missing_ok=True)
    return answers


def _watch(done=True):
    """A watch on job 7 whose sbatch --wait has returned (done) or still waits."""
    proc = subprocess.Popen([sys.executable, "-c", "" if done else "import time; time.sleep(60)"])
    if done:
        proc.wait()
    return Watch(SLURM, "7", proc, Never(), time.monotonic())


@pytest.mark.parametrize("answers", [
    ["0|REQUEUED|"],                                    # still Slurm's
    ["1||slurm_load_jobs error: Socket timed out", "0|PENDING|"],   # a busy slurmctld, then pending
    ["0||", "0|PENDING|"],                              # one look missed it: the second sees it
    ["0|COMPLETED|", "0|REQUEUED|"],                    # a passing state of a requeue
])
def test_a_job_slurm_still_holds_is_followed(squeue, answers):
    squeue(*answers)
    watch = _watch()
    assert [watch.ended(), watch.ended()] == [False, False]   # the second within look_s: not asked


@pytest.mark.parametrize("answers", [
    ["0|COMPLETED|"],
    ["0|FAILED|", "0||"],
    ["1||slurm_load_jobs error: Invalid job id specified"],   # purged
])
def test_a_job_that_ended_twice_over_is_let_go(squeue, answers):
    squeue(*answers)
    assert _watch(done=False).ended() is True    # whether or not sbatch --wait has returned


def test_the_states_seen_are_kept_in_order(squeue, monkeypatch):
    monkeypatch.setattr(SLURM, "look_s", 0)
    squeue("0|PENDING|", "0|RUNNING|", "0|RUNNING|", "0|REQUEUED|", "0|PENDING|", "0|RUNNING|", "0|COMPLETED|",
           "0|COMPLETED|")
    watch = _watch()
    assert [watch.ended() for _ in range(7)] == [False] * 6 + [True]
    assert watch.states == ["PENDING", "RUNNING", "REQUEUED", "PENDING", "RUNNING", "COMPLETED"]


def test_a_silent_slurmctld_is_asked_for_a_bounded_time(squeue, monkeypatch):
    squeue("1||slurm_load_jobs error: Unable to contact slurm controller")
    monkeypatch.setattr(SLURM, "answer_s", 0.5)
    monkeypatch.setattr(SLURM, "look_s", 0)
    waiting, done = _watch(done=False), _watch()
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        assert waiting.ended() is False       # sbatch --wait still waits: its return is awaited
        if done.ended():
            break
    else:
        pytest.fail("a silent slurmctld was asked for longer than answer_s after sbatch returned")
    waiting.proc.kill()


@pytest.mark.parametrize("line, code", [("ExitCode=0:0", 0), ("ExitCode=3:0", 3), ("ExitCode=0:9", 137),
                                        ("", 5)])
def test_the_exit_code_is_slurms_and_sbatchs_when_slurm_has_none(tmp_path, monkeypatch, line, code):
    exe = tmp_path / "scontrol"
    exe.write_text(f"#!/bin/sh\necho 'JobId=7 JobState=COMPLETED {line} RunTime=00:01:00'\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert SLURM.exit_code("7", 5) == code


@given(raw=st.integers(0, 255), status=st.sampled_from(["ok", "error", "nan", "oom", "interrupted"]),
       ended=st.sampled_from(["exited", "interrupted", "timeout"]))
def test_the_command_exits_with_a_documented_code_whatever_slurm_recorded(raw, status, ended):
    """Slurm's ExitCode becomes 128 + signal for a killed job (143 when it cancels a job for a
    node failure): `slurm --wait`, like `run`, exits with a documented code, and a run that
    did not end ok never exits 0."""
    code = launch.documented_exit(Outcome(raw, ended, 1.0), status)
    assert code in launch.DOCUMENTED_EXITS
    assert (code == 0) == (raw == 0 and status == "ok" and ended == "exited")
    if ended == "exited" and raw in (128 + 9, 128 + 15, 247, 255):
        assert code == 1


def test_the_wait_after_a_cancel_takes_the_same_two_looks(squeue):
    squeue("0||", "0|RUNNING|")      # one look missed it: the job still runs, so it is not over
    assert SLURM.ended("7", Never()) is False
    squeue("0|CANCELLED|")
    assert SLURM.ended("7", Never()) is True
