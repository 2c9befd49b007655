"""`dnnbench data prepare imagenetv2`: an ImageNetV2 archive (Recht et al. 2019; matched-frequency,
threshold-0.7 or top-images: 10,000 images in folders `0` .. `999`, each the class's index in
the sorted-wnid ImageNet order) turned into the layout the workloads evaluate on:
DEST/val/<wnid>/*.jpeg, the wnids taken from an ImageNet folder (--classes-from: its train/ or
val/ class folders) so that the class order is the one the model was trained with.

No path from the archive is trusted: only a member's class folder (a number 0..999) and its
file name are used; links, devices and other non-files are left out and counted, as are names
that are not images. A class with no image refuses the whole archive (it is not ImageNetV2, or
truncated). The images land in DEST/.partial/ first and move into place whole, under DEST's lock.
"""
from __future__ import annotations

import os
import re
import shutil
import tarfile
import time
from pathlib import Path, PurePosixPath

from dnnbench import names
from dnnbench.datasets import folder
from dnnbench.console import info, warn
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

CLASSES = 1000
IMAGES = 10000
WNID = re.compile(r"n\d{8}")
INDEX = re.compile(r"(0|[1-9]\d{0,2})")
IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png")
MARKER = ".dnnbench-imagenetv2.json"
PARTIAL = ".partial"


def wnids_from(folder: Path) -> list[str]:
    """The ImageNet class order: the sorted wnid folders of FOLDER/train (else FOLDER/val, else
    FOLDER itself), as torchvision's ImageFolder and `dnnbench train` number them."""
    for d in (folder / "train", folder / "val", folder):
        if d.is_dir() and not d.is_symlink():
            found = sorted(p.name for p in d.iterdir() if p.is_dir() and WNID.fullmatch(p.name))
            if found:
                if len(found) != CLASSES:
                    raise DnnbenchError(f"--classes-from {d} has {len(found)} wnid class folders, not ImageNet's "
                                        f"{CLASSES}: ImageNetV2's folder numbers index the 1000 classes")
                return found
    raise DnnbenchError(f"--classes-from {folder}: no nXXXXXXXX class folders in train/, val/ or itself "
                        "(give a prepared ImageNet folder)")


def prepare_command(src: Path, dest: Path, classes_from: Path | None) -> None:
    if classes_from is None:
        raise DnnbenchError("imagenetv2 needs --classes-from IMAGENET: the ImageNet folder whose sorted class "
                            "folders (wnids) the archive's folders 0..999 stand for")
    if not fileio.is_regular(str(src)):
        raise DnnbenchError(f"--from {src}: {fileio.kind_at(str(src))}, not the ImageNetV2 archive "
                            "(imagenetv2-matched-frequency.tar.gz)")
    wnids = wnids_from(classes_from)
    if names.real(dest) in names.real(src).parents:
        raise DnnbenchError(f"--from {src} lies inside --to {dest}: the archive is only read, extract it elsewhere")
    with folder.writing(dest):
        _prepare(src, dest, wnids)


def _prepare(src: Path, dest: Path, wnids: list[str]) -> None:
    st = os.stat(src)
    fingerprint = {"archive": str(names.real(src)), "size": st.st_size, "mtime": int(st.st_mtime)}
    marker = dest / MARKER
    done = folder.marker(marker) or {}
    if done.get("sources") == fingerprint and (dest / "val").is_dir():
        info(f"{dest}: already prepared from {src} ({done.get('images')} images); nothing to do")
        return
    partial = dest / PARTIAL
    for stale in (partial, dest / "val"):
        if os.path.lexists(stale):
            folder.clear(stale, dest)
    started = time.monotonic()
    counts, skipped = _extract(src, partial / "val", wnids)
    missing = [str(i) for i in range(CLASSES) if not counts.get(i)]
    if missing:
        folder.clear(partial, dest)
        raise DnnbenchError(f"{src}: {len(missing)} of {CLASSES} classes have no image (folders "
                            f"{', '.join(missing[:8])}{', ...' if len(missing) > 8 else ''}): not a whole "
                            "ImageNetV2 archive")
    os.rename(partial / "val", dest / "val")
    folder.clear(partial, dest)
    images = sum(counts.values())
    fileio.write_json(str(marker), {"sources": fingerprint, "images": images, "classes": CLASSES,
                                    "prepared": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    for what, n in sorted(skipped.items()):
        warn(f"{src}: {n} member(s) left out: {what}")
    info(f"{dest}/val: {images} images in {CLASSES} classes ({time.monotonic() - started:.0f} s)"
         + ("" if images == IMAGES else f"; ImageNetV2 has {IMAGES}"))


def _extract(src: Path, into: Path, wnids: list[str]) -> tuple[dict[int, int], dict[str, int]]:
    """Stream the archive: each image to INTO/<wnid>/<name>; (images per class index, what was
    left out and how often)."""
    counts: dict[int, int] = {}
    skipped: dict[str, int] = {}
    made: set[int] = set()

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1
    fileio.make_dirs(str(into))
    try:
        with fileio.open_input(src) as raw, tarfile.open(fileobj=raw, mode="r|*") as tar:
            for m in tar:
                if m.isdir():
                    continue
                if not m.isfile():
                    skip("links, devices and other non-files")
                    continue
                parts = PurePosixPath(m.name).parts
                if len(parts) < 2 or not INDEX.fullmatch(parts[-2]):
                    skip("not in a class folder 0..999")
                    continue
                index, name = int(parts[-2]), parts[-1]
                if name.startswith(".") or not name.lower().endswith(IMAGE_SUFFIXES):
                    skip("not an image file name")
                    continue
                if index not in made:
                    (into / wnids[index]).mkdir()
                    made.add(index)
                fh = tar.extractfile(m)
                if fh is None:
                    skip("unreadable members")
                    continue
                with fileio.open_write(into / wnids[index] / name, binary=True) as out:
                    shutil.copyfileobj(fh, out, 1 << 20)
                counts[index] = counts.get(index, 0) + 1
    except (tarfile.TarError, EOFError) as exc:
        raise DnnbenchError(f"{src} is damaged or not a tar archive ({exc}): check the download") from None
    except OSError as exc:
        raise DnnbenchError(f"cannot extract {src}: {exc.strerror or exc}") from None
    return counts, skipped



def problems(path: Path) -> list[str]:
    """What is wrong with a prepared ImageNetV2 folder (`data verify DIR --kind imagenetv2`)."""
    val = Path(path) / "val"
    if not fileio.is_real_dir(str(val)):
        return [f"{path} has no val/ folder (prepare it with `dnnbench data prepare imagenetv2`)"]
    classes = sorted(p for p in val.iterdir() if p.is_dir() and not p.is_symlink())
    out = []
    if len(classes) != CLASSES:
        out.append(f"{val} has {len(classes)} class folders, not {CLASSES}")
    bad = [p.name for p in classes if not WNID.fullmatch(p.name)]
    if bad:
        out.append(f"{val}: folders not named by wnid: {', '.join(bad[:5])}")
    empty = [p.name for p in classes if not any(q.is_file() and not q.is_symlink() for q in p.iterdir())]
    if empty:
        out.append(f"{val}: {len(empty)} class folders without an image (e.g. {empty[0]})")
    links = [str(q) for p in classes for q in p.iterdir() if q.is_symlink()]
    if links:
        out.append(f"{val}: {len(links)} links where images belong (e.g. {links[0]})")
    return out
