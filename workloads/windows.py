"""The one clock of timed windows. The harness (`run`), the training mode (`train`, one window
per epoch) and a user's script under the instrumentation (`run --script`) record a window the
same way, so their throughputs and data-wait shares mean the same: the items it held, its
seconds from open to close (the device synchronized at both ends), and the part of them spent
waiting for the next batch."""
import time


class Clock(object):
    """Times one window at a time: open(), fetch() (or waited()) per step, close(items)."""

    def __init__(self, sync=None):
        self.sync = sync or (lambda: None)
        self.t0 = None
        self.wait = 0.0

    def open(self):
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
        return {"items": items, "seconds": time.perf_counter() - self.t0, "data_wait": self.wait}


def data_wait_fraction(windows):
    """The share of the timed seconds spent waiting for data; None without a timed second."""
    seconds = sum(w["seconds"] for w in windows)
    return sum(w["data_wait"] for w in windows) / seconds if seconds else None
