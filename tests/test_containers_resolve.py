"""One rule for the image of a run: --image, else --base, else the only dnnbench image (or
dnnbench_*.sif here); with several and none named nothing is guessed, and the refusal lists
them. (Docker's side: tests/test_containers_engines_docker.py's dry-run test.)"""
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


def test_a_compare_images_dry_run_says_which_images_are_not_here(docker_engine, test_base, tmp_path):
    """The dry run lists the images in order and says of each one the engine does not hold that it
    is not on this machine (the real run would build, pull or refuse it)."""
    missing = "dnnbench-test-absent:never-built"
    res = dnnbench("compare-images", "resnet18", "--images", f"{test_base},{missing}", "--dry-run",
                   "--results", tmp_path, check=0)
    listed = [line.split() for line in res.stdout.splitlines() if line.startswith("   ")]
    assert listed[0] == ["0", test_base], res.stdout
    assert listed[1] == ["1", missing, "(not", "on", "this", "machine)"], res.stdout
