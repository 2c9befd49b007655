"""`dnnbench data digits`: a small real dataset in the ImageNet folder layout, made on the spot:
the UCI handwritten digits (Alpaydin & Kaynak, 1998; 1,797 8x8 grey images, 10 classes) from
the copy scikit-learn ships inside its package (`sklearn.datasets.load_digits`, no network),
written as RGB PNGs into train/digit<N>/ and val/digit<N>/ (every 5th image of a class to val/).
A resnet18 trains on it to 90 % top-1 in a few CPU minutes: the README's MLPerf example and the
tests' training runs use it. Written under the dataset folder's lock, each file atomically, the
done marker last: an interrupted write is finished by the next one, a finished folder is a no-op."""
from __future__ import annotations

import io
from pathlib import Path

from dnnbench.console import info
from dnnbench.datasets import folder
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

MARKER = ".dnnbench-digits.json"
CLASSES = 10
IMAGES = 1797


def _libraries():
    try:
        import numpy as np
        from PIL import Image
        from sklearn.datasets import load_digits
    except ImportError as exc:
        raise DnnbenchError(f"`data digits` needs {exc.name or 'scikit-learn and Pillow'}, which is not "
                            "installed: pip install scikit-learn pillow (or pip install 'dnnbench[torch]')") from None
    return np, Image, load_digits


def write(dest: Path, size: int = 32) -> int:
    """The digits into `dest` at `size` px: the images written (0 when the folder was complete)."""
    if not 8 <= size <= 1024:
        raise DnnbenchError(f"--size {size}: give 8 to 1024 pixels")
    done = folder.marker(dest / MARKER)
    if done and done.get("size") == size and done.get("images") == IMAGES:
        return 0
    np, image, load_digits = _libraries()
    digits = load_digits()
    seen: dict[int, int] = {}
    written = 0
    for pixels, label in zip(digits.images, digits.target):
        k = seen.get(int(label), 0)
        seen[int(label)] = k + 1
        split = "val" if k % 5 == 4 else "train"
        where = dest / split / f"digit{label}"
        fileio.make_dirs(str(where), root=str(dest))
        grey = (pixels * (255.0 / 16.0)).clip(0, 255).astype(np.uint8)
        buf = io.BytesIO()
        image.fromarray(grey, "L").resize((size, size), image.BILINEAR).convert("RGB").save(buf, format="PNG")
        fileio.write_atomic_bytes(str(where / f"{k:04d}.png"), buf.getvalue(), durable=False)
        written += 1
    fileio.write_json(str(dest / MARKER), {"source": "sklearn.datasets.load_digits (UCI optdigits)",
                                           "size": size, "images": written, "classes": CLASSES})
    return written


def write_digits(dest: Path, size: int = 32) -> Path:
    """The digits written into `dest` (the tests' and benchmarks' real small dataset): `dest`."""
    write(Path(dest), size)
    return Path(dest)


def digits_command(dest: Path, size: int) -> None:
    if not 8 <= size <= 1024:     # before the folder is made: a refused command leaves nothing
        raise DnnbenchError(f"--size {size}: give 8 to 1024 pixels")
    with folder.writing(dest):
        try:
            n = write(dest, size)
        except fileio.NotRegularFile as exc:
            raise DnnbenchError(f"writing the digits into {dest} failed: {exc.filename} is {exc.kind}, "
                                "not a file dnnbench writes") from None
        except OSError as exc:
            raise DnnbenchError(f"writing the digits into {dest} failed: {exc.strerror or exc}") from None
    info(f"{dest}: " + ("already complete (done marker found)" if n == 0 else
                        f"wrote the UCI digits: {n} images of {size} px in {CLASSES} classes (train/ and val/, "
                        "every 5th image of a class to val/)"))
