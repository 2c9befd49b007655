"""`dnnbench data digits` (dnnbench.datasets.digits): the README's MLPerf example's dataset, made
from scikit-learn's copy of the UCI digits: the ImageNet layout `data verify` accepts, every
image of the source once, a second run a no-op, and what is in the way said in one line."""
from __future__ import annotations

import os

from tests.helpers import cli_inprocess


def test_the_digits_are_written_once_in_the_imagenet_layout(tmp_path):
    from sklearn.datasets import load_digits
    dest = tmp_path / "digits"
    code, _, err = cli_inprocess("data", "digits", "--to", dest, "--size", "16")
    assert code == 0 and "wrote the UCI digits: 1797 images of 16 px in 10 classes" in " ".join(err.split())
    counts = {split: sum(len(os.listdir(dest / split / c)) for c in os.listdir(dest / split)) for split in ("train", "val")}
    assert counts["train"] + counts["val"] == len(load_digits().images) and counts["val"] == 355
    assert sorted(os.listdir(dest / "val")) == [f"digit{k}" for k in range(10)]
    code, out, err = cli_inprocess("data", "verify", dest, "--kind", "imagenet")
    assert code == 0, out + err
    before = (dest / "train" / "digit3" / "0000.png").stat().st_mtime_ns
    code, _, err = cli_inprocess("data", "digits", "--to", dest, "--size", "16")
    assert code == 0 and "already complete" in err
    assert (dest / "train" / "digit3" / "0000.png").stat().st_mtime_ns == before


def test_what_is_in_the_way_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    code, _, err = cli_inprocess("data", "digits", "--to", tmp_path / "file" / "digits")
    assert code == 2 and err.count("error:") == 1 and "Traceback" not in err, err
    code, _, err = cli_inprocess("data", "digits", "--to", tmp_path / "d", "--size", "4")
    assert code == 2 and "--size 4: give 8 to 1024 pixels" in err
    assert not (tmp_path / "d").exists()
