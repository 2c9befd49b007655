"""The file layer (dnnbench.workloads.fileio): every kind of thing a user or an attacker can
plant where dnnbench reads or writes a file, drawn by hypothesis, against one set of rules:
regular files only, no link followed, never blocking, bounded reads, atomic writes."""
from __future__ import annotations

import os
import socket
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dnnbench.workloads import fileio

KINDS = ["missing", "regular", "empty", "link-to-regular", "dangling-link", "link-loop", "fifo",
         "folder", "char-device", "socket", "huge"]


def plant(path, kind, victim):
    """Make `path` a `kind`; `victim` is a regular file outside that links point at."""
    if kind == "regular":
        path.write_bytes(b"old")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "link-to-regular":
        path.symlink_to(victim)
    elif kind == "dangling-link":
        path.symlink_to(victim.parent / "nowhere" / "x")
    elif kind == "link-loop":
        path.symlink_to(path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "char-device":
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))   # /dev/zero's numbers
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    elif kind == "huge":
        with open(path, "wb") as fh:
            fh.truncate(64 * 2**20)


@pytest.fixture
def planted(tmp_path):
    """`planted(kind)`: a path made a `kind`, in a folder of its own (hypothesis's examples share
    the fixture), and the regular file outside that links point at."""
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_bytes(b"victim")

    def make(kind):
        path = Path(tempfile.mkdtemp(dir=tmp_path)) / "f"
        plant(path, kind, victim)
        return path, victim
    return make


SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(kind=st.sampled_from(KINDS))
def test_read_is_regular_bounded_and_never_blocks(planted, kind):
    path, victim = planted(kind)
    if kind in ("regular", "empty"):
        assert fileio.read_bytes(path, 1024) == (b"old" if kind == "regular" else b"")
    elif kind == "missing":
        with pytest.raises(FileNotFoundError):
            fileio.read_bytes(path, 1024)
    else:
        with pytest.raises((fileio.NotRegularFile, fileio.FileTooLarge)) as info:
            fileio.read_bytes(path, 1024)
        assert info.value.strerror
    assert victim.read_bytes() == b"victim"


@SETTINGS
@given(kind=st.sampled_from(KINDS), payload=st.dictionaries(st.text(max_size=5), st.floats() | st.integers()))
def test_atomic_write_replaces_files_and_links_never_through_them(planted, kind, payload):
    path, victim = planted(kind)
    box = path.parent
    before = sorted(os.listdir(box))
    if kind in ("fifo", "folder", "char-device", "socket"):
        with pytest.raises(fileio.NotRegularFile):
            fileio.write_json(path, payload)
        assert sorted(os.listdir(box)) == before, "a temp file was left"
    else:
        fileio.write_json(path, payload)
        assert stat.S_ISREG(os.lstat(path).st_mode)
        assert fileio.read_json(path) is not None
        assert sorted(os.listdir(box)) == sorted(set(before) | {path.name})
    assert victim.read_bytes() == b"victim"


@SETTINGS
@given(kind=st.sampled_from(KINDS))
def test_append_and_lock_files_refuse_links_and_special_files(planted, kind):
    path, victim = planted(kind)
    if kind in ("missing", "regular", "empty", "huge"):
        with fileio.open_append(path) as fh:
            fh.write("line\n")
        assert fileio.read_bytes(path, 2**27).endswith(b"line\n")
        os.close(fileio.open_fd(path, os.O_RDWR | os.O_CREAT))
    else:
        with pytest.raises(fileio.NotRegularFile):
            fileio.open_append(path)
        with pytest.raises(fileio.NotRegularFile):
            os.close(fileio.open_fd(path, os.O_RDWR | os.O_CREAT))
    assert victim.read_bytes() == b"victim"
    assert not (victim.parent / "nowhere").exists()


def test_read_is_bounded_even_when_size_lies(tmp_path):
    with pytest.raises(fileio.NotRegularFile):
        fileio.read_bytes("/dev/zero", 1024)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(fileio.FileTooLarge):
        fileio.read_bytes(big, 1024)


def test_make_dirs_refuses_a_planted_link_below_root(tmp_path):
    root, outside = tmp_path / "results", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "run").symlink_to(outside)
    with pytest.raises(fileio.NotRegularFile):
        fileio.make_dirs(root / "run" / "profile", root=root)
    assert list(outside.iterdir()) == []
    # a link above the root (the system's) is followed
    (tmp_path / "alias").symlink_to(root)
    assert os.path.isdir(fileio.make_dirs(tmp_path / "alias" / "a" / "b", root=tmp_path / "alias"))


def test_remove_tree_only_real_folders_under_root(tmp_path):
    root, outside = tmp_path / "results", tmp_path / "outside"
    (root / "r1" / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "keep").write_text("k")
    (root / "r1" / "sub" / "link").symlink_to(outside)
    (root / "r2").symlink_to(outside)
    with pytest.raises(OSError):
        fileio.remove_tree(root / "r2", root)
    with pytest.raises(OSError):
        fileio.remove_tree(root, root)
    with pytest.raises(OSError):
        fileio.remove_tree(outside, root)
    fileio.remove_tree(root / "r1", root)
    assert not (root / "r1").exists() and (outside / "keep").read_text() == "k"


def test_output_never_lands_on_an_input(tmp_path):
    src = tmp_path / "a" / "result.json"
    src.parent.mkdir()
    src.write_text("{}")
    (tmp_path / "alias").symlink_to(tmp_path / "a")
    for out in (src, tmp_path / "alias" / "result.json", tmp_path / "a" / ".." / "a" / "result.json"):
        with pytest.raises(OSError):
            fileio.refuse_overwrite_of(out, [src])
    fileio.refuse_overwrite_of(tmp_path / "report.json", [src])


def test_strict_json_has_no_infinity(tmp_path):
    fileio.write_json(tmp_path / "x.json", {"a": float("inf"), "b": [float("nan")]})
    text = (tmp_path / "x.json").read_text()
    assert "Infinity" not in text.replace('"inf"', "") and "NaN" not in text
