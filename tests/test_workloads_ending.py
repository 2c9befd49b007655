"""How a workload process ends: a rank of a distributed run skips the interpreter's
finalization (where gloo's worker threads could abort it), and loses nothing of its own."""
import subprocess
import sys

import pytest

# a non-daemon thread still writing, an atexit handler, unflushed output, and an object that
# only the interpreter's finalization would free
CHILD = """
import atexit, sys, threading, time
import torch.distributed
from dnnbench.workloads import ending
out = sys.argv[1]

def late():
    time.sleep(0.3)
    open(out + "/thread", "w").write("done")

class Finalized(object):
    def __del__(self, open=open):   # builtins are gone by then: keep open
        open(self.path + "/finalized", "w").write("yes")

threading.Thread(target=late).start()
atexit.register(lambda: open(out + "/atexit", "w").write("ran"))
unclosed = open(out + "/unclosed", "w")
unclosed.write("kept")   # buffered: finalization (or ending.end) must flush it
keep = Finalized()
keep.path = out
sys.stdout.write("buffered, no newline")
ending.end(3)
"""


def _end(tmp_path, world):
    env = {"PATH": "/usr/bin:/bin", "WORLD_SIZE": world}
    res = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], env=env, capture_output=True,
                         text=True, timeout=120)
    made = sorted(p.name for p in tmp_path.iterdir())
    return res, made


def test_a_rank_exits_with_its_code_after_its_threads_and_atexit_without_finalization(tmp_path):
    res, made = _end(tmp_path, "2")
    assert res.returncode == 3, res.stderr
    assert res.stdout == "buffered, no newline"
    assert made == ["atexit", "thread", "unclosed"]   # nothing left to a finalization that never came
    assert (tmp_path / "unclosed").read_text() == "kept"


@pytest.mark.parametrize("world", ["1", "not-a-number"])
def test_a_single_process_exits_as_usual(tmp_path, world):
    res, made = _end(tmp_path, world)
    assert res.returncode == 3, res.stderr
    assert res.stdout == "buffered, no newline"
    assert made == ["atexit", "finalized", "thread", "unclosed"]
    assert (tmp_path / "unclosed").read_text() == "kept"
