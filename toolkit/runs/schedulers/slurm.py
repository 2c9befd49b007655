"""Slurm's commands behind the scheduler interface: sbatch submits (--parsable; --wait for a
waiter), squeue polls, scancel signals and cancels, scontrol has the recorded exit code."""
from __future__ import annotations

import subprocess
from pathlib import Path

from dnnbench import external
from dnnbench.console import info
from dnnbench.errors import DnnbenchError
from dnnbench.runs import lost_nodes
from dnnbench.runs.schedulers.base import Scheduler


class Slurm(Scheduler):
    name = "slurm"
    script = "job.sbatch"
    submit_command = "sbatch"
    # a requeued job passes through REQUEUED, which squeue leaves out of its default listing
    # (hence --states=all)
    live = frozenset({"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD",
                      "REQUEUE_FED", "SUSPENDED", "RESIZING", "SIGNALING", "STAGE_OUT"})

    def submit(self, script: Path) -> str:
        res = external.call(["sbatch", "--parsable", str(script)], what="sbatch", timeout=self.answer_s)
        if res.returncode != 0:
            raise DnnbenchError(f"sbatch refused {script}: {(res.stderr or res.stdout).strip()}")
        return res.stdout.strip().split(";")[0]

    def submit_waiting(self, script: Path) -> tuple[str, subprocess.Popen]:
        proc = subprocess.Popen(["sbatch", "--parsable", "--wait", str(script)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        assert proc.stdout is not None and proc.stderr is not None   # both PIPEs
        job = (proc.stdout.readline() or "").strip().split(";")[0]
        if not job.isdigit():
            proc.wait()
            raise DnnbenchError(f"sbatch refused {script}: {(proc.stderr.read() or job).strip()}")
        return job, proc

    def state(self, job: str) -> str | None:
        try:
            res = external.call(["squeue", "-h", "-j", job, "--states=all", "-o", "%T"], what="squeue",
                                timeout=self.answer_s)
        except DnnbenchError:
            return None
        if res.returncode != 0:   # "Invalid job id": purged; anything else (a busy slurmctld): no answer
            return "" if "invalid job id" in res.stderr.lower() else None
        states = res.stdout.split()
        return states[0] if states else ""

    def _scancel(self, *args: str) -> None:
        try:
            external.call(["scancel", *args], what="scancel", timeout=self.answer_s)
        except DnnbenchError as exc:
            info(str(exc))

    def signal(self, job: str, name: str) -> None:
        self._scancel(f"--signal={name}", "--full", job)

    def cancel(self, job: str) -> None:
        self._scancel(job)

    def exit_code(self, job: str, fallback: int | None) -> int:
        code, _, sig = lost_nodes.job_fields(job).get("ExitCode", "").partition(":")
        if code.isdigit() and sig.isdigit():
            return 128 + int(sig) if int(sig) else int(code)
        return fallback if fallback is not None else 1

    def shown_by(self, job: str) -> str:
        return f"`squeue -j {job}`"


SCHEDULER = Slurm()
