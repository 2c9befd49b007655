"""One owner per run folder.

A run holds an exclusive flock on RESULTS/<run-id>/.lock for its whole life (the kernel drops
it when the owner dies, however it dies) and records itself in owner.json: pid, host, start
time, and what it started (the container's name, or the process group). A second run of the
same id while the first lives is refused; a run that finds the lock free but an owner record
left behind knows that owner died, and removes what it left running before it takes over, so
an orphan can never write into the new run's folder.

A claimed folder also holds .reserve, space set aside at the start so that a run whose disk
fills up can still write its last log line and result.json.

Every file here goes through the file layer: a link or FIFO planted as .lock, .reserve or
owner.json is refused (one error line), never followed, written through or blocked on. And
owner.json is data, never trusted: a process group is killed as an orphan only when its leader
carries this run folder's secret token in its environment (DNNBENCH_RUN_TOKEN, set by the run
that started it), so a forged owner.json cannot make a run kill an unrelated process.
"""
from __future__ import annotations

import errno
import fcntl
import os
import secrets
import socket
import time
from pathlib import Path
from typing import Callable

from dnnbench import locks
from dnnbench.containers.engines import process
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio, schema

LOCK = locks.LOCK
OWNER = "owner.json"
TOKEN_ENV = process.TOKEN_ENV
RESERVE = ".reserve"
RESERVE_BYTES = 256 * 1024


def why(exc: OSError) -> str:
    """An OSError in words, a full disk by its usual name."""
    return "no space left on device" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))


def _owner_text(owner: dict | None) -> str:
    if not owner:
        return "another dnnbench"
    return (f"pid {owner.get('pid', '?')} on {owner.get('host', '?')}, started {owner.get('started', '?')}")


def read_owner(run_dir: Path) -> dict | None:
    """The owner record, or None when there is none or it is not one (a file is data)."""
    try:
        data = fileio.read_json(str(run_dir / OWNER), max_bytes=64 * 1024)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class Claim:
    """A held run folder; release() (or the owner's death) lets it go."""

    def __init__(self, run_dir: Path, fd: int, made: bool):
        self.run_dir, self._fd, self._made = run_dir, fd, made
        # what proves a process is this run's: it is in the environment of what the run starts
        self.token = secrets.token_hex(16)
        self.owner = {"pid": os.getpid(), "host": socket.gethostname(),
                      "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "token": self.token}

    def record(self, **facts) -> None:
        """Add facts (what the run started) to owner.json; written whole or not at all."""
        self.owner.update({k: v for k, v in facts.items() if v is not None})
        schema.write_atomic(str(self.run_dir / OWNER), self.owner)

    def reserve(self) -> None:
        """Set space aside for the last log line and result.json (see free_reserve)."""
        fd = fileio.open_fd(str(self.run_dir / RESERVE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            os.ftruncate(fd, 0)
            try:
                os.posix_fallocate(fd, 0, RESERVE_BYTES)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                os.write(fd, b"\0" * RESERVE_BYTES)
        finally:
            os.close(fd)

    def free_reserve(self) -> None:
        try:
            fileio.remove_file(str(self.run_dir / RESERVE))
        except OSError:
            pass

    def abandon(self) -> None:
        """Undo a claim that could not be set up: the files it made, the folder if it made it."""
        for name in (RESERVE, OWNER, LOCK):
            try:
                fileio.remove_file(str(self.run_dir / name))
            except OSError:
                pass
        if self._made:
            try:
                self.run_dir.rmdir()
            except OSError:
                pass
        self.release()

    def release(self) -> None:
        self.free_reserve()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def claim(run_dir: Path, *, run_id: str, say: Callable[[str], None], resume: bool = False) -> Claim:
    """Own run_dir for this process, or one `error:` line saying who owns it. A dead owner's
    leftovers (container, process group) are removed first, and `say` names them."""
    made = not os.path.lexists(run_dir)
    try:
        fileio.make_dirs(str(run_dir), root=str(run_dir.parent))
        fd = locks.open_lock(run_dir)
    except fileio.NotRegularFile as exc:
        raise DnnbenchError(f"run folder {run_dir}: {exc.filename} is {exc.kind}, not what dnnbench "
                            f"keeps there: remove it or choose another --run-id") from None
    except OSError as exc:
        raise DnnbenchError(f"results dir {run_dir.parent} is not writable: {why(exc)}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise DnnbenchError(f"run {run_id} is already running ({_owner_text(read_owner(run_dir))}): "
                            f"one run per --run-id; choose another") from None
    held = Claim(run_dir, fd, made)
    try:
        previous = read_owner(run_dir)
        if previous is not None:
            remove_orphans(previous, run_dir, say)
        if os.path.lexists(run_dir / schema.RESULT_FILE) and not resume:
            raise DnnbenchError(f"{run_dir} already holds a result: choose another --run-id")
        held.record(run_id=run_id)
    except DnnbenchError:
        held.release()
        raise
    except fileio.NotRegularFile as exc:
        held.release()
        raise DnnbenchError(f"run folder {run_dir}: {exc.filename} is {exc.kind}, not what dnnbench "
                            f"keeps there: remove it or choose another --run-id") from None
    except OSError as exc:
        held.abandon()
        raise DnnbenchError(f"results dir {run_dir} is not writable: {why(exc)}") from None
    return held


def remove_orphans(previous: dict, run_dir: Path, say: Callable[[str], None]) -> None:
    """What a dead owner left running: its container, or its process group on this host."""
    who = _owner_text(previous)
    if previous.get("host") not in (None, socket.gethostname()):
        say(f"the previous run in {run_dir} ({who}) ended without finishing; what it started on "
            f"{previous.get('host')} was not checked")
        return
    name = previous.get("container")
    if isinstance(name, str):
        from dnnbench.containers.engines import docker
        try:
            api = docker.client().api
        except DnnbenchError:
            say(f"the previous run in {run_dir} ({who}) died; docker is unreachable, so its container "
                f"{name} may still exist")
            return
        if docker.remove_owned(api, name, previous.get("owner"), str(run_dir)):
            say(f"removed container {name}, left running by a dead run ({who})")
    elif isinstance(previous.get("process"), dict):
        from dnnbench.containers.engines.process import kill_orphan
        if kill_orphan(previous["process"], previous.get("token")):
            say(f"killed process group {previous['process'].get('pgid')}, left running by a dead run ({who})")
