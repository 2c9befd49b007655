"""How long a run waited for a CPU while it could have run: the part of a timed window another
process took, so a figure can be corrected for it (`stats.corrected`).

Linux keeps, per thread, the nanoseconds it ran on a CPU and the nanoseconds it sat runnable in
a run queue (/proc/<pid>/task/<tid>/schedstat, fields 1 and 2). Read at the two edges of a
window for every thread of the run and of its worker processes (DataLoader workers, found as
children at each edge), the window gets:

  cpu_s         the CPU seconds of the run's tasks in the window
  run_queue_s   the run's run-queue delay: each task's wait weighted by its share of the run's
                runnable time (cpu + wait); for a run of one busy thread, its wait. The weights
                keep an idle helper thread (telemetry, a prefetch thread) from counting.

It holds where one thread carries the run (a GPU job's Python thread, a CPU job on one thread,
a job that sleeps between its steps): wall - wait is its time on a quiet machine. Where two or
more of the run's tasks were busy at once (OpenMP threads that wait for each other, DataLoader
workers beside the main thread), one task's wait stalls the others while they sleep or spin, or
not at all (a worker that keeps ahead): no count tells the time lost, so such a window records
no run_queue_s and says why (BUSY_ONLY): its figure is wall time only.

Where the kernel keeps no per-thread statistics, the run's own cgroup (v2) `cpu.pressure`
(`some`: the time at least one of its tasks waited) stands in, but only when the cgroup holds
nothing but the run (a shared session's cgroup would count other processes' waits). Else the
window records neither, and its figure is wall time only.

Nothing read here may make a figure wrong: a counter that goes backwards or jumps beyond what
a window can hold (a reused thread id, a wrapped counter read wrongly) drops the window's
run_queue_s; a thread that ends inside the window takes its wait with it (the delay reads low,
so the corrected figure errs towards wall time, never past it).

Python 3.7+, stdlib only.
"""
import os

from . import fileio

WRAP = 1 << 64       # the kernel's counters are unsigned 64-bit nanoseconds
EDGE_S = 0.05        # seconds a reading at a window's edge may lie outside its timed span
WALL_ONLY = "the kernel gives no per-task wait for a CPU here (no schedstat, no cgroup cpu.pressure of " \
            "the run's own): throughput is wall time only"
BUSY_ONLY = "several of the run's threads or processes were busy at once: their wait for a CPU does not " \
            "tell the time lost, throughput is wall time only (one thread: OMP_NUM_THREADS=1)"
BUSY_SHARE = 0.25    # a task runnable this share of the busiest one's runnable time counts as busy
BUSY_WALL = 0.05     # ... and this share of the window's wall time (a helper that woke a few times does not)


def _text(path):
    try:
        return fileio.read_text(path, max_bytes=1 << 16, encoding="ascii", errors="replace")
    except (OSError, ValueError):   # ended, hidden, not kept: no reading, never an error
        return None


class Tasks(object):
    """The run's threads and worker processes under `proc`, and their scheduler counters."""

    def __init__(self, pid=None, proc="/proc", cgroup_root="/sys/fs/cgroup"):
        self.pid = pid or os.getpid()
        self.proc, self.cgroup_root = proc, cgroup_root

    def _threads(self, pid):
        try:
            return [int(t) for t in os.listdir("%s/%d/task" % (self.proc, pid)) if t.isdigit()]
        except OSError:         # the process ended between two reads
            return []

    def _children(self, pid, tids):
        found, readable = [], False
        for tid in tids:
            text = _text("%s/%d/task/%d/children" % (self.proc, pid, tid))
            if text is not None:
                readable = True
                found += [int(x) for x in text.split() if x.isdigit()]
        return found if readable else None

    def _parents(self):
        """{pid: ppid} of every process (kernels without .../children: a scan of /proc)."""
        out = {}
        try:
            names = [n for n in os.listdir(self.proc) if n.isdigit()]
        except OSError:
            return out
        for name in names:
            text = _text("%s/%s/stat" % (self.proc, name))
            if text and ")" in text:
                fields = text.rsplit(")", 1)[1].split()
                if len(fields) > 1 and fields[1].isdigit():
                    out[int(name)] = int(fields[1])
        return out

    def pids(self):
        """The run's process and its descendants, now."""
        seen, todo, parents = [], [self.pid], None
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.append(pid)
            kids = self._children(pid, self._threads(pid))
            if kids is None:
                if parents is None:
                    parents = self._parents()
                kids = [p for p, pp in parents.items() if pp == pid]
            todo += kids
        return seen

    def schedstat(self):
        """{(pid, tid): (run_ns, wait_ns)} of every thread of the run; None when the run's own
        main thread has no readable schedstat (the kernel keeps none, /proc is hidden)."""
        out = {}
        for pid in self.pids():
            for tid in self._threads(pid):
                fields = (_text("%s/%d/task/%d/schedstat" % (self.proc, pid, tid)) or "").split()
                try:
                    out[(pid, tid)] = (int(fields[0]), int(fields[1]))
                except (IndexError, ValueError):
                    continue    # ended between the listing and the read, or not kept
        return out if (self.pid, self.pid) in out else None

    def cgroup(self):
        """(cpu usage ns, 'some' wait ns) of the run's own cgroup v2; None when it is not the
        run's alone or cannot be read (a container without its cgroup mounted)."""
        line = [x for x in (_text("%s/%d/cgroup" % (self.proc, self.pid)) or "").splitlines() if x.startswith("0::")]
        if not line:
            return None
        folder = os.path.join(self.cgroup_root, line[0][3:].strip().lstrip("/"))
        procs, pressure, usage = (_text(os.path.join(folder, name)) for name in ("cgroup.procs", "cpu.pressure", "cpu.stat"))
        if procs is None or pressure is None or usage is None:
            return None
        members = set(int(x) for x in procs.split() if x.isdigit())
        if not members or not members <= set(self.pids()):
            return None     # other processes share it: their waits would be counted as the run's
        try:
            some = [x for x in pressure.splitlines() if x.startswith("some ")][0]
            total = int([f for f in some.split() if f.startswith("total=")][0][6:])
            used = int([x.split()[1] for x in usage.splitlines() if x.startswith("usage_usec ")][0])
        except (IndexError, ValueError):
            return None
        return used * 1000, total * 1000

    def read(self):
        """One edge's reading: ("schedstat", {...}), ("cgroup", (cpu, wait)) or None."""
        counters = self.schedstat()
        if counters is not None:
            return "schedstat", counters
        group = self.cgroup()
        return ("cgroup", group) if group is not None else None


def _step(before, after, limit_ns):
    """after - before of one unsigned 64-bit counter (a wrap is a small step); None when the
    step is more than a window can hold (a counter that went backwards, a reused id)."""
    step = (after - before) % WRAP
    return step if step <= limit_ns else None


def window(opened, closed, wall_s):
    """{"cpu_s", "run_queue_s"} of a window from its two readings (Tasks.read); {} when either
    edge had none or a counter cannot be trusted, {"cpu_s", "wall_only": why} when several
    tasks were busy (the window keeps wall time only)."""
    if not opened or not closed or opened[0] != closed[0]:
        return {}
    limit = int((wall_s + 2 * EDGE_S) * 1e9)
    if opened[0] == "cgroup":
        cpu = _step(opened[1][0], closed[1][0], limit * (os.cpu_count() or 1))
        wait = _step(opened[1][1], closed[1][1], limit)
        if cpu is None or wait is None:
            return {}
        return {"cpu_s": cpu / 1e9, "run_queue_s": min(wait / 1e9, wall_s)}
    before, after = opened[1], closed[1]
    spans, trusted = [], True
    for key, (run1, wait1) in after.items():
        run0, wait0 = before.get(key, (0, 0))     # a task born in the window: all of its counters
        run, wait = _step(run0, run1, limit), _step(wait0, wait1, limit)
        if run is None or wait is None:
            trusted = False
            continue
        spans.append((run, wait))
    if not trusted:
        return {}
    runnable = sum(r + w for r, w in spans)
    top = max([r + w for r, w in spans] or [0])
    busy = [1 for r, w in spans if r + w >= BUSY_SHARE * top and r + w >= BUSY_WALL * wall_s * 1e9]
    if len(busy) > 1:
        return {"cpu_s": sum(r for r, _ in spans) / 1e9, "wall_only": BUSY_ONLY}
    delay = sum(w * (r + w) for r, w in spans) / float(runnable) if runnable else 0.0
    return {"cpu_s": sum(r for r, _ in spans) / 1e9, "run_queue_s": min(delay / 1e9, wall_s)}
