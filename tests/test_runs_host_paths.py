"""Every path printed is the host's: a container's lines name /data and /results, the screen
names the folders mounted there (toolkit/runs/host_paths.py, on every run's output)."""
from __future__ import annotations

from hypothesis import given, strategies as st

from dnnbench.runs.host_paths import translator
from dnnbench.runs.plan import DATA_DIR, RESULTS_DIR, Mount

MOUNTS = [Mount("/home/ann/imagenet", DATA_DIR, read_only=True), Mount("/home/ann/results/r1", RESULTS_DIR)]
AS_HOST = translator(MOUNTS)


def test_the_harness_lines_name_host_folders():
    assert AS_HOST("resnet18: data /data (loader cpu), amp fp16") == \
        "resnet18: data /home/ann/imagenet (loader cpu), amp fp16"
    assert AS_HOST("result: /results/result.json (ok)") == "result: /home/ann/results/r1/result.json (ok)"
    assert AS_HOST("checkpoint '/results/checkpoint-3.pt'") == "checkpoint '/home/ann/results/r1/checkpoint-3.pt'"


@given(st.sampled_from(["/home/x/results", "/datasets", "/data2/a", "./data", "~/results/r", "a/data",
                        "my-data", "/var/results.txt", "/results-old/x"]),
       st.text(alphabet=" ,;()", max_size=3))
def test_other_paths_are_left_alone(path, around):
    line = f"{around}{path}{around}"
    assert AS_HOST(line) == line


@given(st.sampled_from([DATA_DIR, RESULTS_DIR]), st.sampled_from(["", "/a", "/a/b.json"]),
       st.sampled_from(["", " ", ")", ",", ":", "'"]))
def test_a_mount_point_as_a_path_is_always_rewritten(target, rest, after):
    line = f"x {target}{rest}{after}"
    source = {m.target: m.source for m in MOUNTS}[target]
    assert AS_HOST(line) == f"x {source}{rest}{after}"
