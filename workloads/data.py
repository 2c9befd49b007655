"""Dataset layouts: checks that say exactly what is wrong, loaders, and fake datasets.

Layouts (what `--data DIR` must hold):
  imagenet  train/<class>/<image>.JPEG           (ImageFolder; val/ optional)
  coco      annotations/instances_train2017.json + train2017/<image>.jpg
  text      train.txt                            (whitespace-tokenized corpus)
  ratings   ratings.csv                          (userId,movieId,rating,timestamp: MovieLens)
"""
import io
import json
import os

from . import fileio
from .errors import UsageError

IMAGE_EXT = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".webp")
KINDS = ("imagenet", "coco", "text", "ratings")
ANNOTATIONS_MAX = 2 << 30     # bytes of COCO annotations JSON read at most


def _usage(msg):
    return UsageError(msg)


def problems(path, kind, deep=False):
    """Everything wrong with `path` as a `kind` dataset (empty when fine).

    deep=True also opens every image (slow; `dnnbench data verify`)."""
    if not os.path.exists(path):
        return ["%s does not exist" % path]
    if not os.path.isdir(path):
        return ["%s is not a folder" % path]
    try:
        return _problems(path, kind, deep)
    except OSError as exc:   # an unreadable folder or file is a problem of the dataset, said as one
        return ["cannot read %s: %s" % (exc.filename or path, exc.strerror or exc)]
    except (ValueError, RecursionError, TypeError, KeyError) as exc:   # annotations that are not COCO's
        return ["%s: unreadable annotations (%s)" % (path, str(exc)[:200] or type(exc).__name__)]


def _problems(path, kind, deep):
    if kind == "imagenet":
        return _imagenet(path, deep)
    if kind == "coco":
        return _coco(path, deep)
    if kind == "text":
        f = os.path.join(path, "train.txt")
        return [] if os.path.isfile(f) and os.path.getsize(f) > 0 else ["%s has no non-empty train.txt" % path]
    if kind == "ratings":
        f = os.path.join(path, "ratings.csv")
        if not os.path.isfile(f):
            return ["%s has no ratings.csv (MovieLens layout)" % path]
        try:
            with fileio.open_input(f) as fh:
                head = fh.readline(4096).decode("utf-8", "replace").strip().lower()   # bounded: one line
        except OSError as exc:
            return ["%s cannot be read: %s" % (f, exc.strerror or exc)]
        return [] if head.startswith("userid,movieid") else ["%s: header is %r, expected userId,movieId,rating,timestamp" % (f, head)]
    if kind is None:
        return ["this workload has no real-data path; use --synthetic"]
    return ["unknown dataset kind %r (known: %s)" % (kind, ", ".join(KINDS))]


def _images(folder):
    return [f for f in os.listdir(folder) if f.lower().endswith(IMAGE_EXT)]


def _unreadable(paths):
    from PIL import Image
    bad = []
    for p in paths:
        try:
            with fileio.open_input(p) as fh, Image.open(fh) as im:
                im.verify()
        except Exception:
            bad.append(p)
    return bad


def _imagenet(path, deep):
    train = os.path.join(path, "train")
    if not os.path.isdir(train):
        return ["%s has no train/ folder (ImageNet layout: train/<class>/<image>.JPEG)" % path]
    classes = sorted(d for d in os.listdir(train) if os.path.isdir(os.path.join(train, d)))
    if not classes:
        loose = _images(train)
        return ["%s has no class folders%s" % (train, " (%d images lie directly in it)" % len(loose) if loose else "")]
    out = []
    empty = [c for c in classes if not _images(os.path.join(train, c))]
    if empty:
        out.append("%d of %d class folders in %s hold no images (e.g. %s)" % (len(empty), len(classes), train, empty[0]))
    val = os.path.join(path, "val")
    if os.path.isdir(val):
        # ImageFolder numbers classes by sorted folder name: val must not hold classes train lacks.
        stray = sorted(set(d for d in os.listdir(val) if os.path.isdir(os.path.join(val, d))) - set(classes))
        loose = _images(val)
        if stray:
            out.append("%s has %d class folders that train/ lacks (e.g. %s)" % (val, len(stray), stray[0]))
        if loose:
            out.append("%s holds %d images outside class folders: sort them (`dnnbench data prepare imagenet`)"
                       % (val, len(loose)))
    if deep:
        paths = [os.path.join(train, c, f) for c in classes for f in _images(os.path.join(train, c))]
        bad = _unreadable(paths)
        if bad:
            out.append("%d unreadable images (e.g. %s)" % (len(bad), bad[0]))
    return out


def _coco(path, deep):
    ann = os.path.join(path, "annotations", "instances_train2017.json")
    imgs = os.path.join(path, "train2017")
    out = []
    if not os.path.isfile(ann):
        out.append("%s is missing (COCO layout)" % ann)
    if not os.path.isdir(imgs):
        out.append("%s is missing (COCO layout)" % imgs)
    if out:
        return out
    try:
        data = _annotations(ann)
    except (ValueError, RecursionError) as exc:
        return ["%s is not valid JSON: %s" % (ann, exc)]
    except OSError as exc:
        return ["%s cannot be read: %s" % (ann, exc.strerror or exc)]
    if not isinstance(data, dict):
        return ["%s is not a COCO annotations object" % ann]
    for key in ("images", "annotations", "categories"):
        if not isinstance(data.get(key), list):
            out.append("%s has no %r list" % (ann, key))
    if not out and not all(isinstance(im, dict) and isinstance(im.get("file_name"), str)
                           and os.path.basename(im["file_name"]) == im["file_name"] for im in data["images"]):
        out.append("%s: every image needs a plain file_name" % ann)
    if out:
        return out
    missing = [im["file_name"] for im in data["images"] if not os.path.isfile(os.path.join(imgs, im["file_name"]))]
    if missing:
        out.append("%d images listed in the annotations are missing from %s (e.g. %s)" % (len(missing), imgs, missing[0]))
    if deep:
        bad = _unreadable([os.path.join(imgs, im["file_name"]) for im in data["images"] if im["file_name"] not in missing])
        if bad:
            out.append("%d unreadable images (e.g. %s)" % (len(bad), bad[0]))
    return out


def check(path, kind):
    found = problems(path, kind)
    if found:
        raise _usage("data: " + "; ".join(found))


# --- loaders -------------------------------------------------------------------------

def image_folder(path, size, grayscale=False):
    from torchvision import datasets, transforms
    steps = [transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip()]
    if grayscale:
        steps.append(transforms.Grayscale())
    steps += [transforms.ToTensor()]
    if not grayscale:
        steps.append(transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]))
    return datasets.ImageFolder(os.path.join(path, "train"), transforms.Compose(steps))


class CocoDetection(object):
    """COCO instances without pycocotools: boxes, labels and polygon masks rasterized by PIL."""

    def __init__(self, path, size, masks=False):
        data = _annotations(os.path.join(path, "annotations", "instances_train2017.json"))
        self.root = os.path.join(path, "train2017")
        self.size, self.masks = size, masks
        cats = sorted(c["id"] for c in data["categories"])
        self.label = {cid: i + 1 for i, cid in enumerate(cats)}
        by_image = {}
        for a in data["annotations"]:
            by_image.setdefault(a["image_id"], []).append(a)
        self.items = [(im, by_image.get(im["id"], [])) for im in data["images"] if by_image.get(im["id"])]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        import torch
        from PIL import Image, ImageDraw
        from torchvision.transforms import functional as F

        info, anns = self.items[i]
        with fileio.open_input(os.path.join(self.root, info["file_name"])) as fh:
            img = Image.open(fh).convert("RGB")
        sx, sy = self.size / float(img.width), self.size / float(img.height)
        img = img.resize((self.size, self.size))
        boxes, labels, masks = [], [], []
        for a in anns:
            x, y, w, h = a["bbox"]
            if w < 1 or h < 1:
                continue
            boxes.append([x * sx, y * sy, (x + w) * sx, (y + h) * sy])
            labels.append(self.label[a["category_id"]])
            if self.masks:
                m = Image.new("L", (self.size, self.size), 0)
                polys = a.get("segmentation") or [[x, y, x + w, y, x + w, y + h, x, y + h]]
                for poly in polys if isinstance(polys, list) else []:
                    pts = [(poly[k] * sx, poly[k + 1] * sy) for k in range(0, len(poly) - 1, 2)]
                    if len(pts) >= 3:
                        ImageDraw.Draw(m).polygon(pts, fill=1)
                masks.append(F.pil_to_tensor(m)[0] if hasattr(F, "pil_to_tensor") else torch.as_tensor(list(m.getdata())).view(self.size, self.size))
        target = {"boxes": torch.tensor(boxes, dtype=torch.float32).view(-1, 4),
                  "labels": torch.tensor(labels, dtype=torch.int64)}
        if self.masks:
            target["masks"] = torch.stack(masks).to(torch.uint8) if masks else torch.zeros((0, self.size, self.size), dtype=torch.uint8)
        return F.to_tensor(img), target


def _annotations(path):
    """COCO's annotations JSON, bounded (train2017's is ~450 MB) and never from a FIFO."""
    with fileio.open_input(path) as fh:
        raw = fh.read(ANNOTATIONS_MAX + 1)
    if len(raw) > ANNOTATIONS_MAX:
        raise ValueError("larger than %d MiB: not COCO's annotations" % (ANNOTATIONS_MAX >> 20))
    return json.loads(raw.decode("utf-8"))


# --- fake datasets ---------------------------------------------------------------------

def _write_jpeg(args):
    path, size, seed = args
    import random
    from PIL import Image
    rnd = random.Random(seed)
    w, h = size
    # Blocky random pixels: decodes like a photo-sized JPEG but compresses to a realistic size.
    small = Image.frombytes("RGB", (max(1, w // 8), max(1, h // 8)), bytes(rnd.getrandbits(8) for _ in range(3 * max(1, w // 8) * max(1, h // 8))))
    buf = io.BytesIO()
    small.resize((w, h)).save(buf, "JPEG", quality=85)
    fileio.write_atomic_bytes(path, buf.getvalue(), durable=False)   # a planted link is replaced, not followed
    return path


def _pool(workers):
    """Worker processes started fresh (spawn), never forked: the caller may run threads (a
    progress bar's refresh thread), and a fork copies any lock one of them holds, locked."""
    import multiprocessing
    return multiprocessing.get_context("spawn").Pool(workers or os.cpu_count() or 1)


def fake_imagenet(dest, images=1000, classes=10, size=(256, 256), workers=None, seed=0, progress=None):
    """An ImageNet-layout folder of real JPEGs from random pixels. Idempotent via a done marker."""
    marker = os.path.join(dest, ".dnnbench-fake-done")
    if fileio.is_regular(marker):
        return 0
    jobs = []
    for split, n in (("train", images), ("val", max(classes, images // 10))):
        for i in range(n):
            cls = "n%08d" % (i % classes)
            folder = os.path.join(dest, split, cls)
            if i < classes:
                fileio.make_dirs(folder, root=dest)
            jobs.append((os.path.join(folder, "%s_%06d.JPEG" % (cls, i)), size, seed * 1000003 + i + (0 if split == "train" else 10 ** 7)))
    with _pool(workers) as pool:
        for done, _ in enumerate(pool.imap_unordered(_write_jpeg, jobs, chunksize=16), 1):
            if progress:
                progress(done, len(jobs))
    fileio.write_atomic_bytes(marker, b"")
    return len(jobs)


def fake_coco(dest, images=64, size=(320, 320), workers=None, seed=0, progress=None):
    """A COCO-layout folder: JPEGs plus instances_train2017.json with boxes and polygons."""
    import random
    marker = os.path.join(dest, ".dnnbench-fake-done")
    if fileio.is_regular(marker):
        return 0
    rnd = random.Random(seed)
    fileio.make_dirs(os.path.join(dest, "train2017"), root=dest)
    fileio.make_dirs(os.path.join(dest, "annotations"), root=dest)
    cats = [{"id": i, "name": "class%d" % i} for i in (1, 2, 3, 5, 8)]
    imgs, anns, jobs = [], [], []
    for i in range(images):
        name = "%012d.jpg" % (i + 1)
        jobs.append((os.path.join(dest, "train2017", name), size, seed * 1000003 + i))
        imgs.append({"id": i + 1, "file_name": name, "width": size[0], "height": size[1]})
        for _ in range(rnd.randint(1, 4)):
            w, h = rnd.uniform(16, size[0] / 2), rnd.uniform(16, size[1] / 2)
            x, y = rnd.uniform(0, size[0] - w), rnd.uniform(0, size[1] - h)
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": rnd.choice(cats)["id"],
                         "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0,
                         "segmentation": [[x, y, x + w, y, x + w / 2, y + h]]})
    with _pool(workers) as pool:
        for done, _ in enumerate(pool.imap_unordered(_write_jpeg, jobs, chunksize=8), 1):
            if progress:
                progress(done, len(jobs))
    fileio.write_atomic_text(os.path.join(dest, "annotations", "instances_train2017.json"),
                             json.dumps({"images": imgs, "annotations": anns, "categories": cats}))
    fileio.write_atomic_bytes(marker, b"")
    return len(jobs)


def fake_text(dest, words=200000, vocab=5000, seed=0, progress=None):
    """A `text` layout: train.txt of random words drawn Zipf-like from a small vocabulary."""
    import random
    rnd = random.Random(seed)
    fileio.make_dirs(dest)
    vocab_words = ["w%d" % i for i in range(vocab)]
    weights = [1.0 / (i + 1) for i in range(vocab)]
    with fileio.open_write(os.path.join(dest, "train.txt")) as fh:
        for line in range(max(1, words // 20)):
            fh.write(" ".join(rnd.choices(vocab_words, weights, k=20)) + "\n")
    return 1


def read_ratings(path):
    """MovieLens ratings.csv (userId,movieId,rating,timestamp; a header line), streamed through
    the file layer (a FIFO or device is refused, never waited on): (users, items, timestamps);
    a line without a timestamp gets its line number, so file order stands in for time."""
    if not fileio.is_regular(path):
        raise UsageError("%s: no ratings.csv there (MovieLens layout: userId,movieId,rating,timestamp)" % path)
    users, items, stamps = [], [], []
    with io.TextIOWrapper(fileio.open_input(path), encoding="utf-8", errors="replace") as fh:
        next(fh, None)   # the header
        for n, line in enumerate(fh, 2):
            parts = line.split(",")
            if len(parts) < 2 or not line.strip():
                continue
            try:
                users.append(int(parts[0]))
                items.append(int(parts[1]))
                stamps.append(float(parts[3]) if len(parts) > 3 else float(n))
            except ValueError:
                raise UsageError("%s line %d: %r is not userId,movieId,rating,timestamp" % (path, n, line[:80]))
    if not users:
        raise UsageError("%s holds no ratings" % path)
    return users, items, stamps


def fake_ratings(dest, ratings=100000, users=1000, items=2000, seed=0, progress=None):
    """A `ratings` layout: MovieLens-style ratings.csv."""
    import random
    rnd = random.Random(seed)
    fileio.make_dirs(dest)
    with fileio.open_write(os.path.join(dest, "ratings.csv")) as fh:
        fh.write("userId,movieId,rating,timestamp\n")
        for i in range(ratings):
            fh.write("%d,%d,%.1f,%d\n" % (rnd.randrange(users) + 1, rnd.randrange(items) + 1,
                                          rnd.randint(1, 10) / 2.0, 1500000000 + i))
    return 1
