"""One rule for the image of a run: --image, else --base, else the only dnnbench image (or
dnnbench_*.sif here); with several and none named nothing is guessed, and the refusal lists
them. (Docker's side: tests/test_engine_docker.py's dry-run test.)"""
from __future__ import annotations

from tests.helpers import dnnbench, one_line_error


def test_several_sifs_and_none_named_are_refused_with_the_candidates(tmp_path):
    for name in ("dnnbench_cpu.sif", "dnnbench_ngc-24.10.sif"):
        (tmp_path / name).write_bytes(b"not really a sif")
    res = dnnbench("run", "resnet18", "--runtime", "singularity", "--results", tmp_path / "r", "--dry-run",
                   cwd=tmp_path)
    one_line_error(res, "none is guessed", "dnnbench_cpu.sif", "dnnbench_ngc-24.10.sif", "--image")
    assert not (tmp_path / "r").exists()


def test_the_header_says_why_this_image():
    from dnnbench.containers.engines import named
    assert named("docker").why("dnnbench:x", None) == "named by --image"
    assert named("docker").why(None, "cpu") == "the image of --base cpu"
    assert named("docker").why(None, None) == "the only dnnbench image on this machine"
    assert named("apptainer").why(None, None) == "the only dnnbench_*.sif here"
    assert named("host").why(None, None) == "--runtime host: this Python"
