"""The one clock of timed windows. The harness (`run`), the training mode (`train`, one window
per epoch) and a user's script under the instrumentation (`run --script`) record a window the
same way, so their throughputs and data-wait shares mean the same: the items it held, its
seconds from open to close (the device synchronized at both ends), and the part of them spent
waiting for the next batch. Each window also records what the machine was doing (`load1`: the
1-minute load average; `cpu_s`: this process's own CPU seconds in it; `steal`: the share of the
machine's CPU time the hypervisor took, where the kernel reports it): read outside the timed span,
so a verdict can say that the load moved rather than turn that into a difference. Where the
kernel keeps per-task scheduler statistics, `cpu_s` covers the run's worker processes too and
`run_queue_s` is the time the run waited for a CPU another process held (contention.py); on a
GPU, `device_s` is the device's time between the window's edges (CUDA events)."""
import os
import sys
import time

from . import contention, fileio

_said = []      # each "wall time only" line, once per process


def _cpu_ticks():
    """(steal, total) jiffies of the machine from /proc/stat's first line; None where absent."""
    try:
        fields = fileio.read_text("/proc/stat", max_bytes=1 << 20).split("\n", 1)[0].split()
        ticks = [int(x) for x in fields[1:]]
    except (OSError, ValueError, IndexError):
        return None
    return (ticks[7] if len(ticks) > 7 else None), sum(ticks[:8])


def _read_tasks(tasks):
    try:
        return tasks.read()
    except Exception:  # noqa: BLE001 - a counter never costs the run its window
        return None


def _load_at_open(tasks=None):
    return time.process_time(), _cpu_ticks(), _read_tasks(tasks) if tasks is not None else None


def _load_at_close(opened, seconds, tasks=None):
    """The machine's load over a window: load average now, the run's CPU seconds and wait for a
    CPU, steal share."""
    cpu0, ticks0, tasks0 = opened
    out = {"cpu_s": time.process_time() - cpu0}
    if tasks is not None:
        waited = contention.window(tasks0, _read_tasks(tasks), seconds)
        why = waited.pop("wall_only", None) or (None if waited else contention.WALL_ONLY)
        out.update(waited)
        if why and why not in _said:
            _said.append(why)
            sys.stderr.write("note: %s\n" % why)
    try:
        out["load1"] = os.getloadavg()[0]
    except (OSError, AttributeError):
        pass
    ticks1 = _cpu_ticks()
    if ticks0 and ticks1 and ticks0[0] is not None and ticks1[0] is not None and ticks1[1] > ticks0[1]:
        out["steal"] = (ticks1[0] - ticks0[0]) / float(ticks1[1] - ticks0[1])
    return out


def device_timer(torch, device):
    """CUDA events that time a window on the device (a CPU hog does not move them); None off a GPU."""
    if str(device).split(":")[0] != "cuda" or not hasattr(torch.cuda, "Event"):
        return None
    return lambda: torch.cuda.Event(enable_timing=True)


class Clock(object):
    """Times one window at a time: open(), fetch() (or waited()) per step, close(items)."""

    def __init__(self, sync=None, device_timer=None, tasks=True):
        self.sync = sync or (lambda: None)
        self.device_timer = device_timer    # () -> an event with record() and elapsed_time(other) in ms
        self.tasks = contention.Tasks() if tasks is True else tasks or None
        self.t0 = None
        self.wait = 0.0
        self.opened = None
        self.events = None

    def _event(self):
        try:
            event = self.device_timer()
            event.record()
            return event
        except Exception:  # noqa: BLE001 - device time is a bonus, never the window
            return None

    def open(self):
        self.opened = _load_at_open(self.tasks)
        self.sync()
        self.wait = 0.0
        self.events = (self._event(), None) if self.device_timer is not None else None
        self.t0 = time.perf_counter()

    def fetch(self, batches):
        """The next batch; the time it took counts as data wait."""
        f0 = time.perf_counter()
        batch = next(batches)
        self.wait += time.perf_counter() - f0
        return batch

    def waited(self, seconds):
        """Data wait measured by the caller (the instrumentation's wrapped DataLoader iterator)."""
        self.wait += seconds

    def close(self, items):
        """The window as every result keeps it."""
        end = self._event() if self.events and self.events[0] is not None else None
        self.sync()
        window = {"items": items, "seconds": time.perf_counter() - self.t0, "data_wait": self.wait}
        if end is not None:
            try:
                window["device_s"] = self.events[0].elapsed_time(end) / 1000.0
            except Exception:  # noqa: BLE001 - device time is a bonus, never the window
                pass
        if self.opened is not None:
            window.update(_load_at_close(self.opened, window["seconds"], self.tasks))
        return window


def data_wait_fraction(windows):
    """The share of the timed seconds spent waiting for data; None without a timed second."""
    seconds = sum(w["seconds"] for w in windows)
    return sum(w["data_wait"] for w in windows) / seconds if seconds else None
