"""`dnnbench data fake`: datasets of the right layout from random pixels (real JPEGs, real COCO
JSON), so the real-data path runs anywhere."""
from __future__ import annotations

import shutil
from pathlib import Path

from dnnbench.datasets import folder
from dnnbench.console import info, progress
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

FAKE_KINDS = ("imagenet", "coco", "text", "ratings")


def _progress():
    from rich.progress import MofNCompleteColumn, TimeRemainingColumn
    return progress(MofNCompleteColumn(), TimeRemainingColumn(), transient=True)


def need_pillow(why: str) -> None:
    """Pillow, or one line saying how to get it (the image kinds' workers import it)."""
    import importlib
    try:
        importlib.import_module("PIL.Image")
    except ImportError:
        raise DnnbenchError(f"{why} with Pillow, which is not installed: pip install pillow "
                            "(or pip install 'dnnbench[torch]')") from None


def fake_command(kind: str, dest: Path, images: int, classes: int, size: int, workers: int | None) -> None:
    if kind not in FAKE_KINDS:
        raise DnnbenchError(f"unknown dataset kind {kind!r}: choose {', '.join(FAKE_KINDS)}")
    if not (1 <= images <= 10**7 and 1 <= classes <= 10**5 and 8 <= size <= 8192):
        raise DnnbenchError("--images must be 1 to 10,000,000, --classes 1 to 100,000, --size 8 to 8192")
    if kind == "imagenet" and classes > images:   # a class with no training image fails `data verify`
        raise DnnbenchError(f"--classes {classes} is more than --images {images}: every class needs at least "
                            f"one training image")
    if workers is not None and not 1 <= workers <= 256:
        raise DnnbenchError(f"--workers {workers}: give 1 to 256")
    if kind in ("imagenet", "coco"):
        need_pillow(f"`data fake {kind}` writes JPEGs")
    with folder.writing(dest):
        _write(kind, dest, images, classes, size, workers)


def _write(kind: str, dest: Path, images: int, classes: int, size: int, workers: int | None) -> None:
    from dnnbench.workloads import data as data_mod
    # Blocky JPEGs average ~10-30 KB at 256 px; ask for 3x that, plus room for the filesystem.
    need = images * 1.2 * (size * size * 3) / 16 + 2**20
    free = shutil.disk_usage(dest).free
    if kind in ("imagenet", "coco") and free < need:
        raise DnnbenchError(f"{dest} has {free / 2**20:.0f} MiB free; {images} images of {size}px need "
                            f"about {need / 2**20:.0f} MiB")
    with _progress() as bar:
        task = bar.add_task(f"fake {kind}", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
        try:
            if kind == "imagenet":
                n = data_mod.fake_imagenet(str(dest), images=images, classes=classes, size=(size, size),
                                           workers=workers, progress=progress)
            elif kind == "coco":
                n = data_mod.fake_coco(str(dest), images=images, size=(size, size), workers=workers,
                                       progress=progress)
            elif kind == "text":
                n = data_mod.fake_text(str(dest), words=images * 100)
            else:
                n = data_mod.fake_ratings(str(dest), ratings=images * 100)
        except fileio.NotRegularFile as exc:
            raise DnnbenchError(f"writing the fake dataset into {dest} failed: {exc.filename} is {exc.kind}, "
                                f"not a file dnnbench writes") from None
        except OSError as exc:
            raise DnnbenchError(f"writing the fake dataset into {dest} failed: {exc.strerror or exc}"
                                f"{' (disk full)' if getattr(exc, 'errno', None) == 28 else ''}") from None
    info(f"{dest}: {'already complete (done marker found)' if n == 0 else f'wrote a fake {kind} dataset'}")
