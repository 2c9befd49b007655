"""Progress of the long loops inside a run (a training epoch's steps, its evaluation, the
warmup): a line at most every few seconds with done/total, the rate and an ETA, so a long epoch
is never silent. Python 3.7+, stdlib only.

The interval: DNNBENCH_PROGRESS_S when set (0: no lines), else the caller's."""
import os
import time


def fmt_eta(seconds):
    seconds = int(max(0, seconds))
    if seconds >= 3600:
        return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)
    return "%dm%02ds" % (seconds // 60, seconds % 60) if seconds >= 60 else "%ds" % seconds


def interval(default):
    value = os.environ.get("DNNBENCH_PROGRESS_S")
    try:
        return float(value) if value is not None else float(default)
    except ValueError:
        return float(default)


class Ticker(object):
    """`label done/total (pct)  rate  ETA` through `log`, at most once every `every` seconds and
    never for the last step (the line that ends the loop says it); reading the clock is all a
    step costs."""

    def __init__(self, label, total, log, every=30.0, unit="steps", enabled=True, start=0):
        self.label, self.total, self.log, self.unit, self.start = label, int(total), log, unit, int(start)
        self.every = interval(every)
        self.enabled = bool(enabled) and self.every > 0 and self.total > 1
        self.t0 = self.last = time.perf_counter()

    def tick(self, done):
        if not self.enabled or done >= self.total:
            return
        now = time.perf_counter()
        if now - self.last < self.every or done <= self.start:
            return
        self.last = now
        elapsed, here = now - self.t0, done - self.start   # a resumed epoch: the rate of this start's steps
        self.log("%s %d/%d %s (%d%%)  %.1f %s/s  ETA %s" % (
            self.label, done, self.total, self.unit, 100 * done // self.total, here / elapsed, self.unit,
            fmt_eta(elapsed / here * (self.total - done))))
