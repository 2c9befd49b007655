"""How a workload process ends.

A rank of a distributed run leaves without the interpreter's finalization. Gloo runs each
collective on a worker thread of its own, which drops the collective's tensors a moment after
the caller saw it finish; a tensor made in Python needs the GIL to go. When the last collective
of a rank (the gather of the result) is followed at once by the end of the process, that drop
can land in the interpreter's finalization, where taking the GIL ends the thread and C++ aborts
the process ("terminate called without an active exception", SIGABRT, after the result was
written). The process group itself cannot be freed first: DDP keeps references to it from C++.
So a rank does what finalization does that matters (waits for its own threads, runs the atexit
handlers, flushes the files left open) and then exits, with no worker thread left to race.
"""
import atexit
import gc
import io
import os
import sys
import threading


def end(code):
    """Exit with `code`: as sys.exit, except in a rank of a torchrun-started run."""
    if not _distributed():
        sys.exit(code)
    for thread in threading.enumerate():   # a checkpoint writer finishes its file
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()   # loader workers, logging, compile workers close as usual
    # what finalization would flush: files a script left open, then our own streams
    for stream in [obj for obj in gc.get_objects() if isinstance(obj, io.IOBase)] + [sys.stdout, sys.stderr]:
        try:
            if not stream.closed:
                stream.flush()
        except (OSError, ValueError):   # a closed pipe: nothing more can reach it
            pass
    os._exit(code if isinstance(code, int) else 1)


def _distributed():
    """torchrun's world of more than one process, with torch.distributed loaded."""
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return False
    return world > 1 and "torch.distributed" in sys.modules
