"""Known-harmless lines that C++ libraries write straight to fd 2, where no Python setting reaches
them, dropped on their way to the user's screen and the run's log; every other byte passes, in
order. libkineto (torch.profiler) prints a USDT line as a trace starts and stops, and on a CPU
run an ERROR that it found no GPU (gpuGetDeviceCount failed), though nothing is wrong:
KINETO_LOG_LEVEL hides that ERROR only with every real one, and never the USDT lines.

While a `Dropped` is open, fd 2 is a pipe into a small filter process (`python -m
dnnbench.workloads.known_lines`), not a thread: a C++ write that holds the GIL with the pipe full
cannot wait on a thread that needs the GIL to drain it. On close fd 2 is the terminal or log
again, after the filter has passed on all that was written before. Python 3.7+, stdlib only.
"""
import os
import re
import select
import signal
import subprocess
import sys

# (pattern of one whole line after libkineto's prefix, on a CPU run only)
_PREFIX = br"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ "
KNOWN = (
    (br"USDT:" + _PREFIX + br"SyncActivityProfilerHandler\.cpp:\d+\] profiler_(start|stop)\r?\n", False),
    (br"ERROR:" + _PREFIX + br"DeviceProperties\.cpp:\d+\] gpuGetDeviceCount failed with code \d+\r?\n", True),
)
# a partial line that may still become a known one is held back until its end; others pass at once
_STARTS = (b"USDT:", b"ERROR:")
_LONGEST = 400
_WAIT_S = 10.0


def patterns(cpu):
    return [re.compile(p) for p, cpu_only in KNOWN if cpu or not cpu_only]


class Filter(object):
    """The filter's state: feed it what arrived, it returns what passes."""

    def __init__(self, known, sentinel=None):
        self.known, self.sentinel = known, sentinel
        self.held, self.tail, self.mid_line = b"", b"", False

    def feed(self, data):
        """(what passes, whether the sentinel went by: it may come in the middle of a line)."""
        data, seen = self.tail + data, False
        self.tail = b""
        if self.sentinel:
            at = data.find(self.sentinel)
            if at >= 0:
                data, seen = data[:at] + data[at + len(self.sentinel):], True
            else:   # the sentinel's start at the end: held back until the rest arrives
                at = data.rfind(b"\0", max(0, len(data) - len(self.sentinel) + 1))
                if at >= 0 and self.sentinel.startswith(data[at:]):
                    data, self.tail = data[:at], data[at:]
        return self._lines(data), seen

    def _lines(self, data):
        data, out = self.held + data, []
        self.held = b""
        while data:
            end = data.find(b"\n") + 1
            if self.mid_line:               # the rest of a line that already began to pass
                if not end:
                    out.append(data)
                    break
                out.append(data[:end])
                data, self.mid_line = data[end:], False
            elif end:
                line, data = data[:end], data[end:]
                if not any(p.fullmatch(line) for p in self.known):
                    out.append(line)
            elif len(data) < _LONGEST and any(s.startswith(data[:len(s)]) for s in _STARTS):
                self.held = data
                break
            else:
                out.append(data)
                self.mid_line = True
                break
        return b"".join(out)

    def flush(self):
        held, self.held, self.tail = self.held + self.tail, b"", b""
        return held


def _sentinel(token):
    """What marks where the writes before fd 2's restore end (no program prints this NUL-framed
    token): it ends the filter's wait, and passes on to nobody."""
    return b"\0dnnbench-known-lines-" + token.encode() + b"\0"


def _write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]


class Dropped(object):
    """`with Dropped(cpu=True):` fd 2 goes through the filter; restored on leaving. Where the filter
    cannot start, fd 2 is left as it is."""

    def __init__(self, cpu):
        self.cpu = cpu
        self.proc = None

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        ack_r, ack_w = os.pipe()
        token = os.urandom(8).hex()
        self.sentinel = _sentinel(token)
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", __name__, str(ack_w), token,
                                          "cpu" if self.cpu else "gpu"],
                                         stdin=subprocess.PIPE, stdout=2, pass_fds=(ack_w,))
        except OSError:
            os.close(ack_r)
            os.close(ack_w)
            return self
        os.close(ack_w)
        self.ack = ack_r
        # fd 2 goes into the pipe only once the filter reads it: one that failed to start would
        # turn every later write to stderr into an error
        if not select.select([ack_r], [], [], _WAIT_S)[0] or os.read(ack_r, 1) != b"r":
            self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            os.close(ack_r)
            self.proc = None
            return self
        self.saved = os.dup(2)
        self.pipe = self.proc.stdin.fileno()
        os.dup2(self.pipe, 2)
        return self

    def __exit__(self, *exc):
        if self.proc is None:
            return False
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        try:
            _write_all(self.pipe, self.sentinel)
        except OSError:   # the filter is gone: nothing is waiting in the pipe for it
            pass
        self.proc.stdin.close()     # child processes forked meanwhile keep the pipe open: the filter
        # then passes on their lines until they end; this process goes on once its own are out
        select.select([self.ack], [], [], _WAIT_S)
        os.close(self.ack)
        return False


def main(argv):
    """The filter process (ACK_FD TOKEN cpu|gpu): stdin to stdout, the known lines dropped; one
    byte on ACK_FD once it reads, another once TOKEN's sentinel went by."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is for the run: this ends when its writers do
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ack = int(argv[0])
    filt = Filter(patterns(argv[2] == "cpu"), _sentinel(argv[1]))
    os.write(ack, b"r")
    src, dst = sys.stdin.fileno(), sys.stdout.fileno()
    while True:
        data = os.read(src, 65536)
        if not data:
            break
        out, seen = filt.feed(data)
        _write_all(dst, out)
        if seen and ack >= 0:
            os.write(ack, b"k")
            os.close(ack)
            ack = -1
    _write_all(dst, filt.flush())


if __name__ == "__main__":
    main(sys.argv[1:])
