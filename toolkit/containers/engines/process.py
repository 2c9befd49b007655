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

from dnnbench.containers.engines import reaper
from dnnbench.errors import DnnbenchError


TOKEN_ENV = "DNNBENCH_RUN_TOKEN"   # set by a run in what it starts: proof that a process is the run's


def process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def carries(pid: int, name: str, value: str) -> bool:
    """Whether process `pid` was started with NAME=value in its environment (bounded read)."""
    try:
        fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY | os.O_CLOEXEC)
        try:
            data = os.read(fd, 1 << 20)
        finally:
            os.close(fd)
    except OSError:
        return False
    return f"{name}={value}".encode() in data.split(b"\0")


def kill_orphan(identity: dict, token: str | None) -> bool:
    """SIGKILL a dead owner's process group, only if its leader is still the same process and
    carries the run's token in its environment: an owner record is data, and a forged one
    naming an unrelated process group must not get it killed."""
    pgid, start = identity.get("pgid"), identity.get("start")
    if not isinstance(pgid, int) or pgid <= 1 or start is None or process_start(pgid) != start:
        return False
    if not isinstance(token, str) or len(token) < 16 or not carries(pgid, TOKEN_ENV, token):
        return False
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class ProcessJob:
    output_goes_with_cleanup = False

    def __init__(self, argv: list[str], env: dict | None = None, cwd: str | None = None):
        self.argv, self.env, self.cwd = argv, env, cwd
        self.proc: subprocess.Popen | None = None
        self.descendants: reaper.Descendants | None = None
        self.left_behind: list[int] = []     # processes of the run found alive after it, and killed

    def carry(self, name: str, value: str) -> None:
        """NAME=value in the process's environment (the caller's, where none was given)."""
        self.env = {**(self.env if self.env is not None else os.environ), name: value}

    def started_as(self) -> dict | None:
        """The process group, so a later run can stop it if this one dies."""
        return {"process": self.identity} if self.identity else None

    def create(self) -> None:
        """Nothing to make before the process starts."""

    def start(self) -> None:
        try:   # a daemon the run starts stays below its first process, not ours or init's (see reaper)
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd,
                                         start_new_session=True, preexec_fn=reaper.own_orphans)
        except OSError as exc:
            raise DnnbenchError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from None
        token = (self.env or {}).get(TOKEN_ENV)
        self.descendants = reaper.Descendants(self.proc.pid, (lambda pid: carries(pid, TOKEN_ENV, token))
                                              if token else None)

    def lines(self) -> Iterator[str]:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            yield raw.decode("utf-8", errors="replace").rstrip("\r\n")

    def wait(self, timeout: float) -> int | None:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            if self.descendants is not None:
                self.descendants.scan()
            return None

    def _signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    @property
    def identity(self) -> dict | None:
        """What names the process group for whoever finds it orphaned: its id and the
        leader's start time (so a reused pid is never taken for it)."""
        if self.proc is None:
            return None
        return {"pgid": self.proc.pid, "start": process_start(self.proc.pid)}

    def interrupt(self) -> None:
        self._signal(signal.SIGINT)

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def cleanup(self) -> None:
        if self.proc is not None:
            try:  # the whole group, so no DataLoader worker outlives its run
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
        if self.descendants is not None:    # what left the group: daemons, setsid children
            self.left_behind = self.descendants.end()
            self.descendants = None
