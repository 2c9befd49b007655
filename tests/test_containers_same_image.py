"""dnnbench.containers.same_image: two names of one image (two docker tags of one image id, two
copies of one .sif) are said to be the same image by compare-images, bisect and watch, and cost
no run; names whose digest differs or cannot be read are measured as before."""
from __future__ import annotations

import shutil
import subprocess
import uuid

import pytest

from tests.helpers import dnnbench


@pytest.fixture
def two_tags(docker_engine, test_base):
    """The test base under two more tags: one image id, three names."""
    tags = [f"dnnbench-same-{uuid.uuid4().hex[:8]}:{k}" for k in ("a", "b")]
    for tag in tags:
        subprocess.run(["docker", "tag", test_base, tag], check=True, capture_output=True)
    yield tags
    subprocess.run(["docker", "rmi", *tags], capture_output=True)


def test_two_tags_of_one_image_are_the_same_image(two_tags, test_base):
    from dnnbench.containers import same_image
    assert same_image.firsts("docker", [*two_tags, test_base]) == {1: 0, 2: 0}
    assert same_image.firsts("docker", [two_tags[0], "no-such-image-here:x"]) == {}   # unknown: measured
    assert "is the same image as" in same_image.said(two_tags[0], two_tags[1], "docker")


def test_compare_images_and_bisect_measure_nothing_between_one_image(two_tags, tmp_path):
    res = dnnbench("compare-images", "resnet18", "--runtime", "docker", "--images", ",".join(two_tags),
                   "--results", tmp_path, "--run-id", "same", check=0)
    text = " ".join(res.stdout.split())
    assert f"{two_tags[1]} is the same image as {two_tags[0]}" in text and "nothing measured" in text
    assert not (tmp_path / "same").exists()
    res = dnnbench("bisect", "resnet18", "--runtime", "docker", "--images", ",".join(two_tags),
                   "--results", tmp_path, "--run-id", "same", check=1)
    assert "nothing to bisect" in res.stdout and not (tmp_path / "same").exists()


def test_two_copies_of_one_sif_are_the_same_image(tmp_path):
    """The .sif's digest is its SHA-256 (a copy, not only a link, is the same image); one byte
    more is another image."""
    from dnnbench.containers import same_image
    a, b, c = tmp_path / "a.sif", tmp_path / "b.sif", tmp_path / "c.sif"
    a.write_bytes(b"SIF_MAGIC" + bytes(range(256)) * 64)
    shutil.copyfile(a, b)
    c.write_bytes(a.read_bytes() + b"\0")
    assert same_image.firsts("apptainer", [str(a), str(b), str(c)]) == {1: 0}
