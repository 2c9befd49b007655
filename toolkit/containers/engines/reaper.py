"""Every process a run starts ends with it, daemons included (host runtime and Apptainer, whose
processes are ours; a container's end with its PID namespace), and nothing else does.

Killing the run's process group misses a daemon: a double fork and `setsid` leave the group and
the session, and the kernel hands the orphan to the nearest subreaper, or init. So the run's first
process is made the child subreaper of its own tree (prctl PR_SET_CHILD_SUBREAPER, Linux 3.4+, in
the child before exec, which keeps it): the run's orphans stay below it. dnnbench itself adopts
nothing, so the orphans of what else it or its caller starts (another run, a daemon started on
purpose) are never taken for the run's. A `Descendants` follows one run's tree while it runs
(once a second, from the job's wait) and, when the run ends, kills and reaps what is left of it:
the processes it saw below the run, and those anywhere that carry the run's token or are in its
session (a daemon whose parent ended between two looks).
"""
from __future__ import annotations

import ctypes
import errno
import os
import signal
import threading
import time
from typing import Callable

PR_SET_CHILD_SUBREAPER = 36
_active: set[int] = set()          # the roots of the runs being followed in this process
_lock = threading.Lock()
_prctl: Callable[..., int] | None
try:   # bound before any fork: the child only makes the call
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _prctl = None


def own_orphans() -> None:
    """Popen's preexec_fn for a run's first process: it becomes the subreaper of its own tree
    (the setting survives exec), so what the run double-forks stays below it. A kernel without
    it leaves the process as it is."""
    if _prctl is not None:
        _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _stat(pid: int) -> tuple[int, str, int, str] | None:
    """(parent, state, session, start time) of a process, from /proc/PID/stat; None once gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0].decode(), int(fields[3]), fields[19].decode()


def _table() -> dict[int, tuple[int, str, int, str]]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                out[int(name)] = st
    return out


# /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN, most kernels): a tree is walked by reading
# only its own processes; without it, every process's stat is read once per scan
_CHILDREN_FILES = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


class _View:
    """One look at the process table: each process's stat and children, read once."""

    def __init__(self):
        self._stats: dict[int, tuple[int, str, int, str] | None] = {}
        self._kids: dict[int, list[int]] | None = None
        if not _CHILDREN_FILES:
            self._stats = dict(_table())
            self._kids = {}
            for pid, st in self._stats.items():
                self._kids.setdefault(st[0], []).append(pid)

    def stat(self, pid: int) -> tuple[int, str, int, str] | None:
        if pid not in self._stats and self._kids is None:
            self._stats[pid] = _stat(pid)
        return self._stats.get(pid)

    def children(self, pid: int) -> list[int]:
        if self._kids is not None:
            return self._kids.get(pid, [])
        out: list[int] = []
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return out
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    out += [int(x) for x in fh.read().split()]
            except (OSError, ValueError):
                pass
        return out


class Descendants:
    """The processes one run started, followed from its first process (`root`)."""

    def __init__(self, root: int, carries_token: Callable[[int], bool] | None = None):
        self.root, self.carries_token = root, carries_token   # whether a pid has the run's token
        st = _stat(root)
        self.root_start = st[3] if st else None
        self.seen: dict[int, str] = {}       # pid -> start time (a reused pid is not ours)
        with _lock:
            _active.add(root)

    def _strays(self) -> list[int]:
        """The run's processes outside its tree: anywhere, started since the run, in its session
        or carrying its token (one whose parent ended before a look saw it below the run)."""
        out = []
        for pid, st in _table().items():
            if pid in self.seen or pid == os.getpid() or pid in _active or self.root_start is None:
                continue
            if int(st[3]) >= int(self.root_start) and (
                    st[2] == self.root or (self.carries_token is not None and self.carries_token(pid))):
                out.append(pid)
        return out

    def scan(self, strays: bool = False) -> None:
        """Note every living process below the run (and, with `strays`, the run's processes
        outside its tree)."""
        view = _View()
        alive = [p for p, start in self.seen.items() if (view.stat(p) or (0, "", 0, None))[3] == start]
        todo = [self.root] + alive + (self._strays() if strays else [])
        while todo:
            pid = todo.pop()
            st = view.stat(pid)
            if st is not None and (pid != self.root or st[3] == self.root_start):
                if pid not in self.seen:
                    self.seen[pid] = st[3]
                todo += [c for c in view.children(pid) if c not in self.seen]

    def end(self, seconds: float = 10.0) -> list[int]:
        """SIGKILL what is left of the run and reap those that are our children; the pids it killed."""
        killed: list[int] = []
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                self.scan(strays=True)
                left = []
                for pid, start in list(self.seen.items()):
                    st = _stat(pid)
                    if st is None or st[3] != start:
                        del self.seen[pid]
                        continue
                    if st[0] == os.getpid() and pid != self.root:
                        self._reap(pid)
                    if st[1] in ("Z", "X"):
                        continue
                    left.append(pid)
                    try:
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                    except OSError:
                        pass
                if not left:
                    break
                time.sleep(0.05)
        finally:
            with _lock:
                _active.discard(self.root)
        return sorted(set(killed) - {self.root})

    @staticmethod
    def _reap(pid: int) -> None:
        try:
            os.waitpid(pid, os.WNOHANG)
        except OSError as exc:
            if exc.errno != errno.ECHILD:
                raise
