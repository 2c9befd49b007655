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


# The tests' Slurm: nodes in network and UTS namespaces of this machine (scripts/setup-slurm.sh).
SLURM_NODES = 3


@pytest.fixture(scope="session")
def slurm_cluster():
    subprocess.run(["bash", str(ROOT / "scripts" / "setup-slurm.sh"), "--nodes", str(SLURM_NODES)], check=True)
    return [f"node{i}" for i in range(1, SLURM_NODES + 1)]


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


def pytest_configure(config):
    config.addinivalue_line("markers", "signals: waits on a signal, a line or a timeout; scripts/test.sh runs these "
                                       "a second time beside a CPU hog")


def _leftover_containers(folder: str) -> list[str]:
    """dnnbench containers (by their run-id label) with a mount under `folder`: a test's own,
    never another checkout's that shares the docker daemon."""
    res = subprocess.run(["docker", "ps", "-a", "-q", "--filter", "label=io.dnnbench.run-id"],
                         capture_output=True, text=True)
    ids = res.stdout.split()
    if res.returncode != 0 or not ids:
        return []
    res = subprocess.run(["docker", "inspect", "-f", "{{.Id}} {{range .Mounts}}{{.Source}} {{end}}", *ids],
                         capture_output=True, text=True)
    return [line.split()[0] for line in res.stdout.splitlines()
            if any(src == folder or src.startswith(folder + "/") for src in line.split()[1:])]


def _leftover_jobs(folder: str) -> list[str]:
    """Slurm jobs whose script lies under `folder` (dnnbench writes it into the run folder)."""
    if shutil.which("squeue") is None:
        return []
    res = subprocess.run(["squeue", "-h", "-o", "%i %o"], capture_output=True, text=True)
    return [line.split()[0] for line in res.stdout.splitlines()
            if len(line.split()) > 1 and line.split()[1].startswith(folder + "/")]


def _leftover_processes(folder: str) -> list[int]:
    """Processes (host-runtime runs) whose command line names `folder`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(arg == folder.encode() or arg.startswith(folder.encode() + b"/") for arg in argv):
            found.append(int(proc.name))
    return found


@pytest.fixture(autouse=True)
def _leave_nothing_behind(request):
    """After a test that ran things under its tmp_path, remove what is still there by name: its
    containers, Slurm jobs and processes, so a failing test leaves nothing running."""
    if "tmp_path" not in request.fixturenames:
        yield
        return
    folder = str(request.getfixturevalue("tmp_path"))
    yield
    import signal as signals
    for pid in _leftover_processes(folder):
        try:
            os.kill(pid, signals.SIGKILL)
        except OSError:
            pass
    if request.node.get_closest_marker("engine") or request.node.get_closest_marker("signals"):
        jobs = _leftover_jobs(folder)
        if jobs:
            subprocess.run(["scancel", *jobs], check=False)
        containers = _leftover_containers(folder)
        if containers:
            subprocess.run(["docker", "rm", "-f", *containers], capture_output=True, check=False)
