"""One rule for the image of a run: --image, else --base, else the only dnnbench image (or
dnnbench_*.sif here); with several and none named nothing is guessed, and the refusal lists
them. (Docker's side: tests/test_engine_docker.py's dry-run test.)"""
from __future__ import annotations

from dnnbench.containers import resolve
from tests.helpers import dnnbench, one_line_error


def test_several_sifs_and_none_named_are_refused_with_the_candidates(tmp_path):
    for name in ("dnnbench_cpu.sif", "dnnbench_ngc-24.10.sif"):
        (tmp_path / name).write_bytes(b"not really a sif")
    res = dnnbench("run", "resnet18", "--runtime", "singularity", "--results", tmp_path / "r", "--dry-run",
                   cwd=tmp_path)
    one_line_error(res, "none is guessed", "dnnbench_cpu.sif", "dnnbench_ngc-24.10.sif", "--image")
    assert not (tmp_path / "r").exists()


def test_the_header_says_why_this_image():
    assert resolve.why_chosen("dnnbench:x", None, "docker") == "named by --image"
    assert resolve.why_chosen(None, "cpu", "docker") == "the image of --base cpu"
    assert resolve.why_chosen(None, None, "docker") == "the only dnnbench image on this machine"
    assert resolve.why_chosen(None, None, "singularity") == "the only dnnbench_*.sif here"
