"""A campaign's CPU steps on one thread (campaigns/threads.py), the caller's choice kept."""
import subprocess
import sys

import pytest

from dnnbench.campaigns import bisect, threads
from dnnbench.runs.options import RunOptions


@pytest.mark.parametrize("given, env_set, want", [
    ({}, {}, {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}),
    ({"env": {"LR_SCALE": "2"}}, {}, {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "LR_SCALE": "2"}),
    ({"gpus": "0"}, {}, {}),                                     # a GPU job keeps its settings
    ({"gpus": "none"}, {}, {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}),
    ({"env": {"OMP_NUM_THREADS": "4"}}, {}, {"OMP_NUM_THREADS": "4"}),   # --env chose
    ({}, {"OMP_NUM_THREADS": "2"}, {}),                          # the caller's environment chose
    ({}, {"MKL_NUM_THREADS": "2"}, {}),
])
def test_cpu_steps_run_on_one_thread_unless_the_caller_chose(given, env_set, want, monkeypatch):
    for name in threads.ONE_THREAD:
        monkeypatch.delenv(name, raising=False)
    for name, value in env_set.items():
        monkeypatch.setenv(name, value)
    template = bisect.job_template(RunOptions(workload="vae", **given), 0.1)
    assert template.env == want
    assert (threads.said(template) is not None) == (want.get("OMP_NUM_THREADS") == "1")
    # the threads are part of a step's identity: a step measured on others is measured again
    assert bisect.identity(template, "r1", None)["env"] == dict(sorted(want.items()))


def test_every_image_of_a_comparison_gets_one_thread_and_the_user_is_told(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k not in threads.ONE_THREAD}
    res = subprocess.run([sys.executable, "-m", "dnnbench", "compare-images", "vae", "--images", "a:1,b:2",
                          "--dry-run", "--results", str(tmp_path)], capture_output=True, text=True,
                         env={**env, "COLUMNS": "80"})
    assert res.returncode == 0, res.stdout + res.stderr
    said = res.stderr.splitlines()
    assert "one thread (OMP_NUM_THREADS=1; set it to choose)" in said[0] and all(len(x) <= 80 for x in said)
    assert "-e OMP_NUM_THREADS=1 -e MKL_NUM_THREADS=1" in res.stdout
