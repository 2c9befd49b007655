"""Real data someone else made, in the ImageNet folder layout: the UCI handwritten digits
(Alpaydin & Kaynak, 1998; 1,797 8x8 grey images, 10 classes) that scikit-learn ships inside
its package (`sklearn.datasets.load_digits`, no network), written as PNGs into
train/<class>/ and val/<class>/ (every 5th image of a class to val/)."""
from pathlib import Path


def write_digits(dest: Path, size: int = 32) -> Path:
    import numpy as np
    from PIL import Image
    from sklearn.datasets import load_digits

    digits = load_digits()
    seen: dict[int, int] = {}
    for pixels, label in zip(digits.images, digits.target):
        k = seen.get(int(label), 0)
        seen[int(label)] = k + 1
        split = "val" if k % 5 == 4 else "train"
        folder = dest / split / f"digit{label}"
        folder.mkdir(parents=True, exist_ok=True)
        grey = (pixels * (255.0 / 16.0)).clip(0, 255).astype(np.uint8)
        Image.fromarray(grey, "L").resize((size, size), Image.BILINEAR).convert("RGB").save(folder / f"{k:04d}.png")
    return dest
