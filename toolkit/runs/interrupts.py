"""Ctrl-C, SIGTERM and SIGHUP during a run, turned into a count that the supervising loop reads.

A KeyboardInterrupt raised at a random point can land inside docker-py (whose create is two
API calls), requests, rich or a lock, and leave a half-made container, a held lock or no
result behind. So while a run is owned, the handlers only count; the loop that owns the run
acts on the count at points where acting is safe, and bounded waits make it act within a
second.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupts:
    """How many stop signals arrived (the first interrupts, later ones escalate)."""

    def __init__(self) -> None:
        self.count = 0
        self.last: str | None = None
        self._arrived = threading.Event()

    def _on_signal(self, signum, frame) -> None:
        self.count += 1
        self.last = signal.Signals(signum).name
        self._arrived.set()

    def sleep(self, seconds: float) -> None:
        """Sleep, waking early when a signal arrives."""
        self._arrived.wait(seconds)
        self._arrived.clear()


_active: Interrupts | None = None


@contextmanager
def caught() -> Iterator[Interrupts]:
    """Count stop signals instead of raising, for the life of the block. In a thread other
    than the main one (suite copies) no handler can be installed: the block shares the main
    thread's count when there is one, else gets one that never fires."""
    global _active
    if _active is not None:
        yield _active
        return
    if threading.current_thread() is not threading.main_thread():
        yield Interrupts()
        return
    counts = Interrupts()
    old = {sig: signal.signal(sig, counts._on_signal) for sig in SIGNALS}
    _active = counts
    try:
        yield counts
    finally:
        _active = None
        for sig, handler in old.items():
            signal.signal(sig, handler)
