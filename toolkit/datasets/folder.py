"""The dataset folder a command writes (`data fake`, `data prepare`): made, or refused in one
line naming what stands in its way, then held, so one command at a time rewrites it."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from dnnbench import locks
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio


@contextmanager
def writing(dest: Path) -> Iterator[None]:
    try:
        fileio.make_dirs(str(dest))
    except fileio.NotRegularFile as exc:
        raise DnnbenchError(f"cannot create {dest}: {exc.filename} is {exc.kind}") from None
    except OSError as exc:
        raise DnnbenchError(f"cannot create {dest}: {exc.strerror or exc}") from None
    with locks.hold(dest, what=f"dataset folder {dest}"):
        yield


def clear(path: Path, dest: Path) -> None:
    """Remove what a command of ours left at `path` inside DEST (a half-extracted folder): a real
    folder as a tree inside DEST, anything else (a planted link) unlinked, never followed."""
    try:
        if fileio.is_real_dir(str(path)):
            fileio.remove_tree(str(path), str(dest))
        else:
            fileio.remove_file(str(path))
    except OSError as exc:
        raise DnnbenchError(f"cannot clear {path}: {exc.strerror or exc}") from None


def marker(path: Path) -> dict | None:
    """What the done marker at `path` records (the sources it was made from, the counts), None
    where there is no marker; {} for one that does not parse or that someone else wrote (the
    dataset is then prepared again)."""
    if not fileio.is_regular(str(path)):
        return None
    try:
        done = fileio.read_json(str(path), max_bytes=1 << 20)
    except (ValueError, RecursionError, OSError):
        return {}
    return done if isinstance(done, dict) else {}
