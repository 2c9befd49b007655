"""Small ILSVRC2012 archives in the distributed layout, for `data prepare` tests: a train tar of
per-class tars, a flat val tar, and a devkit tar.gz with meta.mat (written by scipy, the same
library that reads it) and the ground-truth ids."""
from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path

# Out of alphabetical order on purpose: ILSVRC2012_IDs are not the sorted wnid order.
WNIDS = ["n04592741", "n01440764", "n02119789", "n03000134"]


def _jpeg(seed: int) -> bytes:
    from PIL import Image
    rng = random.Random(seed)
    img = Image.new("RGB", (24, 24), tuple(rng.randrange(256) for _ in range(3)))
    buf = io.BytesIO()
    img.save(buf, "JPEG")
    return buf.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _tar_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            _add(tar, name, data)
    return buf.getvalue()


def make(root: Path, per_class: int = 3, val: int = 8, devkit: bool = True, loose_train: bool = False) -> dict:
    """Write the archives into root; return what a correct preparation must produce:
    {"train": {wnid: {name: bytes}}, "val": {name: (wnid, bytes)}}."""
    root.mkdir(parents=True, exist_ok=True)
    train = {w: {f"{w}_{i}.JPEG": _jpeg(hash((w, i)) % 10**6) for i in range(1, per_class + 1)} for w in WNIDS}
    class_tars = {f"{w}.tar": _tar_bytes(files) for w, files in train.items()}
    if loose_train:
        (root / "train").mkdir()
        for name, data in class_tars.items():
            (root / "train" / name).write_bytes(data)
    else:
        (root / "ILSVRC2012_img_train.tar").write_bytes(_tar_bytes(class_tars))
    ids = [(i % len(WNIDS)) + 1 for i in range(val)]          # ground truth: ILSVRC2012_ID per val image
    vals = {f"ILSVRC2012_val_{i + 1:08d}.JPEG": (WNIDS[ids[i] - 1], _jpeg(10**7 + i)) for i in range(val)}
    (root / "ILSVRC2012_img_val.tar").write_bytes(_tar_bytes({n: d for n, (_, d) in vals.items()}))
    if devkit:
        (root / "ILSVRC2012_devkit_t12.tar.gz").write_bytes(_devkit(ids))
    return {"train": train, "val": vals}


def _devkit(ids: list[int]) -> bytes:
    import numpy as np
    from scipy.io import savemat
    fields = ["ILSVRC2012_ID", "WNID", "words", "gloss", "num_children", "children", "wordnet_height",
              "num_train_images"]
    rows = [(i + 1, w, f"class {w}", "a leaf", 0, np.zeros((1, 0)), 0, 3) for i, w in enumerate(WNIDS)]
    rows.append((len(WNIDS) + 1, "n00001740", "entity", "an inner node", 2, np.array([1, 2]), 18, 0))
    synsets = np.array(rows, dtype=[(f, object) for f in fields]).reshape(-1, 1)
    mat = io.BytesIO()
    savemat(mat, {"synsets": synsets})
    truth = "".join(f"{i}\n" for i in ids).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        _add(tar, "ILSVRC2012_devkit_t12/data/meta.mat", mat.getvalue())
        _add(tar, "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt", truth)
        _add(tar, "ILSVRC2012_devkit_t12/COPYING", b"devkit\n")
    return buf.getvalue()
