"""`dnnbench data prepare imagenet`: the ILSVRC2012 tars as distributed, turned into the layout
the workloads read (train/<wnid>/*.JPEG, val/<wnid>/*.JPEG), replacing the hand-run
`tar -xvf ...; find -name '*.tar' | ...; valprep.sh` of the seed suites.

Safe to interrupt and rerun: every class (and val) is extracted under DEST/.partial/ and renamed
into place when whole, so a class folder that exists is complete and a rerun skips it; a done
marker makes a finished dataset a no-op. The user's tars are only ever read.
"""
from __future__ import annotations

import errno
import io
import os
import re
import shutil
import tarfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from dnnbench.console import err, escape, info, progress, warn
from dnnbench import names
from dnnbench.datasets import folder
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

TRAIN_TAR = "ILSVRC2012_img_train.tar"
VAL_TAR = "ILSVRC2012_img_val.tar"
DEVKIT = "ILSVRC2012_devkit_t12.tar.gz"
MARKER = ".dnnbench-prepared.json"
PARTIAL = ".partial"
WNID = re.compile(r"\bn\d{8}\b")
VAL_IMAGE = re.compile(r"ILSVRC2012_val_(\d{8})")
# Per-file filesystem overhead on top of the JPEG bytes (a 4 KiB block half wasted, inodes).
FILE_OVERHEAD = 4096


@dataclass
class Unit:
    """One thing extracted and renamed into place as a whole: a class's tar, or the val set."""
    name: str                   # "train/n01440764" or "val"
    tar: Path                   # the tar holding the data (outer tar or a class tar file)
    offset: int                 # where the unit's bytes start in `tar`
    size: int                   # bytes to read
    members: list = field(default_factory=list)  # val: (offset, size, file name, wnid)
    files: int = 0


def prepare_command(kind: str, src: Path, dest: Path, val_map: Path | None, workers: int | None) -> None:
    if kind != "imagenet":
        raise DnnbenchError(f"`data prepare` knows imagenet (ILSVRC2012 tars); got {kind!r}. "
                            "For COCO, unzip train2017.zip and annotations_trainval2017.zip into one folder "
                            "and run `dnnbench data verify DIR --kind coco`")
    if not src.is_dir():
        raise DnnbenchError(f"--from {src} is not a folder (it should hold {TRAIN_TAR} and {VAL_TAR})")
    if val_map is not None and not fileio.is_regular(str(val_map)):
        raise DnnbenchError(f"--val-map {val_map}: {fileio.kind_at(str(val_map))}, not a regular file")
    _refuse_overlap(src, dest)
    # everything below rewrites or removes what is in DEST: one `data prepare` or `data fake` at a time
    with folder.writing(dest):
        _prepare(src, dest, val_map, workers)


def _refuse_overlap(src: Path, dest: Path) -> None:
    """--from and --to must not overlap (links resolved): DEST's staging is removed, and the
    tars are only ever read. `--from out/.partial --to out` once deleted the user's tars."""
    a, b = names.real(src), names.real(dest)
    if a == b or a in b.parents or b in a.parents:
        raise DnnbenchError(f"--from {src} and --to {dest} overlap (one is inside the other): the tars "
                            f"stay untouched, so extract them into a folder of its own")


def _prepare(src: Path, dest: Path, val_map: Path | None, workers: int | None) -> None:
    fingerprint = _fingerprint(src, val_map)
    marker = dest / MARKER
    done = folder.marker(marker)
    if done is not None:
        if done.get("sources") == fingerprint:
            info(f"{dest}: already prepared from {src} ({done.get('classes')} classes, "
                 f"{done.get('train_images')} train / {done.get('val_images')} val images); nothing to do")
            return
        warn(f"{marker} was written for other tars; preparing again (finished classes are kept)")

    with err.status(escape(f"reading the tar indexes in {src}")):
        units = _train_units(src) + _val_units(src, val_map)
    _check_places(dest, units)
    todo = [u for u in units if not fileio.is_real_dir(str(dest / u.name))]
    _check_space(dest, todo, done=len(units) - len(todo))

    partial = dest / PARTIAL
    if os.path.lexists(partial):
        folder.clear(partial, dest)    # ours alone (we hold DEST's lock): half-extracted units
    started = time.monotonic()
    if todo:
        _extract(todo, dest, workers or min(8, os.cpu_count() or 1))
    if os.path.lexists(partial):
        folder.clear(partial, dest)

    from dnnbench.workloads import data as data_mod
    found = data_mod.problems(str(dest), "imagenet")
    if found:
        raise DnnbenchError(f"{dest} was extracted but does not check out: " + "; ".join(found))
    train_dirs = sorted(p for p in (dest / "train").iterdir() if p.is_dir())
    counts = {"classes": len(train_dirs),
              "train_images": sum(len(os.listdir(p)) for p in train_dirs),
              "val_images": sum(len(os.listdir(p)) for p in (dest / "val").iterdir())
              if (dest / "val").is_dir() else 0}
    fileio.write_json(str(marker), {"sources": fingerprint, **counts,
                                    "prepared": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    info(f"{dest}: {counts['classes']} classes, {counts['train_images']} train and {counts['val_images']} val "
         f"images ({len(todo)} of {len(units)} parts extracted in {time.monotonic() - started:.0f} s; "
         f"{len(units) - len(todo)} were already done)")


def _check_places(dest: Path, units: list[Unit]) -> None:
    """Every folder the dataset will occupy (train, val, each class, .partial) is a real folder
    or absent: a file, link, FIFO or device there is named in one line before anything is
    extracted, not met half-way as a FileExistsError (.partial alone is ours to clear)."""
    places = {"train", "val"} | {u.name for u in units}
    for name in sorted(places, key=lambda n: (n.count("/"), n)):
        path = str(dest / name)
        if os.path.lexists(path) and not fileio.is_real_dir(path):
            raise DnnbenchError(f"{path} is {fileio.kind_at(path)} where the dataset's folder {name} belongs: "
                                f"move it away and run the same command again")


# --- sources -------------------------------------------------------------------------

def _fingerprint(src: Path, val_map: Path | None) -> dict:
    """What the marker was made from: a changed or replaced tar means preparing again."""
    files = [p for p in sorted(src.iterdir()) if p.is_file() and p.name.endswith((".tar", ".tar.gz"))]
    if val_map is not None:
        files.append(val_map)
    stats = {p: p.stat() for p in files}
    return {os.path.realpath(p): [st.st_size, st.st_mtime_ns] for p, st in stats.items()}


def _open_index(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(fileobj=fileio.open_input(path), mode="r:")   # uncompressed: seekable members
    except tarfile.ReadError as exc:
        raise DnnbenchError(f"{path} is not an uncompressed tar ({exc}); ImageNet's tars are plain .tar: "
                            "check the download (size, md5)") from None
    except OSError as exc:
        raise DnnbenchError(f"cannot read {path}: {exc.strerror or exc}") from None


def _members(tar: tarfile.TarFile, path: Path) -> list[tarfile.TarInfo]:
    try:
        return [m for m in tar.getmembers() if m.isfile()]
    except (tarfile.ReadError, EOFError) as exc:
        raise DnnbenchError(f"{path} is damaged or truncated ({exc}): check the download (size, md5)") from None


def _train_units(src: Path) -> list[Unit]:
    """Class tars: inside ILSVRC2012_img_train.tar, or already unpacked from it into --from
    (or --from/train) as nXXXXXXXX.tar files."""
    outer = src / TRAIN_TAR
    if os.path.lexists(outer):
        with _open_index(outer) as tar:
            members = _members(tar, outer)
        units = [Unit(f"train/{Path(m.name).name[:-4]}", outer, m.offset_data, m.size)
                 for m in members if WNID.fullmatch(Path(m.name).name[:-4] or "") and m.name.endswith(".tar")]
        if not units:
            raise DnnbenchError(f"{outer} holds no per-class nXXXXXXXX.tar files: is it the ILSVRC2012 train tar?")
        return units
    loose = sorted(p for d in (src, src / "train") if d.is_dir() for p in d.glob("n*.tar") if WNID.fullmatch(p.stem))
    for p in loose:
        if not p.is_file():     # links followed; a FIFO or device named like a class tar is not read
            raise DnnbenchError(f"{p} is {fileio.kind_at(os.path.realpath(p))}, not a class tar: remove it from --from")
    if loose:
        return [Unit(f"train/{p.stem}", p, 0, p.stat().st_size) for p in loose]
    raise DnnbenchError(f"{src} has no {TRAIN_TAR} (nor nXXXXXXXX.tar class tars): "
                        f"found {', '.join(sorted(p.name for p in src.iterdir())[:8]) or 'nothing'}")


def _val_units(src: Path, val_map: Path | None) -> list[Unit]:
    outer = src / VAL_TAR
    if not os.path.lexists(outer):
        warn(f"{src} has no {VAL_TAR}: preparing train/ only")
        return []
    labels = _labels_from_map(val_map) if val_map else _labels_from_devkit(src)
    with _open_index(outer) as tar:
        members = _members(tar, outer)
    unit = Unit("val", outer, 0, 0)
    unlabelled = []
    for m in members:
        name = Path(m.name).name
        number = VAL_IMAGE.search(name)
        wnid = labels.get(int(number.group(1))) if number else None
        if wnid is None:
            unlabelled.append(name)
            continue
        unit.members.append((m.offset_data, m.size, name, wnid))
        unit.size += m.size
    if unlabelled:
        raise DnnbenchError(f"{len(unlabelled)} of {len(members)} images in {outer} have no label in "
                            f"{val_map or DEVKIT} (e.g. {unlabelled[0]}): is it the mapping for ILSVRC2012 val?")
    unit.files = len(unit.members)
    return [unit]


def _labels_from_map(path: Path) -> dict[int, str]:
    """Val image number -> wnid from any file that names both on a line: `NAME WNID` lists,
    Kaggle's LOC_val_solution.csv, or soumith's valprep.sh (`mv NAME WNID/`)."""
    labels: dict[int, str] = {}
    with io.TextIOWrapper(fileio.open_input(path), errors="replace") as fh:
        for line in fh:
            number, wnid = VAL_IMAGE.search(line), WNID.search(line)
            if number and wnid:
                labels.setdefault(int(number.group(1)), wnid.group(0))
    if not labels:
        raise DnnbenchError(f"--val-map {path} names no val image with its class: expected lines like "
                            "'ILSVRC2012_val_00000001.JPEG n01751748' (valprep.sh and LOC_val_solution.csv work too)")
    return labels


def _labels_from_devkit(src: Path) -> dict[int, str]:
    """Val image number -> wnid from the devkit: ground truth ILSVRC2012_IDs, wnids from meta.mat."""
    devkit = src / DEVKIT
    if not devkit.is_file():
        raise DnnbenchError(f"sorting val into class folders needs {DEVKIT} in {src}, or --val-map FILE "
                            "(lines 'ILSVRC2012_val_00000001.JPEG n01751748'; valprep.sh works too)")
    try:
        from scipy.io import loadmat
    except ImportError:
        raise DnnbenchError("reading the devkit's meta.mat needs scipy: pip install 'dnnbench[data]' "
                            "(or pass --val-map FILE)") from None
    try:
        with tarfile.open(fileobj=fileio.open_input(devkit)) as tar:
            names = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
            meta = names.get("meta.mat")
            truth = names.get("ILSVRC2012_validation_ground_truth.txt")
            if meta is None or truth is None:
                raise DnnbenchError(f"{devkit} lacks data/meta.mat or data/ILSVRC2012_validation_ground_truth.txt")
            synsets = loadmat(io.BytesIO(_member(tar, meta).read()), squeeze_me=True)["synsets"]
            ids = [int(x) for x in _member(tar, truth).read().split()]
    except (tarfile.TarError, EOFError, OSError, KeyError, ValueError) as exc:
        raise DnnbenchError(f"cannot read {devkit}: {exc}") from None
    wnid_of = {int(s["ILSVRC2012_ID"]): str(s["WNID"]) for s in synsets if int(s["num_children"]) == 0}
    try:
        return {i + 1: wnid_of[class_id] for i, class_id in enumerate(ids)}
    except KeyError as exc:
        raise DnnbenchError(f"{devkit}: ground truth names class id {exc} that meta.mat does not have") from None


# --- extraction ----------------------------------------------------------------------

def _check_space(dest: Path, todo: list[Unit], done: int) -> None:
    # A class tar's bytes are its JPEGs plus 512-byte headers: a slight overestimate, as wanted.
    need = sum(u.size + FILE_OVERHEAD * (u.files or u.size // 110_000 + 1) for u in todo)
    free = shutil.disk_usage(dest).free
    if need > free:
        raise DnnbenchError(f"{dest} has {free / 2**30:.1f} GiB free; extracting {len(todo)} parts needs about "
                            f"{need / 2**30:.1f} GiB{f' ({done} parts already done)' if done else ''}: free space "
                            "or choose another --to")


class _Slice(io.RawIOBase):
    """Bytes [offset, offset + size) of a file, read through its own handle (one per thread)."""

    def __init__(self, path: Path, offset: int, size: int):
        self._fh = fileio.open_input(path)
        self._fh.seek(offset)
        self._left = size

    def readable(self):
        return True

    def readinto(self, buf):
        n = self._fh.readinto(memoryview(buf)[:min(len(buf), self._left)])
        self._left -= n
        return n

    def close(self):
        self._fh.close()
        super().close()


def _extract_class(unit: Unit, into: Path, advance) -> None:
    into.mkdir(parents=True)
    with _Slice(unit.tar, unit.offset, unit.size) as raw, \
            tarfile.open(fileobj=io.BufferedReader(raw, 1 << 20), mode="r|") as tar:
        for m in tar:
            name = Path(m.name).name          # flat class folders; no path from the tar is trusted
            if not m.isfile() or not name or name.startswith("."):
                continue
            with fileio.open_write(into / name, binary=True) as fh:
                shutil.copyfileobj(_member(tar, m), fh, 1 << 20)
            advance(m.size + 512)


def _extract_val(unit: Unit, into: Path, advance) -> None:
    with fileio.open_input(unit.tar) as src:
        for wnid in {w for *_, w in unit.members}:
            (into / wnid).mkdir(parents=True, exist_ok=True)
        for offset, size, name, wnid in unit.members:
            src.seek(offset)
            with fileio.open_write(into / wnid / name, binary=True) as fh:
                fh.write(src.read(size))
            advance(size)


def _extract(todo: list[Unit], dest: Path, workers: int) -> None:
    from rich.progress import DownloadColumn, TimeRemainingColumn, TransferSpeedColumn
    with progress(DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(f"extracting {len(todo)} parts", total=sum(u.size for u in todo))
        stop = threading.Event()   # set on Ctrl-C or a failure: the other threads stop at their next file

        def advance(n: int) -> None:
            if stop.is_set():
                raise _Stopped
            bar.advance(task, n)

        def one(unit: Unit) -> None:
            work = dest / PARTIAL / unit.name
            try:
                (_extract_val if unit.name == "val" else _extract_class)(unit, work, advance)
            except (tarfile.ReadError, EOFError) as exc:
                raise DnnbenchError(f"{unit.tar}: {unit.name} is damaged or truncated ({exc}); the parts "
                                    "extracted so far are kept: replace the tar and run again") from None
            except OSError as exc:
                full = exc.errno == errno.ENOSPC
                raise DnnbenchError(f"{'disk full' if full else exc.strerror or exc} while writing {work}"
                                    f"{': free space and' if full else ';'} run the same command again to resume "
                                    "(finished classes are kept)") from None
            (dest / unit.name).parent.mkdir(parents=True, exist_ok=True)
            os.rename(work, dest / unit.name)     # whole or absent: a rerun skips what exists

        with ThreadPoolExecutor(workers) as pool:
            futures = [pool.submit(one, u) for u in sorted(todo, key=lambda u: -u.size)]
            try:
                for f in futures:
                    f.result()
            except BaseException:
                stop.set()
                for f in futures:
                    f.cancel()
                raise


class _Stopped(Exception):
    pass


def _member(tar, member):
    """A regular member's content (extractfile gives None for anything else)."""
    fh = tar.extractfile(member)
    if fh is None:
        raise tarfile.TarError(f"{member.name} is not a regular file")
    return fh
