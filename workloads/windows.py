"""The one clock of timed windows. The harness (`run`), the training mode (`train`, one window
per epoch) and a user's script under the instrumentation (`run --script`) record a window the
same way, so their throughputs and data-wait shares mean the same: the items it held, its
seconds from open to close (the device synchronized at both ends), and the part of them spent
waiting for the next batch. Each window also records what the machine was doing (`load1`: the
1-minute load average; `cpu_s`: this process's own CPU seconds in it; `steal`: the share of the
machine's CPU time the hypervisor took, where the kernel reports it): read outside the timed span,
so a verdict can say that the load moved rather than turn that into a difference."""
import os
import time

from . import fileio


def _cpu_ticks():
    """(steal, total) jiffies of the machine from /proc/stat's first line; None where absent."""
    try:
        fields = fileio.read_text("/proc/stat", max_bytes=1 << 20).split("\n", 1)[0].split()
        ticks = [int(x) for x in fields[1:]]
    except (OSError, ValueError, IndexError):
        return None
    return (ticks[7] if len(ticks) > 7 else None), sum(ticks[:8])


def _load_at_open():
    return time.process_time(), _cpu_ticks()


def _load_at_close(opened):
    """The machine's load over a window: load average now, own CPU seconds, steal share."""
    cpu0, ticks0 = opened
    out = {"cpu_s": time.process_time() - cpu0}
    try:
        out["load1"] = os.getloadavg()[0]
    except (OSError, AttributeError):
        pass
    ticks1 = _cpu_ticks()
    if ticks0 and ticks1 and ticks0[0] is not None and ticks1[0] is not None and ticks1[1] > ticks0[1]:
        out["steal"] = (ticks1[0] - ticks0[0]) / float(ticks1[1] - ticks0[1])
    return out


class Clock(object):
    """Times one window at a time: open(), fetch() (or waited()) per step, close(items)."""

    def __init__(self, sync=None):
        self.sync = sync or (lambda: None)
        self.t0 = None
        self.wait = 0.0
        self.opened = None

    def open(self):
        self.opened = _load_at_open()
        self.sync()
        self.wait = 0.0
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
        self.sync()
        window = {"items": items, "seconds": time.perf_counter() - self.t0, "data_wait": self.wait}
        if self.opened is not None:
            window.update(_load_at_close(self.opened))
        return window


def data_wait_fraction(windows):
    """The share of the timed seconds spent waiting for data; None without a timed second."""
    seconds = sum(w["seconds"] for w in windows)
    return sum(w["data_wait"] for w in windows) / seconds if seconds else None
