"""The harness's malloc settings: large freed CPU buffers are reused, not faulted in again."""
import json
import subprocess
import sys

import pytest

from dnnbench.workloads import allocator

# a "step" makes three 64 MiB tensors and frees them, as a CPU step's activations come and go;
# the faults of steps 7-10 are counted (glibc's heap settles on reuse within a few steps)
FAULTS = """
import json, resource, sys, torch
from dnnbench.workloads import allocator
line = allocator.keep_mapped(sys.argv[1] == "on")
for step in range(10):
    if step == 6:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    xs = [torch.ones(16 << 20) for _ in range(3)]
    del xs
print(json.dumps([line, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before]))
"""


def _faults(mode):
    out = subprocess.run([sys.executable, "-c", FAULTS, mode], check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(allocator.glibc() is None, reason="the settings are glibc's")
def test_freed_large_buffers_are_reused_not_faulted_in_again():
    line_on, on = _faults("on")
    line_off, off = _faults("off")
    step = 3 * (64 << 20) // 4096    # pages one step touches
    assert "no mmap, no trim" in line_on and "--malloc-defaults" in line_off
    assert off >= 4 * step           # glibc's default: every tensor a fresh mapping, every step
    assert on < step // 2            # kept mapped: the steps reuse what the first ones faulted in


def test_the_run_records_its_malloc_settings(tmp_path):
    from dnnbench.workloads import harness, load
    base = ["--synthetic", "--batch-size", "1", "--number", "1", "--repeat", "1", "--warmup", "0", "--device", "cpu"]
    for extra, expect in (([], "no mmap"), (["--malloc-defaults"], "defaults")):
        out = tmp_path / ("r%d" % len(extra))
        assert harness.run(load("ncf"), base + extra + ["--results", str(out)]) == 0
        malloc = json.loads((out / "result.json").read_text())["system"]["malloc"]
        assert expect in malloc if allocator.glibc() else malloc.startswith("not glibc")
