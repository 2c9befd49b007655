"""Watch a running job: stream its output into a log, enforce a timeout, and on Ctrl-C or
SIGTERM interrupt it gently (SIGINT, so the harness writes its partial result); a second
Ctrl-C, or a run that ignores the first, escalates to SIGTERM and then SIGKILL, each step said
on screen. Whatever happens, the job's container or process group is removed. The same loop
serves containers and plain processes.

Signals are read from a count (runs/interrupts.py) at safe points: before the job is created,
between create and start, and once a second while it runs, so none can land between two
engine calls.
"""
from __future__ import annotations

import errno
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Protocol

from dnnbench.runs.interrupts import Interrupts
from dnnbench.workloads import fileio

KILL_GRACE = 10.0   # seconds between SIGTERM and SIGKILL


class Job(Protocol):
    def create(self) -> None: ...                        # make it (a container), start nothing
    def start(self) -> None: ...
    def lines(self) -> Iterator[str]: ...
    def wait(self, timeout: float) -> int | None: ...   # exit code, or None while running
    def interrupt(self) -> None: ...                     # SIGINT
    def terminate(self) -> None: ...                     # SIGTERM
    def kill(self) -> None: ...                          # SIGKILL
    def cleanup(self) -> None: ...                       # remove what the job left (container), by name


@dataclass
class Outcome:
    exit_code: int
    ended: str            # exited | interrupted | timeout
    seconds: float
    started: bool = True  # False: interrupted or refused before the job started
    log_full: str | None = None   # why log.txt stopped (a full disk), when it did


class RunLog:
    """log.txt, appended line by line. A full disk stops the writing, never the run: the
    first failure is kept (with the byte it happened at) for the result and the final note."""

    def __init__(self, path: Path):
        self.path = path
        self.failed: str | None = None
        self._fh = None
        self._lock = threading.Lock()
        try:
            self._fh = fileio.open_append(str(path))
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        if self.failed is None:
            where = os.lstat(self.path).st_size if os.path.lexists(self.path) else 0
            why = "no space left on device" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
            self.failed = f"{why} writing {self.path} (it stops at byte {where})"

    def write(self, line: str) -> None:
        with self._lock:
            if self._fh is None or self.failed:
                return
            try:
                self._fh.write(line + "\n")
                self._fh.flush()
            except OSError as exc:
                self._fail(exc)

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                try:
                    self._fh.close()
                except OSError as exc:
                    self._fail(exc)
                self._fh = None


def _say_nothing(message: str) -> None:
    pass


def supervise(job: Job, *, log_path: Path, on_line: Callable[[str], None] = lambda s: None,
              timeout: float | None = None, grace: float = 30.0, stop: Interrupts | None = None,
              say: Callable[[str], None] = _say_nothing, kill_grace: float = KILL_GRACE,
              on_start: Callable[[], None] = lambda: None) -> Outcome:
    """Run `job` to the end; every output line goes to log_path and on_line, every step taken
    on a signal or timeout to the log and `say`. `stop` counts the signals (see interrupts)."""
    stop = stop or Interrupts()
    started_at = time.monotonic()
    log = RunLog(log_path)

    def note(message: str) -> None:
        from dnnbench.console import visible
        log.write(f"[dnnbench] {visible(message)}")
        say(message)

    def pump() -> None:
        try:
            for line in job.lines():
                log.write(line)
                on_line(line)
        except Exception as exc:  # noqa: BLE001 - a broken stream must not hide the exit code
            log.write(f"[dnnbench] log stream ended: {exc}")

    reader = threading.Thread(target=pump, name="dnnbench-log", daemon=True)
    ended, code, started = "exited", None, False
    try:
        if not stop.count:
            job.create()
        if not stop.count:
            job.start()
            started = True
            reader.start()
            on_start()
        while started and code is None and not stop.count:
            left = None if timeout is None else timeout - (time.monotonic() - started_at)
            if left is not None and left <= 0:
                ended = "timeout"
                break
            code = job.wait(1.0 if left is None else min(1.0, left))
        if stop.count and code is None:
            ended = "interrupted"
        if not started and ended == "interrupted":
            note(f"interrupted ({stop.last}) before the run started")
            code = 130
        elif code is None:
            code = _stop(job, ended, stop, note, grace, kill_grace)
    finally:
        try:
            # the output first, then the removal: a container that exited at once is read whole
            # only while it still exists (a slow reader once found it gone, its lines lost)
            if started and getattr(job, "output_goes_with_cleanup", False):
                reader.join(timeout=30.0 if code is not None else 5.0)
            job.cleanup()
            left = getattr(job, "left_behind", None)
            if left:
                note(f"ended {len(left)} process{'es' if len(left) > 1 else ''} the run left running "
                     f"(pid {', '.join(map(str, left[:8]))}): a run's processes end with it")
        finally:
            if started:
                reader.join(timeout=5.0)
            log.close()
    return Outcome(exit_code=137 if code is None else code, ended=ended, started=started,
                   seconds=time.monotonic() - started_at, log_full=log.failed)


def _stop(job: Job, why: str, stop: Interrupts, note: Callable[[str], None], grace: float,
          kill_grace: float) -> int | None:
    """SIGINT, then SIGTERM, then SIGKILL: each after its grace or at the next signal."""
    seen = stop.count
    note(f"{why} ({stop.last or 'timeout'}): SIGINT sent, the run has {grace:.0f}s to write its result "
         f"(Ctrl-C again stops it now)" if why == "interrupted" else
         f"{why}: SIGINT sent, the run has {grace:.0f}s to write its result")
    job.interrupt()
    code = _wait(job, grace, stop, seen)
    if code is not None:
        return code
    seen = stop.count
    note(f"stopping: SIGTERM sent, SIGKILL in {kill_grace:.0f}s (Ctrl-C again kills it now)")
    job.terminate()
    code = _wait(job, kill_grace, stop, seen)
    if code is not None:
        return code
    note("killing the run (SIGKILL)")
    job.kill()
    return _wait(job, 15.0, None, 0)


def _wait(job: Job, seconds: float, stop: Interrupts | None, seen: int) -> int | None:
    """The exit code, or None after `seconds` or as soon as one more signal arrives."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        code = job.wait(min(1.0, max(0.1, deadline - time.monotonic())))
        if code is not None:
            return code
        if stop is not None and stop.count > seen:
            return None
    return None
