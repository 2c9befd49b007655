"""Watch a running job: stream its output into a log, enforce a timeout, and on Ctrl-C or
SIGTERM interrupt it gently (SIGINT, so the harness writes its partial result), then stop it,
and always clean up. The same loop serves containers and plain processes."""
from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Protocol


class Job(Protocol):
    def start(self) -> None: ...
    def lines(self) -> Iterator[str]: ...
    def wait(self, timeout: float) -> int | None: ...   # exit code, or None while running
    def interrupt(self) -> None: ...                     # SIGINT
    def stop(self) -> None: ...                          # harder: SIGTERM/SIGKILL
    def cleanup(self) -> None: ...                       # remove what the job left (container)


@dataclass
class Outcome:
    exit_code: int
    ended: str            # exited | interrupted | timeout
    seconds: float


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def supervise(job: Job, *, log_path: Path, on_line: Callable[[str], None] = lambda s: None,
              timeout: float | None = None, grace: float = 30.0) -> Outcome:
    """Run `job` to the end; every output line goes to log_path and on_line."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    ended = "exited"
    code: int | None = None
    old_term = signal.signal(signal.SIGTERM, _raise_interrupt) if threading.current_thread() is threading.main_thread() else None
    with open(log_path, "a", encoding="utf-8", errors="replace") as log:
        def pump() -> None:
            try:
                for line in job.lines():
                    log.write(line + "\n")
                    log.flush()
                    on_line(line)
            except Exception as exc:  # noqa: BLE001 - a broken stream must not hide the exit code
                log.write(f"[dnnbench] log stream ended: {exc}\n")

        reader = threading.Thread(target=pump, name="dnnbench-log", daemon=True)
        try:
            job.start()
            reader.start()
            try:
                while code is None:
                    left = None if timeout is None else timeout - (time.monotonic() - started)
                    if left is not None and left <= 0:
                        ended = "timeout"
                        break
                    code = job.wait(1.0 if left is None else min(1.0, left))
            except KeyboardInterrupt:
                ended = "interrupted"
            if code is None:
                log.write(f"[dnnbench] {ended}: sending SIGINT, the run has {grace:.0f}s to write its result\n")
                job.interrupt()
                try:
                    code = _wait(job, grace)
                except KeyboardInterrupt:  # a second Ctrl-C: stop now
                    code = None
                if code is None:
                    job.stop()
                    code = _wait(job, 15.0)
        finally:
            try:
                job.cleanup()
            finally:
                if old_term is not None:
                    signal.signal(signal.SIGTERM, old_term)
        reader.join(timeout=5.0)
    if code is None:
        code = 137
    return Outcome(exit_code=code, ended=ended, seconds=time.monotonic() - started)


def _wait(job: Job, seconds: float) -> int | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        code = job.wait(min(1.0, max(0.1, deadline - time.monotonic())))
        if code is not None:
            return code
    return None
