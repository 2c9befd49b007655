"""`dnnbench data prepare imagenet` on small archives in the ILSVRC2012 layout (tests/ilsvrc.py):
the layout produced, val sorted by the devkit or a mapping file, resume, the done marker, the
user's tars untouched, and one clear message for damaged tars and full disks."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import pytest

from . import ilsvrc
from tests.helpers import dnnbench, one_line_error


def _snapshot(folder):
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _assert_prepared(dst, expected):
    train = dst / "train"
    assert sorted(p.name for p in train.iterdir()) == sorted(expected["train"])
    for wnid, files in expected["train"].items():
        assert {p.name: p.read_bytes() for p in (train / wnid).iterdir()} == files
    val = {p.name: (p.parent.name, p.read_bytes()) for p in (dst / "val").rglob("*.JPEG")}
    assert val == expected["val"]
    assert not (dst / ".partial").exists()


@pytest.fixture()
def archives(tmp_path):
    src = tmp_path / "tars"
    return src, ilsvrc.make(src)


def test_prepare_sorts_train_and_val_and_leaves_the_tars_alone(archives, tmp_path):
    src, expected = archives
    before = _snapshot(src)
    dst = tmp_path / "imagenet"
    res = dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, check=0)
    assert "4 classes, 12 train and 8 val images" in res.stderr
    _assert_prepared(dst, expected)
    assert _snapshot(src) == before
    dnnbench("data", "verify", dst, "--kind", "imagenet", "--deep", check=0)

    # Done marker: a second run changes nothing and says so.
    files = _snapshot(dst)
    res = dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, check=0)
    assert "nothing to do" in res.stderr
    assert _snapshot(dst) == files


def test_rerun_after_an_interruption_redoes_only_what_is_missing(archives, tmp_path):
    src, expected = archives
    dst = tmp_path / "imagenet"
    dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, check=0)
    # The state a cut-off run leaves: no marker, some classes and val not renamed into place,
    # a half-written class under .partial/.
    (dst / ".dnnbench-prepared.json").unlink()
    kept = dst / "train" / "n01440764"
    kept_stamp = {p.name: p.stat().st_mtime_ns for p in kept.iterdir()}
    shutil.rmtree(dst / "train" / "n02119789")
    shutil.rmtree(dst / "val")
    half = dst / ".partial" / "train" / "n02119789"
    half.mkdir(parents=True)
    (half / "n02119789_1.JPEG").write_bytes(b"\xff\xd8 cut off")

    res = dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, check=0)
    assert "2 of 5 parts extracted" in res.stderr and "3 were already done" in res.stderr
    _assert_prepared(dst, expected)
    assert {p.name: p.stat().st_mtime_ns for p in kept.iterdir()} == kept_stamp
    assert (dst / ".dnnbench-prepared.json").is_file()


@pytest.mark.parametrize("style", ["pairs", "valprep", "kaggle"])
def test_val_map_instead_of_the_devkit(tmp_path, style):
    src = tmp_path / "tars"
    expected = ilsvrc.make(src, devkit=False)
    lines = {
        "pairs": [f"{name} {wnid}" for name, (wnid, _) in expected["val"].items()],
        "valprep": [f"mkdir -p {w}" for w in ilsvrc.WNIDS]
                   + [f"mv {name} {wnid}/" for name, (wnid, _) in expected["val"].items()],
        "kaggle": ["ImageId,PredictionString"]
                  + [f"{name[:-5]},{wnid} 12 30 200 220 {wnid} 1 2 3 4" for name, (wnid, _) in expected["val"].items()],
    }[style]
    mapping = tmp_path / "val_map.txt"
    mapping.write_text("\n".join(lines) + "\n")
    dst = tmp_path / "imagenet"
    dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, "--val-map", mapping, check=0)
    _assert_prepared(dst, expected)


def test_class_tars_already_unpacked_from_the_train_tar(tmp_path):
    src = tmp_path / "tars"
    expected = ilsvrc.make(src, loose_train=True)
    dst = tmp_path / "imagenet"
    dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, check=0)
    _assert_prepared(dst, expected)


def test_mistakes_get_one_clear_line(tmp_path):
    src = tmp_path / "tars"
    expected = ilsvrc.make(src, devkit=False)
    dst = tmp_path / "imagenet"
    one_line_error(dnnbench("data", "prepare", "imagenet", "--from", tmp_path / "nope", "--to", dst), "is not a folder")
    one_line_error(dnnbench("data", "prepare", "coco", "--from", src, "--to", dst), "knows imagenet")
    one_line_error(dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst), "ILSVRC2012_devkit_t12.tar.gz",
                   "--val-map")
    partial_map = tmp_path / "short.txt"
    name, (wnid, _) = next(iter(expected["val"].items()))
    partial_map.write_text(f"{name} {wnid}\n")
    one_line_error(dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, "--val-map", partial_map),
                   "7 of 8 images", "have no label")
    one_line_error(dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, "--val-map", tmp_path / "no.txt"),
                   "--val-map", "missing, not a regular file")
    one_line_error(dnnbench("data", "prepare", "imagenet", "--from", src, "--to", src), "overlap")
    # --from inside --to, --to inside --from, and through a link: the staging folder is removed,
    # so an overlap once deleted the user's tars
    (tmp_path / "link").symlink_to(src)
    (src / ".partial").mkdir()
    for a, b in ((src, src / "out"), (src / ".partial", src), (src, tmp_path / "link" / "out")):
        one_line_error(dnnbench("data", "prepare", "imagenet", "--from", a, "--to", b), "overlap")
    assert not (src / "out").exists() and (src / ".partial").is_dir()   # nothing made, nothing removed
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(dnnbench("data", "prepare", "imagenet", "--from", empty, "--to", dst), "no ILSVRC2012_img_train.tar")


def test_damaged_train_tar(archives, tmp_path):
    src, _ = archives
    tar = src / "ILSVRC2012_img_train.tar"
    tar.write_bytes(tar.read_bytes()[:15000])          # a download cut off mid-way
    dst = tmp_path / "imagenet"
    one_line_error(dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst), "truncated", "md5")
    assert not (dst / ".dnnbench-prepared.json").exists()


@pytest.fixture()
def small_disk(tmp_path):
    """A real tmpfs of limited size/inodes (mounting needs root, as CI and the dev setup run)."""
    mounts = []

    def mount(**opts):
        point = tmp_path / f"disk{len(mounts)}"
        point.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(f"{k}={v}" for k, v in opts.items()), "tmpfs",
                        str(point)], check=True)
        mounts.append(point)
        return point
    if os.geteuid() != 0:
        pytest.fail("the disk-full tests mount a tmpfs and need root (CI and scripts/test.sh run as root)")
    yield mount
    for point in mounts:
        subprocess.run(["umount", str(point)], check=False)


def test_not_enough_space_is_found_before_extracting(archives, small_disk):
    src, _ = archives
    dst = small_disk(size="40k")
    one_line_error(dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst), "free; extracting 5 parts needs")
    assert list(dst.iterdir()) == []


def test_disk_full_midway_keeps_finished_classes_and_resumes(archives, small_disk, tmp_path):
    src, expected = archives
    dst = small_disk(size="64m", nr_inodes="12")       # bytes to spare, files run out mid-way
    line = one_line_error(dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, "--workers", "1"),
                          "disk full", "run the same command again")
    assert str(dst) in line
    finished = [p for p in (dst / "train").iterdir()]
    assert finished and all(len(list(p.iterdir())) == 3 for p in finished)
    # More room: the rerun completes from where it stopped.
    subprocess.run(["mount", "-o", "remount,nr_inodes=1000", str(dst)], check=True)
    res = dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, check=0)
    assert f"{len(finished)} were already done" in res.stderr
    _assert_prepared(dst, expected)


def test_verify_says_what_is_wrong(archives, tmp_path):
    src, _ = archives
    dst = tmp_path / "imagenet"
    dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst, check=0)
    (dst / "val" / "n09999999").mkdir()
    (dst / "val" / "n09999999" / "x.JPEG").write_bytes(b"x")
    (dst / "val" / "ILSVRC2012_val_00000099.JPEG").write_bytes(b"x")
    (dst / "train" / "n01440764" / "n01440764_1.JPEG").write_bytes(b"not a jpeg")
    for p in (dst / "train" / "n02119789").iterdir():
        p.unlink()
    res = dnnbench("data", "verify", dst, "--kind", "imagenet")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "1 of 4 class folders" in res.stdout and "n02119789" in res.stdout
    assert "1 class folders that train/ lacks (e.g. n09999999)" in res.stdout
    assert "1 images outside class folders" in res.stdout
    assert "unreadable" not in res.stdout                     # layout only without --deep
    res = dnnbench("data", "verify", dst, "--kind", "imagenet", "--deep")
    assert "1 unreadable images" in res.stdout and "n01440764_1.JPEG" in res.stdout


def test_fake_dataset_onto_a_full_disk(small_disk):
    dst = small_disk(size="64m", nr_inodes="6")
    one_line_error(dnnbench("data", "fake", "imagenet", "--to", dst, "--images", 40, "--classes", 2, "--size", 32),
                   "disk full")
