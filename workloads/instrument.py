"""A user's own training script, measured without a change to it.

    python -m dnnbench.workloads.instrument --results DIR [--warmup 5 --number 10 --repeat 10]
        [--items-per-step N] [--run-to-end] [--unit images] SCRIPT [script args...]

The script runs as __main__ (runpy), in this process. Two hooks see every training loop:
- every DataLoader iterator is wrapped: the time spent waiting in next() is the data wait, and
  the last batch fetched gives the items of a step (the first dimension of its first tensor);
- the optimizer step: a global post-step hook (PyTorch 2.0+) or, on older versions, a wrapper
  put on each optimizer's step when it is made. The first optimizer that steps defines a step
  (a GAN steps two per iteration; a step is one of the first one's).
After --warmup steps, windows of --number steps are timed, the device synchronised only at a
window's edges. After --repeat windows the script is stopped (a BaseException it does not
catch with `except Exception`) or, with --run-to-end, left to finish. The result is the
harness's schema and statistic, plus the script's path, sha256, argv and exit code.

A script may say how many items a step holds itself: `os.environ["DNNBENCH_ITEMS_PER_STEP"]`
is read at every window edge, so `os.environ["DNNBENCH_ITEMS_PER_STEP"] = "256"` in the
script works with no import of dnnbench.

Python 3.7+, stdlib + torch, like the rest of the container side.
"""
import argparse
import hashlib
import os
import re
import runpy
import socket
import sys
import threading
import time

from . import ending, fileio, netif, windows
from .result import Result

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NO_STEPS = 0, 1, 2, 5
ITEMS_ENV = "DNNBENCH_ITEMS_PER_STEP"
NO_STEPS = ("the script never stepped a torch optimizer, so no training step could be timed "
            "(looked for torch.optim optimizer steps and DataLoader batches); a script with a "
            "hand-written update can call any torch.optim optimizer's step() once per step")


def workload_name(entry):
    """How results and reports name a script's runs: script-<entry without .py>, a safe token."""
    stem = os.path.basename(entry)
    stem = stem[:-3] if stem.endswith(".py") else stem
    return "script-" + (re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("._-") or "script")


def _log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


class Stop(BaseException):
    """Raised from the step hook once the windows are taken: not an Exception, so a script's
    `except Exception` does not swallow it."""


def _first_dim(batch):
    """Items in a batch: the first dimension of its first tensor, searched depth-first."""
    if hasattr(batch, "shape") and len(getattr(batch, "shape", ())) > 0:
        return int(batch.shape[0])
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        for part in batch:
            n = _first_dim(part)
            if n:
                return n
    return None


class Meter(object):
    """The windows, counted from the hooks."""

    def __init__(self, warmup, number, repeat, items_per_step=None, run_to_end=False):
        self.warmup, self.number, self.repeat = warmup, number, repeat
        self.items_per_step, self.run_to_end = items_per_step, run_to_end
        self.steps = 0
        self.windows = []
        self.owner = None           # id of the optimizer whose steps are counted
        self.batch_items = None     # items of the last batch fetched
        self.batches = 0
        self.clock = windows.Clock()  # the current window's: seconds and data wait
        self.window_steps = 0
        self.window_items = 0
        self.done = False
        self.thread_failure = None  # "Type: message" of the first exception a script's thread died of

    def fetched(self, batch, seconds):
        self.batches += 1
        self.clock.waited(seconds)
        n = _first_dim(batch)
        if n:
            self.batch_items = n

    def _items(self):
        given = os.environ.get(ITEMS_ENV)
        if given:
            try:
                return int(given)
            except ValueError:
                pass
        return self.items_per_step or self.batch_items

    def stepped(self, optimizer):
        if self.done:
            return
        if self.owner is None:
            self.owner = id(optimizer)
        elif id(optimizer) != self.owner:
            return
        self.steps += 1
        if self.steps == self.warmup:
            self._open()
        elif self.steps > self.warmup:
            self.window_steps += 1
            self.window_items += self._items() or 0
            if self.window_steps == self.number:
                self._close()
                if len(self.windows) < self.repeat:
                    self._open()
                else:
                    self.done = True
                    if not self.run_to_end:
                        raise Stop()

    def start(self):
        """Called before the script runs: no warmup means the first window opens at once."""
        if self.warmup == 0:
            self._open()

    def _open(self):
        self.window_steps, self.window_items = 0, 0
        self.clock.open()

    def _close(self):
        self.windows.append(self.clock.close(self.window_items))


def install(meter):
    """Put the hooks in place; returns a function that takes them out."""
    import torch
    import torch.utils.data as tud

    undo = []
    original_iter = tud.DataLoader.__iter__

    class Timed(object):
        def __init__(self, inner):
            self._inner = inner

        def __iter__(self):
            return self

        def __next__(self):
            t = time.perf_counter()
            batch = next(self._inner)
            meter.fetched(batch, time.perf_counter() - t)
            return batch

        def __len__(self):
            return len(self._inner)

        def __getattr__(self, name):
            return getattr(self._inner, name)

    def timed_iter(loader):
        return Timed(original_iter(loader))

    tud.DataLoader.__iter__ = timed_iter
    undo.append(lambda: setattr(tud.DataLoader, "__iter__", original_iter))

    import torch.optim.optimizer as optim_mod
    register = getattr(optim_mod, "register_optimizer_step_post_hook", None)
    if register is not None:        # PyTorch 2.0+: one global hook
        handle = register(lambda opt, args, kwargs: meter.stepped(opt))
        undo.append(handle.remove)
    else:                           # older: wrap each optimizer's step as it is made
        original_init = torch.optim.Optimizer.__init__

        def init(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            inner = self.step

            def step(*a, **k):
                out = inner(*a, **k)
                meter.stepped(self)
                return out
            self.step = step
        torch.optim.Optimizer.__init__ = init
        undo.append(lambda: setattr(torch.optim.Optimizer, "__init__", original_init))

    if torch.cuda.is_available():
        meter.clock.sync = torch.cuda.synchronize

    # a script that steps from a thread: the Stop raised there ends that thread quietly (it is
    # ours, not the script's failure); any other exception a thread dies of is the run's failure,
    # not lost in a traceback while the main thread exits 0 (Python 3.8+: threading.excepthook)
    original_hook = getattr(threading, "excepthook", None)
    if original_hook is not None:
        def thread_failed(args):
            if issubclass(args.exc_type, Stop):
                return
            if meter.thread_failure is None:
                meter.thread_failure = "%s: %s" % (args.exc_type.__name__, _text(args.exc_value))
            original_hook(args)
        setattr(threading, "excepthook", thread_failed)
        undo.append(lambda: setattr(threading, "excepthook", original_hook))

    def remove():
        for u in reversed(undo):
            u()
    return remove


def _sha256(path):
    h = hashlib.sha256()
    h.update(fileio.read_bytes(path, max_bytes=64 * 2**20))
    return h.hexdigest()


def parser():
    p = argparse.ArgumentParser(prog="python -m dnnbench.workloads.instrument",
                                description="Time a training script's steps without changing it.")
    p.add_argument("--results", default=os.environ.get("DNNBENCH_RESULTS", "results"))
    p.add_argument("--run-id", default=os.environ.get("DNNBENCH_RUN_ID"))
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--number", type=int, default=10)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--items-per-step", type=int, default=None)
    p.add_argument("--unit", default="items")
    p.add_argument("--run-to-end", action="store_true")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def _check(a):
    for name, lo in (("warmup", 0), ("number", 1), ("repeat", 1), ("items_per_step", 1)):
        value = getattr(a, name)
        if value is not None and not lo <= value <= 2**31:
            return "--%s must be between %d and 2^31, not %d" % (name.replace("_", "-"), lo, value)
    try:     # the path goes into the result, a JSON text: bytes that are not UTF-8 cannot
        a.script.encode("utf-8")
    except UnicodeEncodeError:
        return "script %r: the path is not UTF-8 text; rename it" % a.script.encode("utf-8", "surrogateescape")
    if not fileio.is_regular(a.script):
        return "script %s is not a readable regular file" % a.script
    return None


def _gather(windows, failure=None):
    """Every rank's windows when the script made a process group; [this rank's] otherwise. Each
    carries its failure (None: it ended well), so rank 0 never writes "ok" over a failed rank."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            out = [None] * dist.get_world_size()
            dist.all_gather_object(out, {"rank": dist.get_rank(), "host": socket.gethostname(),
                                         "windows": windows, "failure": failure})
            return out, dist.get_rank()
    except Exception as exc:  # noqa: BLE001 - a failed gather is said in the result, not raised
        _log("dnnbench: could not gather the ranks' windows: %s" % exc)
        return [{"rank": _world()[0], "host": socket.gethostname(), "windows": windows}], None
    return [{"rank": 0, "host": socket.gethostname(), "windows": windows}], 0


def main(argv=None):
    a = parser().parse_args(argv)
    problem = _check(a)
    if problem:
        _log("error: " + problem)
        return EXIT_USAGE
    script = os.path.abspath(a.script)
    # what the manifest reads: no dataset of dnnbench's, no seed of dnnbench's
    facts = argparse.Namespace(data=None, seed=None, results=a.results)
    result = Result(a.run_id, workload_name(script), a.unit, args=facts,
                    options={"warmup": a.warmup, "number": a.number, "repeat": a.repeat,
                             "items_per_step": a.items_per_step, "run_to_end": a.run_to_end},
                    script={"path": script, "sha256": _sha256(script), "argv": list(a.args), "exit_code": None})
    meter = Meter(a.warmup, a.number, a.repeat, a.items_per_step, a.run_to_end)
    remove = install(meter)
    netif.pin_gloo_interface()   # before the script's init_process_group
    code = EXIT_OK
    sys.argv = [script] + list(a.args)
    sys.path.insert(0, os.path.dirname(script))
    meter.start()
    try:
        runpy.run_path(script, run_name="__main__")
    except Stop:
        pass
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        code = 130
        result["status"], result["message"] = "interrupted", "interrupted by a signal"
    except Exception as exc:  # noqa: BLE001 - the script's failure is the run's, with a result
        import traceback
        traceback.print_exc()
        code = EXIT_ERROR
        result["message"] = "the script failed: %s: %s" % (type(exc).__name__, _text(exc))
    finally:
        remove()
    if meter.thread_failure and code == EXIT_OK:
        code = EXIT_ERROR
        result["message"] = "a thread of the script failed: %s" % meter.thread_failure
    result["script"]["exit_code"] = code
    return _finish(result, meter, code, a)


def _text(exc):
    """An exception's message, even when its __str__ itself fails (a script's own class)."""
    try:
        return str(exc).strip()[:2000]
    except Exception:  # noqa: BLE001 - whatever its __str__ raises, the run's failure is kept
        return "(its message could not be read)"


def _world():
    """(rank, world size) as torchrun gave them: what the script should have joined."""
    try:
        return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 0, 1


def _no_group(world):
    return ("the script ran as %d processes (torchrun, --nproc) but never formed a process group "
            "(torch.distributed.init_process_group), so each measured alone and no one figure holds: "
            "run it with --nproc 1, or have it call init_process_group" % world)


def _finish(result, meter, code, a):
    from . import system
    ranks, rank = _gather(meter.windows, result["message"] or ("exit code %s" % code) if code else None)
    failed = [(r.get("rank"), r.pop("failure", None)) for r in ranks]
    failed = [(n, why) for n, why in failed if why]
    launched_rank, launched = _world()
    if failed and code == EXIT_OK and result["status"] == "running":   # another rank's failure is the run's
        result["status"], code = "error", EXIT_ERROR
        result["message"] = "rank %s failed: %s" % failed[0]
    if rank is None:   # a group whose gather failed (a rank died in its step): no one figure holds
        rank = launched_rank
        if code == EXIT_OK and result["status"] == "running":
            result["status"], code = "error", EXIT_ERROR
            result["message"] = ("the ranks' windows could not be gathered (another rank failed?): this "
                                 "rank's figures alone are not the run's")
    elif launched > 1 and len(ranks) == 1:   # copies that never met: one writes the result, saying so
        rank = launched_rank
        if code == EXIT_OK and result["status"] == "running":
            result["status"], result["message"] = "error", _no_group(launched)
            # rank 0 says it and exits 2; the others end with 0: torchrun ends every copy as soon as
            # one fails, which could stop rank 0 before its result is written
            code = EXIT_USAGE if launched_rank == 0 else EXIT_OK
    result["ranks"] = ranks
    result["world_size"] = len(ranks)
    result["windows"] = meter.windows
    device = None
    try:
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
        result["system"] = system.collect(device)
    except Exception:  # noqa: BLE001 - facts are a bonus, never the run's failure
        pass
    if result["status"] == "running":
        if code != EXIT_OK:
            result["status"] = "error"
            result["message"] = result["message"] or "the script exited with code %s" % code
        elif not meter.steps:
            result["status"], result["message"], code = "error", NO_STEPS, EXIT_NO_STEPS
        elif len(meter.windows) < a.repeat:
            result["status"] = "error"
            result["message"] = ("the script ended after %d optimizer steps: %d warmup + %d x %d timed were "
                                 "asked (lower --warmup/--number/--repeat)" % (
                                     meter.steps, a.warmup, a.repeat, a.number))
            code = EXIT_ERROR
        elif not all(w["items"] for w in meter.windows):
            result["status"] = "error"
            result["message"] = ("steps were timed but their items are unknown (no DataLoader batch seen): "
                                 "pass --items-per-step N or set %s in the script" % ITEMS_ENV)
            code = EXIT_USAGE
        else:
            result["status"] = "ok"
    try:   # the script's path and SHA-256: what `dnnbench reproduce` checks before it runs it again
        result.collect_manifest(device, rank, synthetic=None,
                                script={"path": result["script"]["path"], "sha256": result["script"]["sha256"]})
    except Exception as exc:  # noqa: BLE001 - facts are a bonus, never the run's failure
        _log("dnnbench: no manifest: %s" % exc)
    if not result.close(a.results, rank):
        code = code or EXIT_ERROR
    if result["status"] == "ok":
        _log("%s: %s %s (sum of items / sum of seconds over %d windows)" % (
            result["workload"], "%.4g" % result["throughput"]["total"]["value"], result["unit"],
            len(meter.windows)))
    elif result["message"] and (code != EXIT_OK or launched_rank == 0):
        _log("error: " + result["message"])
    return code


if __name__ == "__main__":
    ending.end(main())
