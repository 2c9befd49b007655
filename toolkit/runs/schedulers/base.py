"""What every batch scheduler does for a placement (make the job, submit, poll, wait, cancel),
and the following and cancelling built on it, the same for every scheduler: whether the
scheduler has let a job go is asked of the scheduler itself (twice, a few seconds apart: a
requeue passes through states one look can miss), never read from the submitting command's
return."""
from __future__ import annotations

import abc
import shutil
import subprocess
import time
from pathlib import Path

from dnnbench.console import info


class Scheduler(abc.ABC):
    """One batch scheduler. `live`: the states of a job it has not let go; `answer_s`: how long
    one of its commands may take before its controller counts as wedged; `look_s`/`look_late_s`:
    how often a followed job's state is asked (the later after five minutes: a day-long job asks
    a few thousand times, not 86,400); `cancel_grace`: seconds a job has after SIGINT to write
    its partial result."""
    name: str
    script: str                 # the job script's file name in the run folder
    submit_command: str         # what must be on PATH to submit
    live: frozenset[str]
    answer_s = 60.0
    look_s, look_late_s = 2.0, 15.0
    cancel_grace = 30.0

    def available(self) -> bool:
        return shutil.which(self.submit_command) is not None

    @abc.abstractmethod
    def submit(self, script: Path) -> str:
        """Submit the job script; its job id. One line (DnnbenchError) when it is refused."""

    @abc.abstractmethod
    def submit_waiting(self, script: Path) -> tuple[str, subprocess.Popen]:
        """Submit, with a waiter process that returns when the scheduler's own wait does (in its
        own session: a terminal's Ctrl-C reaches dnnbench alone, which cancels the job)."""

    @abc.abstractmethod
    def state(self, job: str) -> str | None:
        """The job's state ("" once the scheduler no longer lists it); None: no answer."""

    @abc.abstractmethod
    def signal(self, job: str, name: str) -> None:
        """Send the signal (INT, TERM) to every step of the job."""

    @abc.abstractmethod
    def cancel(self, job: str) -> None:
        """Cancel the job."""

    @abc.abstractmethod
    def exit_code(self, job: str, fallback: int | None) -> int:
        """The job's exit code as the scheduler recorded it (128 + signal for a killed job);
        `fallback` (the waiter's) when it has none."""

    @abc.abstractmethod
    def shown_by(self, job: str) -> str:
        """The command a user runs to see the job in the queue."""

    def let_go(self, job: str, stop, seen=lambda state: state) -> bool | None:
        """True: the scheduler has let the job go (ended, or no longer listed), seen by two looks
        two seconds apart; False: it still holds it; None: its controller did not answer."""
        state = seen(self.state(job))
        if state is None or state in self.live:
            return None if state is None else False
        stop.sleep(2.0)
        state = seen(self.state(job))
        return None if state is None else state not in self.live

    def ended(self, job: str, stop) -> bool:
        """Let go; not when the controller did not answer (the caller asks again, within its bound)."""
        return self.let_go(job, stop) is True

    def wait_for_end(self, job: str, seconds: float, stop, seen: int, follow) -> bool:
        """True once the job has left the queue; False after `seconds` or at one more signal."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            follow()
            if self.ended(job, stop):
                return True
            if stop.count > seen:
                return False
            stop.sleep(0.5)
        return self.ended(job, stop)

    def stop_job(self, job: str, stop, follow) -> None:
        """SIGINT to every step of the job; cancel it if it has not ended within the grace (or
        at the next Ctrl-C); then wait, bounded, until the scheduler has let it go."""
        seen = stop.count
        info(f"interrupted: SIGINT sent to job {job}, which has {self.cancel_grace:.0f}s to write its result "
             f"(Ctrl-C again cancels it now)")
        self.signal(job, "INT")
        if self.wait_for_end(job, self.cancel_grace, stop, seen, follow):
            return
        info(f"cancelling job {job}")
        self.cancel(job)
        if not self.wait_for_end(job, 120.0, stop, stop.count, follow):
            info(f"job {job} is still in the queue after cancelling it: {self.shown_by(job)} shows it")


class Watch:
    """Whether the scheduler has let a submitted job go, asked every look_s (look_late_s after
    the first five minutes); the states seen, in order, go into the result. A controller that
    does not answer is asked again; once the waiter has returned too, for answer_s at most."""

    def __init__(self, scheduler: Scheduler, job: str, proc: subprocess.Popen, stop, started: float):
        self.scheduler, self.job, self.proc, self.stop, self.started = scheduler, job, proc, stop, started
        self.states: list[str] = []
        self._next = 0.0
        self._silent: float | None = None

    def _seen(self, state: str | None) -> str | None:
        if state and (not self.states or self.states[-1] != state):
            self.states.append(state)
        return state

    def ended(self) -> bool:
        now = time.monotonic()
        if now < self._next:
            return False
        s = self.scheduler
        self._next = now + (s.look_s if now - self.started < 300 else s.look_late_s)
        gone = s.let_go(self.job, self.stop, self._seen)
        if gone is not None:
            self._silent = None
            return gone
        if self._silent is None:
            self._silent = now
        return self.proc.poll() is not None and now - self._silent >= s.answer_s
