"""How `slurm --wait` decides that a job has ended once sbatch --wait returned: squeue's answers
scripted by a stand-in on the PATH (the real cluster's requeue test exercises the same path)."""
import os
import stat

import pytest

from dnnbench.runs import slurm

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


@pytest.mark.parametrize("answers", [
    ["0|REQUEUED|"],                                    # still Slurm's
    ["1||slurm_load_jobs error: Socket timed out", "0|PENDING|"],   # a busy slurmctld, then pending
    ["0||", "0|PENDING|"],                              # one look missed it: the second sees it
    ["0|COMPLETED|", "0|REQUEUED|"],                    # a passing state of a requeue
])
def test_a_job_slurm_still_holds_is_followed(squeue, answers):
    squeue(*answers)
    assert slurm._in_queue("7", Never()) is True


@pytest.mark.parametrize("answers", [
    ["0|COMPLETED|"],
    ["0|FAILED|", "0||"],
    ["1||slurm_load_jobs error: Invalid job id specified"],   # purged
])
def test_a_job_that_ended_twice_over_is_let_go(squeue, answers):
    squeue(*answers)
    assert slurm._in_queue("7", Never()) is False


def test_a_silent_slurmctld_is_asked_for_a_bounded_time(squeue, monkeypatch):
    squeue("1||slurm_load_jobs error: Unable to contact slurm controller")
    monkeypatch.setattr(slurm, "SLURM_S", 0.5)
    assert slurm._in_queue("7", Never()) is False


def test_the_wait_after_a_cancel_takes_the_same_two_looks(squeue):
    squeue("0||", "0|RUNNING|")      # one look missed it: the job still runs, so it is not over
    assert slurm._job_ended("7", Never()) is False
    squeue("0|CANCELLED|")
    assert slurm._job_ended("7", Never()) is True
