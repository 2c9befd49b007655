"""`data prepare imagenetv2` on fake archives of ImageNetV2's layout (folders 0..999 under one
top folder), with its hostile cases: links and devices as members, paths that climb out, folders
that are not a class index, missing classes; and `data verify --kind imagenetv2`."""
import io
import os
import tarfile

import pytest

from tests.helpers import dnnbench, one_line_error

TOP = "imagenetv2-matched-frequency-format-val"


@pytest.fixture(scope="module")
def imagenet(tmp_path_factory):
    """An ImageNet folder's class order: 1000 wnid folders in train/ (numbers chosen so that
    their sorted order is not the order they were made in)."""
    root = tmp_path_factory.mktemp("imagenet")
    for k in range(1000):
        (root / "train" / f"n{(k * 7919) % 10**8:08d}").mkdir(parents=True)
    return root


def _archive(path, classes=range(1000), extra=()):
    with tarfile.open(path, "w:gz") as tar:
        for k in classes:
            data = f"image of class {k}".encode()
            info = tarfile.TarInfo(f"{TOP}/{k}/{k:04d}a.jpeg")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _member(name, kind=tarfile.REGTYPE, data=b"x", link=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data if kind == tarfile.REGTYPE else None


def test_folders_0_to_999_become_the_sorted_wnids_and_hostile_members_are_left_out(tmp_path, imagenet):
    outside = tmp_path / "outside"
    outside.mkdir()
    extra = [_member(f"{TOP}/3/link.jpeg", tarfile.SYMTYPE, link="/etc/passwd"),
             _member(f"{TOP}/4/hard.jpeg", tarfile.LNKTYPE, link=f"{TOP}/0/0000a.jpeg"),
             _member(f"{TOP}/5/dev.jpeg", tarfile.CHRTYPE),
             _member(f"../../{outside.name}/6/climb.jpeg"),
             _member(f"/abs/{TOP}/7/abs.jpeg"),
             _member(f"{TOP}/1000/x.jpeg"), _member(f"{TOP}/abc/x.jpeg"), _member(f"{TOP}/8/notes.txt"),
             _member(f"{TOP}/9/.hidden.jpeg")]
    src = _archive(tmp_path / "v2.tar.gz", extra=extra)
    dest = tmp_path / "v2"
    res = dnnbench("data", "prepare", "imagenetv2", "--from", src, "--to", dest, "--classes-from", imagenet)
    assert res.returncode == 0, res.stderr
    wnids = sorted(os.listdir(imagenet / "train"))
    assert sorted(os.listdir(dest / "val")) == wnids
    for k in (0, 1, 500, 999):   # folder k holds class k of the sorted order
        assert (dest / "val" / wnids[k] / f"{k:04d}a.jpeg").read_bytes() == f"image of class {k}".encode()
    # a climbing or absolute path keeps only its class folder and file name; nothing lands outside
    assert (dest / "val" / wnids[6] / "climb.jpeg").is_file() and (dest / "val" / wnids[7] / "abs.jpeg").is_file()
    assert list(outside.iterdir()) == []
    for k, name in ((3, "link.jpeg"), (4, "hard.jpeg"), (5, "dev.jpeg"), (8, "notes.txt"), (9, ".hidden.jpeg")):
        assert not os.path.lexists(dest / "val" / wnids[k] / name)
    assert "3 member(s) left out: links, devices" in res.stderr and "not in a class folder" in res.stderr
    assert dnnbench("data", "verify", dest, "--kind", "imagenetv2").returncode == 0
    again = dnnbench("data", "prepare", "imagenetv2", "--from", src, "--to", dest, "--classes-from", imagenet)
    assert again.returncode == 0 and "nothing to do" in again.stderr


def test_missing_classes_refuse_the_archive_and_leave_nothing(tmp_path, imagenet):
    src = _archive(tmp_path / "v2.tar.gz", classes=[k for k in range(1000) if k not in (17, 400)])
    dest = tmp_path / "v2"
    res = dnnbench("data", "prepare", "imagenetv2", "--from", src, "--to", dest, "--classes-from", imagenet)
    one_line_error(res, "2 of 1000 classes have no image", "17, 400")
    assert not (dest / "val").exists() and not (dest / ".partial").exists()


@pytest.mark.parametrize("make, fragment", [
    (lambda p: os.mkfifo(p), "not the ImageNetV2 archive"),
    (lambda p: p.write_bytes(b"not a tar at all" * 100), "damaged or not a tar"),
    (lambda p: os.symlink("/etc/passwd", p), "not the ImageNetV2 archive"),
])
def test_an_archive_that_is_not_one_is_one_line(tmp_path, imagenet, make, fragment):
    src = tmp_path / "v2.tar.gz"
    make(src)
    res = dnnbench("data", "prepare", "imagenetv2", "--from", src, "--to", tmp_path / "v2",
                   "--classes-from", imagenet, timeout=60)
    one_line_error(res, fragment)


def test_the_class_order_comes_from_a_whole_imagenet(tmp_path):
    partial = tmp_path / "in"
    for k in range(10):
        (partial / "train" / f"n{k:08d}").mkdir(parents=True)
    src = _archive(tmp_path / "v2.tar.gz", classes=range(3))
    one_line_error(dnnbench("data", "prepare", "imagenetv2", "--from", src, "--to", tmp_path / "v2",
                            "--classes-from", partial), "10 wnid class folders, not ImageNet's 1000")
    one_line_error(dnnbench("data", "prepare", "imagenetv2", "--from", src, "--to", tmp_path / "v2"),
                   "--classes-from")


def test_verify_names_what_is_wrong(tmp_path):
    (tmp_path / "val" / "n00000001").mkdir(parents=True)
    res = dnnbench("data", "verify", tmp_path, "--kind", "imagenetv2")
    assert res.returncode == 1 and "1 class folders, not 1000" in res.stdout and "without an image" in res.stdout
