"""Shared fixtures. Engine tests (marked `engine`) use the real Docker engine and Apptainer,
set up by scripts/setup-engines.sh, and one locally built base image shared by all of them."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT, dnnbench

TEST_BASE = os.environ.get("DNNBENCH_TEST_BASE", "dnnbench-testbase:bookworm-torch2.14.1")


@pytest.fixture(scope="session")
def docker_engine():
    from dnnbench.containers.engines import docker
    if docker.available() is None:
        pytest.fail("the Docker engine is not reachable: run `sudo bash scripts/setup-engines.sh` "
                    "(or deselect with -m 'not engine')")
    return docker


@pytest.fixture(scope="session")
def test_base(docker_engine):
    """The locally made base (debootstrap + torch from the local index), cached across runs."""
    subprocess.run(["bash", str(ROOT / "scripts" / "make-test-base.sh")], check=True)
    return TEST_BASE


@pytest.fixture(scope="session")
def built_image(test_base, tmp_path_factory):
    """`dnnbench build` on the local base: the image the run tests use."""
    logs = tmp_path_factory.mktemp("build-logs")
    # DNNBENCH_TEST_IMAGE_TAG keeps checkouts that share one docker daemon from testing each other's code
    tag = os.environ.get("DNNBENCH_TEST_IMAGE_TAG")
    dnnbench("build", "--base", f"local:{test_base}", "--log-dir", logs, *(["--tag", tag] if tag else []), check=0)
    from dnnbench.containers import catalog
    return tag or catalog.resolve(f"local:{test_base}")[0].tag


@pytest.fixture(scope="session")
def built_sif(built_image, tmp_path_factory):
    """The .sif converted from the built image (lz4: 4x faster to make than gzip), cached per
    image id in /var/tmp so local reruns skip the conversion when the code did not change."""
    if shutil.which("apptainer") is None and shutil.which("singularity") is None:
        pytest.fail("Apptainer is not installed: run `sudo bash scripts/setup-engines.sh`")
    image_id = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", built_image],
                              capture_output=True, text=True, check=True).stdout.strip().split(":")[-1][:16]
    cache = Path(os.environ.get("DNNBENCH_TEST_SIF_CACHE", "/var/tmp/dnnbench-test-sif"))
    sif = cache / f"{image_id}.sif"
    if not sif.exists():
        for old in cache.glob("*.sif"):
            old.unlink()
        dnnbench("build", "--base", f"local:{TEST_BASE}", "--format", "singularity", "--output", sif,
                 "--compression", "lz4", "--log-dir", tmp_path_factory.mktemp("sif-logs"), check=0, timeout=1800)
    assert sif.exists()
    return sif


@pytest.fixture(scope="session")
def fake_imagenet(tmp_path_factory):
    dest = tmp_path_factory.mktemp("fake-imagenet")
    dnnbench("data", "fake", "imagenet", "--to", dest, "--images", 64, "--classes", 4, "--size", 96, check=0)
    return dest
