"""Releases of one image, built by the real Docker engine: each an image FROM the test image whose
optimizer step sleeps given times in turn, with a label of its own (an image that changed a kernel
or a threading default, made slower on purpose). tests/test_campaigns_bisect.py, tests/test_campaigns_watch.py
and benchmarks/bisect_under_load.py measure them. `sif_release`: the same as a .sif, for Slurm
(tests/test_campaigns_slurm.py)."""
from __future__ import annotations

import shutil
import subprocess
import uuid
from contextlib import contextmanager
from pathlib import Path

STEP = '''import time
import torch.optim
DELAYS, _calls = {delays!r}, [0]
def _work(seconds):
    {work}
def _slowed(cls):
    _step = cls.step
    def step(self, *args, **kwargs):
        _calls[0] += 1
        _work(DELAYS[_calls[0] % len(DELAYS)])
        return _step(self, *args, **kwargs)
    cls.step = step
for _cls in (torch.optim.SGD, torch.optim.Adam):
    _slowed(_cls)
'''
# what the optimizer step adds: a sleep (a kernel that waits), or `spin`: the seconds in CPU time
# of its thread (a kernel that computes: beside CPU hogs its wall time stretches, its CPU time not)
WORK = {"sleep": "time.sleep(seconds)",
        "spin": "end = time.thread_time() + seconds\n    while time.thread_time() < end:\n        pass"}


def release(base: str, root: Path, name: str, delays: list[float], repo: str = "dnnbench-test-bisect",
            work: str = "sleep") -> str:
    """An image FROM `base` whose optimizer step sleeps (or spins: `work`) `delays` in turn; its
    reference."""
    folder = root / name
    (folder / "step").mkdir(parents=True)
    (folder / "step" / "sitecustomize.py").write_text(STEP.format(delays=delays, work=WORK[work]))
    (folder / "Dockerfile").write_text(f"FROM {base}\nCOPY step/ /opt/step/\n"
                                       f"ENV PYTHONPATH=/opt/step:${{PYTHONPATH}}\nLABEL release={name}\n")
    ref = f"{repo}:{root.name[-8:]}-{uuid.uuid4().hex[:6]}-{name}"
    subprocess.run(["docker", "build", "-q", "-t", ref, str(folder)], check=True, capture_output=True, timeout=900)
    return ref


def remove(refs: list[str]) -> None:
    subprocess.run(["docker", "rmi", "-f", *refs], capture_output=True)


@contextmanager
def series(base: str, root: Path, prefix: str, count: int, slow_from: int, good: list[float],
           slow: list[float], repo: str = "dnnbench-test-bisect", work: str = "sleep"):
    """PREFIX1..PREFIXcount in release order, from `slow_from` (1-based) on slower; removed
    again on leaving, also the ones built before a build failed."""
    made: list[str] = []
    try:
        for i in range(1, count + 1):
            made.append(release(base, root, f"{prefix}{i}", slow if i >= slow_from else good, repo, work))
        yield made
    finally:
        remove(made)


def sif_release(sif: Path, root: Path, name: str, delays: list[float]) -> Path:
    """A copy of the .sif `sif` whose optimizer step sleeps `delays` in turn: the step's module
    rides in an ext3 overlay partition added to the copy (`apptainer sif add`), which Apptainer
    mounts read-only over the image; a second, not a rebuild of gigabytes."""
    folder = root / name
    (folder / "overlay" / "upper" / "opt" / "step").mkdir(parents=True)
    (folder / "overlay" / "upper" / ".singularity.d" / "env").mkdir(parents=True)
    (folder / "overlay" / "work").mkdir()
    (folder / "overlay" / "upper" / "opt" / "step" / "sitecustomize.py").write_text(
        STEP.format(delays=delays, work=WORK["sleep"]))
    (folder / "overlay" / "upper" / ".singularity.d" / "env" / "95-release.sh").write_text(
        'export PYTHONPATH="/opt/step:${PYTHONPATH:-}"\n')
    made = folder / f"{name}.sif"
    shutil.copyfile(sif, made)
    subprocess.run(["mkfs.ext3", "-q", "-d", str(folder / "overlay"), str(folder / "overlay.img"), "4M"],
                   check=True, capture_output=True)
    subprocess.run(["apptainer", "sif", "add", "--datatype", "4", "--partfs", "2", "--parttype", "4",
                    "--partarch", "2", "--groupid", "1", str(made), str(folder / "overlay.img")],
                   check=True, capture_output=True)
    return made
