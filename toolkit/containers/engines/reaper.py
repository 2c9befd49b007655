"""Every process a run starts ends with it, daemons included (host runtime and Apptainer, whose
processes are ours; a container's end with its PID namespace).

Killing the run's process group misses a daemon: a double fork and `setsid` leave the group and
the session, and the kernel hands the orphan to init. So dnnbench makes itself the child
subreaper (prctl PR_SET_CHILD_SUBREAPER, Linux 3.4+): orphans below it come to it instead. A
`Descendants` follows one run's process tree while it runs (once a second, from the job's wait)
and, when the run ends, kills whatever is left of it and reaps it: the processes it saw below the
run, and the orphans handed to dnnbench that are the run's (in its session, carrying its token,
or, with one run going, any that left dnnbench's session after the run started).
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
_adopting: bool | None = None
_active: set[int] = set()          # the roots of the runs being followed in this process
_lock = threading.Lock()


def adopt_orphans() -> bool:
    """Make this process the subreaper of what it starts (once; False where the kernel cannot)."""
    global _adopting
    if _adopting is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _adopting = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            _adopting = False
    return _adopting


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

    def _ours(self, pid: int, st: tuple[int, str, int, str], view: _View) -> bool:
        """Whether an orphan handed to dnnbench belongs to this run."""
        if st[2] == self.root:                # still in the run's session
            return True
        if self.carries_token is not None and self.carries_token(pid):
            return True
        me = view.stat(os.getpid())
        with _lock:
            alone = _active == {self.root}
        # one run going: a process started after the run that left dnnbench's own session is that
        # run's daemon (what dnnbench itself starts stays in its session, or is a run's first process)
        later = self.root_start is not None and int(st[3]) >= int(self.root_start)
        return alone and later and me is not None and st[2] != me[2] and pid not in _active

    def scan(self) -> None:
        """Note every living process below the run, and the orphans of the run handed to us."""
        view = _View()
        alive = [p for p, start in self.seen.items() if (view.stat(p) or (0, "", 0, None))[3] == start]
        todo = [self.root] + alive
        for p in view.children(os.getpid()):
            st = view.stat(p)
            if st and p != self.root and p not in self.seen and p not in _active and self._ours(p, st, view):
                todo.append(p)
        while todo:
            pid = todo.pop()
            st = view.stat(pid)
            if st is not None and (pid != self.root or st[3] == self.root_start):
                if pid not in self.seen:
                    self.seen[pid] = st[3]
                todo += [c for c in view.children(pid) if c not in self.seen]

    def end(self, seconds: float = 10.0) -> list[int]:
        """SIGKILL what is left of the run and reap what comes to us; the pids it killed."""
        killed: list[int] = []
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                self.scan()
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
