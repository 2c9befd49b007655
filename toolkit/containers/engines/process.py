"""A plain process as a supervised job: `apptainer exec ...` or the host runtime.

stdout and stderr are merged into one pipe and drained by one reader, so a chatty stderr can
never fill its pipe and stall the run (spython's stdout-only streaming can). The process gets
its own session, so a terminal's Ctrl-C reaches dnnbench alone, which forwards it once.
"""
from __future__ import annotations

import os
import signal
import subprocess
from typing import Iterator

from dnnbench.errors import DnnbenchError


class ProcessJob:
    def __init__(self, argv: list[str], env: dict | None = None, cwd: str | None = None):
        self.argv, self.env, self.cwd = argv, env, cwd
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        try:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd,
                                         start_new_session=True)
        except OSError as exc:
            raise DnnbenchError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from None

    def lines(self) -> Iterator[str]:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            yield raw.decode("utf-8", errors="replace").rstrip("\r\n")

    def wait(self, timeout: float) -> int | None:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def _signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def interrupt(self) -> None:
        self._signal(signal.SIGINT)

    def stop(self) -> None:
        self._signal(signal.SIGKILL)

    def cleanup(self) -> None:
        if self.proc is not None:
            try:  # the whole group, so no DataLoader worker outlives its run
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
