"""Shared fixtures. Engine tests (marked `engine`) use the real Docker engine and Apptainer,
set up by scripts/setup-engines.sh, and one locally built base image shared by all of them."""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.helpers import CA, ROOT, dnnbench, one_builder

# Every process the tests start on this machine (host-runtime runs, Slurm steps) waits for
# OpenMP work passively: libgomp's default spin-wait made a CPU training step 4-40x slower beside
# two CPU hogs on 2 cores (benchmarks/omp_wait.py, resnet18 at 32 px: 66 ms quiet, a median of
# 288 ms and up to 3048 ms busy; passive: 150 ms busy, 97 ms quiet), and CI must hold on a busy
# machine.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Every result the tests make is recorded in a throwaway history store, never the user's own.
_HISTORY = tempfile.mkdtemp(prefix="dnnbench-history-")
os.environ["DNNBENCH_DB"] = os.path.join(_HISTORY, "history.db")
atexit.register(shutil.rmtree, _HISTORY, True)     # each test process removes its own

TEST_BASE = os.environ.get("DNNBENCH_TEST_BASE") or (ROOT / "scripts" / "test-base.tag").read_text().strip()


# The tests' Slurm: nodes in network and UTS namespaces of this machine (scripts/setup-slurm.sh).
SLURM_NODES = 3


@pytest.fixture   # each test's: every node up before it (0.1 s when they are), so a node a test
def slurm_cluster():   # killed and could not bring back fails that test, not the ones after it
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
    with one_builder("base"):
        subprocess.run(["bash", str(ROOT / "scripts" / "make-test-base.sh")], check=True)
    return TEST_BASE


@pytest.fixture(scope="session")
def built_image(test_base, tmp_path_factory):
    """`dnnbench build` on the local base: the image the run tests use."""
    logs = tmp_path_factory.mktemp("build-logs")
    # DNNBENCH_TEST_IMAGE_TAG keeps checkouts that share one docker daemon from testing each other's code
    tag = os.environ.get("DNNBENCH_TEST_IMAGE_TAG")
    with one_builder("image"):
        dnnbench("build", "--base", f"local:{test_base}", "--log-dir", logs, *(["--tag", tag] if tag else []),
                 check=0)
    from dnnbench.containers import catalog
    return tag or catalog.resolve(f"local:{test_base}")[0].tag


@pytest.fixture(scope="session")
def standins(test_base):
    """Local stand-ins for the NGC and ROCm images (scripts/make-vendor-standins.sh), tagged
    with the vendors' own names, so the catalog's bases resolve to them without a registry."""
    from dnnbench.containers import catalog
    with one_builder("standins"):
        subprocess.run(["bash", str(ROOT / "scripts" / "make-vendor-standins.sh")], check=True,
                       env={**os.environ, "DNNBENCH_TEST_BASE": test_base})
    return {"ngc": catalog.resolve("ngc-24.10")[0].image, "rocm": catalog.resolve("rocm-6.0.2")[0].image}


@pytest.fixture(scope="session")
def built_sif(standins, tmp_path_factory):
    """The one .sif of the tests: built by the rendered definition from the NGC stand-in, as a
    user builds from NGC (NVIDIA's entrypoint chain, the pip constraint file; %files brings the
    proxy's CA, %post's pip trusts it and removes it). lz4: 4x faster to make than gzip. Cached
    in /var/tmp per recipe, container-side code and base image, so reruns skip the build."""
    import hashlib
    from dataclasses import replace

    import dnnbench.workloads as workloads
    from dnnbench.containers import catalog, recipes
    from dnnbench.containers.build import build_ca, image_config, singularity_build, with_image_facts
    if shutil.which("apptainer") is None and shutil.which("singularity") is None:
        pytest.fail("Apptainer is not installed: run `sudo bash scripts/setup-engines.sh`")
    # the stand-in is a local image: Apptainer bootstraps from the docker daemon, not from nvcr.io
    base = replace(catalog.resolve("ngc-24.10")[0], bootstrap="docker-daemon")
    recipe = recipes.render(with_image_facts(base, image_config(base.image)), "singularity",
                            ca_sha256=build_ca(CA).sha256)
    code = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(Path(workloads.__file__).parent.rglob("*.py"))))
    base_id = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", base.image],
                             capture_output=True, text=True, check=True).stdout.strip()
    key = hashlib.sha256((recipe.sha256 + code.hexdigest() + base_id).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("DNNBENCH_TEST_SIF_CACHE", "/var/tmp/dnnbench-test-sif"))
    sif = cache / f"ngc-{key}.sif"
    with one_builder("sif"):
        if not sif.exists():
            for old in cache.rglob("*.sif"):   # earlier keys (and the older layout's vendor/ folder)
                old.unlink()
            singularity_build(base, output=sif, from_docker=False, tag=None, no_cache=False, build_args={},
                              log_dir=tmp_path_factory.mktemp("sif-logs"), compression="lz4", ca_cert=CA)
    return sif


@pytest.fixture(scope="session")
def fake_imagenet(tmp_path_factory):
    dest = tmp_path_factory.mktemp("fake-imagenet")
    dnnbench("data", "fake", "imagenet", "--to", dest, "--images", 64, "--classes", 4, "--size", 96, check=0)
    return dest


def pytest_configure(config):
    config.addinivalue_line("markers", "signals: waits on a signal, a line or a timeout; scripts/test.sh runs these "
                                       "a second time beside a CPU hog")
    config.addinivalue_line("markers", "slurm_cluster: runs on the namespace Slurm cluster (set by its fixture)")
    config.addinivalue_line("markers", "training: trains models on the CPU for seconds to minutes")
    config.addinivalue_line("markers", "slurm_stream: runs in scripts/test.sh's Slurm stream")
    config.addinivalue_line("markers", "rounds_stream: runs in scripts/test.sh's rounds stream")


# modules whose tests train models on the CPU for seconds to minutes each
_TRAINING = {"test_workloads_harness", "test_workloads_train", "test_campaigns_bisect", "test_workloads_loaders",
             "test_workloads_instrument"}
# modules that train (test_reframe_library: ReFrame sessions of tiny runs) whose tests (but the
# engine ones) run in the Slurm stream, whose own tests mostly wait on Slurm, so that the streams end
# at about the same time (beside two CPU hogs: Slurm 26 min with watch's Slurm steps and neither of
# these, training 32.5 with both)
_IN_THE_SLURM_STREAM = {"test_workloads_loaders", "test_reframe_library"}
# the fixtures of a list of real release images: the tests on them (bisect, watch) measure tens of
# alternated runs each, half an hour in one stream, so they have a stream of their own
_RELEASES = {"releases", "noisy_release"}


@pytest.hookimpl(tryfirst=True)   # before -m selects by these marks
def pytest_collection_modifyitems(config, items):
    """The marks scripts/test.sh's streams select by: `slurm_cluster` for the tests on the
    cluster, `engine` for every test that uses an engine fixture, `training` for the modules
    that train, `slurm_stream` for what runs in the Slurm stream, `rounds_stream` for the tests
    on release images. Then the order: on a fresh
    machine the one .sif takes minutes to build, so the engine stream's .sif tests come first
    (it builds it at its start) and the Slurm stream's come last (by then it is there): no
    stream sits idle at the .sif's lock."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        module = item.module.__name__.rpartition(".")[2]
        if "slurm_cluster" in fixtures:
            item.add_marker(pytest.mark.slurm_cluster)
        if fixtures & {"docker_engine", "test_base", "built_image", "built_sif", "standins"}:
            item.add_marker(pytest.mark.engine)
        if module in _TRAINING:
            item.add_marker(pytest.mark.training)
        if "slurm_cluster" in fixtures or module in _IN_THE_SLURM_STREAM and not item.get_closest_marker("engine"):
            item.add_marker(pytest.mark.slurm_stream)
        if fixtures & _RELEASES:
            item.add_marker(pytest.mark.rounds_stream)

    def place(item) -> int:
        if "built_sif" not in getattr(item, "fixturenames", ()):
            return 1
        return 2 if item.get_closest_marker("slurm_stream") else 0
    items.sort(key=place)   # stable: the rest keep their order


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
