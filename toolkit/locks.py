"""Locks before anything is rewritten or removed.

Every command that removes or rewrites a folder dnnbench manages (a run folder, a dataset
folder, a suite's results) first holds that folder's exclusive flock: on the folder itself,
or for a run folder on RUN/.lock, the lock its owning run holds for its whole life. The
kernel drops it when the holder dies, however it dies, so a lock is never stale and never needs
to be broken by hand. A lock file is opened through the file layer: a planted link or FIFO
named .lock is refused, never followed or blocked on; its holder writes who it is into it, only
so that a refused second command can say whom it waits for.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from pathlib import Path

from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

LOCK = ".lock"


def why(exc: OSError) -> str:
    """An OSError in words, a full disk by its usual name."""
    return "no space left on device" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))


def holder_text(folder: Path) -> str:
    """Who holds folder's lock, in words (what the holder wrote; data, never trusted)."""
    try:
        who = fileio.read_json(str(folder / LOCK), max_bytes=4096)
    except (OSError, ValueError):
        who = None
    if not isinstance(who, dict):
        return "another dnnbench"
    return f"pid {who.get('pid', '?')} on {who.get('host', '?')}, since {who.get('since', '?')}"


class FolderLock:
    """A held lock; release() (or the holder's death) lets it go."""

    def __init__(self, folder: Path, fd: int):
        self.folder, self.fd = folder, fd

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "FolderLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def open_lock(folder: Path) -> int:
    """The descriptor of folder/.lock, created if missing; never a link or a FIFO."""
    return fileio.open_fd(str(folder / LOCK), os.O_RDWR | os.O_CREAT)


def _open_folder(folder: Path) -> int:
    """The folder itself as the lock: nothing is written into a dataset or suite folder (a
    finished `data prepare` rerun stays a true no-op). A link is refused."""
    if not fileio.is_real_dir(str(folder)):
        raise fileio.NotRegularFile(str(folder), fileio.kind_at(str(folder)), "a folder")
    return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def hold(folder: Path, *, what: str, wait_s: float = 0.0, in_file: bool = False) -> FolderLock:
    """Hold folder's lock, or one `error:` line naming `what` (and its holder when known).
    `folder` must exist. The lock is the folder itself, or with in_file its .lock file (a run
    folder's, the one its owning run holds). With wait_s, wait that long for a holder first."""
    try:
        fd = open_lock(folder) if in_file else _open_folder(folder)
    except fileio.NotRegularFile as exc:
        raise DnnbenchError(f"{exc.filename} is {exc.kind}, not what dnnbench locks: remove it or "
                            f"choose another folder") from None
    except OSError as exc:
        raise DnnbenchError(f"cannot lock {folder}: {why(exc)}") from None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.monotonic() >= deadline:
                os.close(fd)
                who = f" ({holder_text(folder)})" if in_file else " by another dnnbench"
                raise DnnbenchError(f"{what} is in use{who}: wait for it to finish") from None
            time.sleep(0.2)
    if not in_file:
        return FolderLock(folder, fd)
    try:
        me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                         "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, me, 0)
    except OSError:
        pass    # who holds it is only for messages; a full disk must not stop the lock
    return FolderLock(folder, fd)
