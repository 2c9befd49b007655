"""Image input pipelines of the classification workloads, chosen with --loader:

  cpu   PIL decode, RandomResizedCrop, flip and normalization in DataLoader workers (torchvision's
        reference recipe; on a fast GPU it measures the CPU)
  gpu   the workers only read file bytes; the batch is decoded with torchvision's decode_jpeg on the
        device (nvJPEG on CUDA, batched where torchvision takes a list) and cropped, flipped and
        normalized there, in the model's memory format and AMP dtype
  dali  an NVIDIA DALI pipeline (file reader, mixed-device decoder, random resized crop,
        crop-mirror-normalize), where the image has DALI
  auto  the fastest one this image and device have

Every backend sees the same files with the same labels (ImageFolder's sorted class folders), the
same sampling (the harness's DataLoader and DistributedSampler; DALI shards its reader the same
way) and the same augmentation statistics: crop area (0.08, 1), aspect ratio (3/4, 4/3), flip
p=0.5, ImageNet mean/std; evaluation: shorter side to size/0.875, centre crop.

Python 3.7+; torchvision features (device decode, batched decode, antialiased resize) are detected.
"""
import math
import os
import random
import threading

from . import fileio
from .errors import UsageError

BACKENDS = ("cpu", "gpu", "dali")
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
SCALE = (0.08, 1.0)
RATIO = (3.0 / 4.0, 4.0 / 3.0)
EVAL_RESIZE = 0.875          # evaluation: shorter side to size / 0.875 (256 for 224), centre crop


def _log(msg):
    import sys
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


# --- what this image can do ----------------------------------------------------------

_SUPPORT = {}


def decode_support(device):
    """What torchvision's decode_jpeg does on `device` here: {"device": bool, "batched": bool,
    "why": str}. Probed on a tiny JPEG once per device (on CUDA this also proves nvJPEG works)."""
    if device in _SUPPORT:
        return _SUPPORT[device]
    out = {"device": False, "batched": False, "why": ""}
    try:
        import torch
        import torchvision
        from torchvision import io
        probe = io.encode_jpeg(torch.zeros((3, 8, 8), dtype=torch.uint8))
        decode = io.decode_jpeg
    except Exception as exc:  # torchvision < 0.8: no decode_jpeg at all
        out["why"] = "torchvision here has no decode_jpeg/encode_jpeg (%s)" % exc
        _SUPPORT[device] = out
        return out
    try:
        img = decode(probe, device=device) if device != "cpu" else decode(probe)
        out["device"] = tuple(img.shape) == (3, 8, 8) and img.device.type == torch.device(device).type
    except Exception as exc:
        out["why"] = "torchvision %s cannot decode JPEG on %s (%s)" % (
            torchvision.__version__, device, str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__)
    if out["device"]:
        try:
            imgs = decode([probe, probe], device=device)
            out["batched"] = isinstance(imgs, (list, tuple)) and len(imgs) == 2
        except Exception:
            out["batched"] = False   # torchvision < 0.19: one image per call
        out["why"] = "torchvision %s decode_jpeg on %s%s" % (torchvision.__version__, device,
                                                            ", batched" if out["batched"] else ", one image per call")
    _SUPPORT[device] = out
    return out


def dali_support():
    """(True, version) where NVIDIA DALI and its PyTorch plugin import, else (False, why)."""
    import importlib
    try:
        dali = importlib.import_module("nvidia.dali")
        importlib.import_module("nvidia.dali.plugin.pytorch")
    except Exception as exc:
        return False, "no NVIDIA DALI in this image (%s: %s)" % (type(exc).__name__, str(exc)[:120])
    return True, "DALI %s" % getattr(dali, "__version__", "?")


def choose(requested, backends, device):
    """(backend, why): the loader that runs for `requested` on `device`, given the workload's
    `backends`. An unavailable gpu/dali falls back with the reason, never a hard failure."""
    if requested not in ("auto",) + BACKENDS:
        raise UsageError("--loader must be one of auto, %s" % ", ".join(BACKENDS))
    if requested != "auto" and requested not in backends:
        raise UsageError("--loader %s: this workload has only %s" % (requested, ", ".join(backends)))
    if requested == "cpu" or backends == ("cpu",):
        return "cpu", "asked for" if requested == "cpu" else "the only loader of this workload"
    notes = []
    if requested in ("auto", "dali") and "dali" in backends:
        ok, why = dali_support()
        if ok and (device == "cuda" or requested == "dali"):   # on a CPU: DALI's CPU decoder, asked for
            return "dali", "%s (%s%s)" % ("asked for" if requested == "dali" else "fastest available", why,
                                          "" if device == "cuda" else ", CPU pipeline")
        notes.append(why if not ok else "DALI's mixed decoder needs a CUDA device")
    if device != "cuda" and requested == "auto":
        return "cpu", "no CUDA device: " + "; ".join(notes + ["decoding on the GPU needs one"])
    sup = decode_support(device)
    if sup["device"]:
        what = "asked for" if requested == "gpu" else "fastest available"
        return "gpu", "; ".join([what + " (" + sup["why"] + ")"] + notes)
    return "cpu", "; ".join(notes + [sup["why"]])


# --- datasets the DataLoader workers read ------------------------------------------------

def cpu_dataset(root, size, train=True):
    """torchvision's reference transforms on PIL images in the workers."""
    from torchvision import datasets, transforms
    if train:
        steps = [transforms.RandomResizedCrop(size, scale=SCALE, ratio=RATIO), transforms.RandomHorizontalFlip()]
    else:
        steps = [transforms.Resize(int(size / EVAL_RESIZE)), transforms.CenterCrop(size)]
    steps += [transforms.ToTensor(), transforms.Normalize(mean=list(MEAN), std=list(STD))]
    return datasets.ImageFolder(root, transforms.Compose(steps))


def read_bytes(path):
    """The file as a uint8 tensor: all a `gpu` loader's worker does per image."""
    import torch
    with fileio.open_input(path) as fh:   # a FIFO or device in the dataset is refused, not waited on
        raw = fh.read()
    return torch.tensor(bytearray(raw), dtype=torch.uint8) if not hasattr(torch, "frombuffer") \
        else torch.frombuffer(bytearray(raw), dtype=torch.uint8)


def encoded_dataset(root):
    """ImageFolder of file bytes: the same samples and labels as cpu_dataset(root, ...)."""
    from torchvision import datasets
    return datasets.ImageFolder(root, loader=read_bytes)


def collate_encoded(batch):
    """A list of byte tensors (images differ in size until decoded) and a label tensor."""
    import torch
    return [b for b, _ in batch], torch.tensor([y for _, y in batch], dtype=torch.int64)


# --- decode and augment a batch on the device --------------------------------------------

def crop_box(height, width, rnd, scale=SCALE, ratio=RATIO):
    """torchvision's RandomResizedCrop.get_params with a private random.Random: (top, left, h, w)."""
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * rnd.uniform(scale[0], scale[1])
        aspect = math.exp(rnd.uniform(log_ratio[0], log_ratio[1]))
        w = int(round(math.sqrt(target * aspect)))
        h = int(round(math.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rnd.randint(0, height - h), rnd.randint(0, width - w), h, w
    in_ratio = float(width) / height
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def _resize(img, size):
    """Bilinear resize of one float CHW image, antialiased like PIL where PyTorch can (>= 1.11)."""
    import torch.nn.functional as F
    try:
        return F.interpolate(img[None], size=size, mode="bilinear", align_corners=False, antialias=True)[0]
    except TypeError:
        return F.interpolate(img[None], size=size, mode="bilinear", align_corners=False)[0]


class DeviceImages(object):
    """Decodes a batch of JPEG bytes on `device` and augments it there, as the cpu loader would."""

    def __init__(self, size, device, train=True, dtype=None, channels_last=False, seed=0, scale=SCALE, ratio=RATIO):
        import torch
        self.size, self.device, self.train = size, device, train
        self.scale, self.ratio = scale, ratio
        self.dtype = dtype or torch.float32
        self.channels_last = channels_last
        self.rnd = random.Random(seed)
        self.support = decode_support(device)
        self.mean = torch.tensor([255.0 * m for m in MEAN], device=device).view(1, 3, 1, 1)
        self.std = torch.tensor([255.0 * s for s in STD], device=device).view(1, 3, 1, 1)
        self.fallbacks = 0      # images nvJPEG could not take (CMYK, a PNG named .JPEG): decoded on the CPU

    def decode(self, datas):
        """uint8 RGB CHW tensors on the device, one per input."""
        from torchvision import io
        kw = {"device": self.device} if self.device != "cpu" else {}
        mode = getattr(getattr(io, "ImageReadMode", None), "RGB", None)
        if mode is not None:
            kw["mode"] = mode
        if self.support["batched"]:
            try:
                return list(io.decode_jpeg(list(datas), **kw))
            except Exception:
                pass        # one odd file spoils the batch call: decode one by one below
        out = []
        for d in datas:
            try:
                out.append(io.decode_jpeg(d, **kw))
            except Exception:
                out.append(self._cpu_decode(d))
        return out

    def _cpu_decode(self, data):
        import io as pyio

        import torch
        from PIL import Image
        from torchvision.transforms import functional as TF
        self.fallbacks += 1
        if self.fallbacks == 1:
            _log("warning: --loader gpu: an image torchvision cannot decode on %s (CMYK, or not a JPEG): "
                 "decoding such images with PIL on the CPU" % self.device)
        with Image.open(pyio.BytesIO(bytes(data.cpu().tolist()))) as im:
            img = im.convert("RGB")
        t = TF.pil_to_tensor(img) if hasattr(TF, "pil_to_tensor") else (TF.to_tensor(img) * 255).round().to(torch.uint8)
        return t.to(self.device)

    def __call__(self, datas, labels):
        import torch
        imgs = self.decode(datas)
        n, s = len(imgs), self.size
        x = torch.empty((n, 3, s, s), dtype=torch.float32, device=self.device)
        for i, img in enumerate(imgs):
            if img.shape[0] == 1:
                img = img.expand(3, -1, -1)
            h, w = int(img.shape[1]), int(img.shape[2])
            if self.train:
                top, left, ch, cw = crop_box(h, w, self.rnd, self.scale, self.ratio)
                x[i] = _resize(img[:, top:top + ch, left:left + cw].float(), (s, s))
            else:
                short = int(self.size / EVAL_RESIZE)
                rh, rw = (short, max(short, int(short * w / h))) if h <= w else (max(short, int(short * h / w)), short)
                r = _resize(img.float(), (rh, rw))
                top, left = int(round((rh - s) / 2.0)), int(round((rw - s) / 2.0))
                x[i] = r[:, top:top + s, left:left + s]
        if self.train:
            flip = torch.tensor([self.rnd.random() < 0.5 for _ in range(n)], device=self.device)
            x = torch.where(flip.view(n, 1, 1, 1), x.flip(3), x)
        x = (x - self.mean) / self.std
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x.to(self.dtype), labels.to(self.device, non_blocking=True)


class Prefetch(object):
    """An iterator running `make(*item)` over `source` in a side thread (and CUDA stream), `depth`
    batches ahead, so decoding on the device overlaps the training step instead of adding to it.
    close() (also at exit) stops the thread before the interpreter tears PyTorch down."""

    def __init__(self, source, make, device, depth=2):
        import atexit
        import queue

        import torch
        self.queue = queue.Queue(maxsize=depth)
        self.stream = torch.cuda.Stream() if str(device).startswith("cuda") else None
        self.source, self.make = source, make
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="dnnbench-prefetch", daemon=True)
        self.thread.start()
        atexit.register(self.close)

    def _put(self, entry):
        import queue
        while not self.stop.is_set():
            try:
                self.queue.put(entry, timeout=0.1)
                return
            except queue.Full:
                pass

    def _run(self):
        import torch
        if self.stream is not None:
            torch.cuda.set_device(self.stream.device)   # a thread starts on GPU 0, whatever the rank's
        try:
            for item in self.source:
                if self.stop.is_set():
                    return
                if self.stream is not None:
                    with torch.cuda.stream(self.stream):
                        batch = self.make(*item)
                        event = torch.cuda.Event()
                        event.record(self.stream)
                else:
                    batch, event = self.make(*item), None
                self._put((batch, event, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the training thread
            self._put((None, None, exc))
        self._put((None, None, StopIteration()))

    def __iter__(self):
        return self

    def __next__(self):
        import torch
        batch, event, exc = self.queue.get()
        if exc is not None:
            self._put((None, None, exc))      # every later call ends the same way
            raise exc
        if event is not None:
            torch.cuda.current_stream().wait_event(event)
            for t in batch:
                t.record_stream(torch.cuda.current_stream())
        return batch

    next = __next__

    def close(self):
        import queue
        import time
        self.stop.set()
        deadline = time.time() + 30      # a hung worker must not hang the run's end
        while self.thread.is_alive() and time.time() < deadline:
            try:
                self.queue.get(timeout=0.1)
            except queue.Empty:
                pass
            self.thread.join(timeout=0.1)


# --- DALI ----------------------------------------------------------------------------------

def dali_batches(samples, size, batch_size, workers, device_id, shard, shards, seed, train=True,
                 dtype=None, channels_last=False):
    """An endless iterator of (images, labels) from a DALI pipeline over ImageFolder's `samples`
    [(path, label)] (so the label mapping is ImageFolder's). device_id None: DALI on the CPU."""
    import torch
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.plugin.pytorch import DALIGenericIterator
    try:
        from nvidia.dali.plugin.pytorch import LastBatchPolicy
        policy = {"last_batch_policy": LastBatchPolicy.DROP}
    except ImportError:   # DALI < 0.28
        policy = {"fill_last_batch": False}
    gpu = device_id is not None
    half = dtype is not None and dtype == torch.float16

    @pipeline_def
    def pipe():
        jpegs, labels = fn.readers.file(files=[p for p, _ in samples], labels=[int(y) for _, y in samples],
                                        shuffle_after_epoch=train, shard_id=shard, num_shards=shards,
                                        seed=seed, name="Reader")
        decoder = "mixed" if gpu else "cpu"
        if train:
            images = fn.decoders.image_random_crop(jpegs, device=decoder, output_type=types.RGB,
                                                   random_area=list(SCALE), random_aspect_ratio=list(RATIO),
                                                   num_attempts=10)
            images = fn.resize(images, resize_x=size, resize_y=size)
            mirror = fn.random.coin_flip(probability=0.5)
        else:
            images = fn.decoders.image(jpegs, device=decoder, output_type=types.RGB)
            images = fn.resize(images, resize_shorter=int(size / EVAL_RESIZE))
            mirror = 0
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT16 if half else types.FLOAT,
                                          output_layout="HWC" if channels_last else "CHW", crop=(size, size),
                                          mean=[255.0 * m for m in MEAN], std=[255.0 * s for s in STD],
                                          mirror=mirror)
        return images, (labels.gpu() if gpu else labels)

    p = pipe(batch_size=batch_size, num_threads=max(1, workers), device_id=device_id, seed=seed,
             prefetch_queue_depth=2)
    p.build()
    it = DALIGenericIterator([p], ["data", "label"], reader_name="Reader", auto_reset=True, **policy)

    def endless():
        while True:
            for out in it:
                x, y = out[0]["data"], out[0]["label"].reshape(-1).long()
                if channels_last:
                    x = x.permute(0, 3, 1, 2)   # NHWC storage, NCHW view: channels_last
                if dtype is not None and x.dtype != dtype:
                    x = x.to(dtype)
                yield x, y
    return endless()


# --- what the harness calls --------------------------------------------------------------

def amp_dtype(amp):
    import torch
    return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(amp or "none")


def split_root(path, train=True):
    return os.path.join(path, "train" if train else "val")
