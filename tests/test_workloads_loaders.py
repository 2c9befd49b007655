"""--loader: the cpu (PIL in workers) and gpu (decode_jpeg + augmentation on the batch) backends
give the same samples, labels, sampling, shapes, dtypes and value ranges. The gpu path runs here
on device cpu: torchvision's decode_jpeg decodes on the CPU too, so its code is exercised for real."""
import json
import os
import random
import subprocess
import sys
from types import SimpleNamespace

import pytest

from dnnbench.workloads import harness, loaders
from dnnbench.workloads.errors import UsageError
from tests.helpers import dnnbench, one_line_error

torch = pytest.importorskip("torch")
SIZE = 32
LO = [(0 - m) / s for m, s in zip(loaders.MEAN, loaders.STD)]
HI = [(1 - m) / s for m, s in zip(loaders.MEAN, loaders.STD)]


@pytest.fixture(scope="module")
def imagenet(tmp_path_factory):
    """A few dozen small JPEGs of mixed sizes in 3 classes, plus what real ImageNet also holds:
    a grayscale JPEG, a CMYK JPEG and a PNG named .JPEG."""
    from PIL import Image
    root = tmp_path_factory.mktemp("imagenet")
    rnd = random.Random(0)
    for split, n in (("train", 30), ("val", 6)):
        for i in range(n):
            cls = root / split / ("n%08d" % (i % 3))
            cls.mkdir(parents=True, exist_ok=True)
            w, h = rnd.choice([(48, 40), (40, 56), (64, 48), (37, 45)])
            small = Image.frombytes("RGB", (w // 4, h // 4), bytes(rnd.getrandbits(8) for _ in range(3 * (w // 4) * (h // 4))))
            small.resize((w, h)).save(cls / ("img_%03d.JPEG" % i), "JPEG", quality=90)
    odd = root / "train" / "n00000000"
    Image.new("L", (40, 40), 128).save(odd / "gray.JPEG", "JPEG")
    Image.new("CMYK", (40, 40), (10, 200, 30, 0)).save(odd / "cmyk.JPEG", "JPEG")
    Image.new("RGB", (40, 40), (250, 5, 5)).save(odd / "png.JPEG", "PNG")
    return root


def _dist(world=1, rank=0):
    return SimpleNamespace(enabled=world > 1, world_size=world, rank=rank, local_rank=rank)


def _args(path, **kw):
    base = dict(batch_size=4, workers=0, seed=0, data=str(path), loader="auto", amp="none", channels_last=False)
    base.update(kw)
    return SimpleNamespace(**base)


def test_both_datasets_hold_the_same_samples_and_labels(imagenet):
    cpu = loaders.cpu_dataset(str(imagenet / "train"), SIZE)
    enc = loaders.encoded_dataset(str(imagenet / "train"))
    assert cpu.class_to_idx == enc.class_to_idx == {"n00000000": 0, "n00000001": 1, "n00000002": 2}
    assert cpu.samples == enc.samples and len(cpu) == 33
    data, label = enc[0]
    assert data.dtype == torch.uint8 and data.dim() == 1 and bytes(data[:2].tolist()) == b"\xff\xd8"


@pytest.mark.parametrize("world", [1, 2])
def test_the_same_sampling_per_rank(imagenet, world):
    """The harness's DataLoader serves both: with the same seed, the same labels in the same order
    (DistributedSampler under several ranks, each rank its own disjoint share)."""
    seen = {}
    for rank in range(world):
        orders = []
        for ds, collate in ((loaders.cpu_dataset(str(imagenet / "train"), SIZE), None),
                            (loaders.encoded_dataset(str(imagenet / "train")), loaders.collate_encoded)):
            torch.manual_seed(7 + rank)
            it = harness._data_loader(ds, collate, _args(imagenet), "cpu", _dist(world, rank))
            orders.append([int(y) for _ in range(3) for y in next(it)[1]])
        assert orders[0] == orders[1]
        seen[rank] = orders[0]
    if world == 2:    # 33 samples, 2 ranks: 17 each (padded); batches of 4 cover 12 of each
        assert seen[0] != seen[1]


def _label_batches(ds, collate, args, seed):
    torch.manual_seed(seed)
    return harness._data_loader(ds, collate, args, "cpu", _dist())


def test_cpu_and_gpu_train_batches_agree(imagenet):
    args = _args(imagenet, batch_size=8)
    # one after the other: both draw their shuffle from the global RNG, as in the harness
    cpu = _label_batches(loaders.cpu_dataset(str(imagenet / "train"), SIZE), None, args, 3)
    cpu = [next(cpu) for _ in range(4)]      # 32 of 33 images, the odd ones among them
    gpu = _label_batches(loaders.encoded_dataset(str(imagenet / "train")), loaders.collate_encoded, args, 3)
    gpu = [next(gpu) for _ in range(4)]
    decode = loaders.DeviceImages(SIZE, "cpu", train=True, seed=0)
    for (xc, yc), (datas, yg) in zip(cpu, gpu):
        xg, yg2 = decode(datas, yg)
        assert xg.shape == xc.shape == (8, 3, SIZE, SIZE)
        assert xg.dtype == xc.dtype == torch.float32 and yg2.dtype == yc.dtype == torch.int64
        assert yg2.tolist() == yc.tolist()
        for c in range(3):
            for x in (xc, xg):
                assert LO[c] - 1e-3 <= float(x[:, c].min()) and float(x[:, c].max()) <= HI[c] + 1e-3
    assert decode.fallbacks >= 1      # the PNG named .JPEG: decoded with PIL, not lost


def test_eval_center_crop_matches_the_cpu_transform(imagenet):
    """val: shorter side to size/0.875, centre crop. Deterministic, so the pixels must match PIL's
    up to the resampler's rounding."""
    cpu = loaders.cpu_dataset(str(imagenet / "val"), SIZE, train=False)
    enc = loaders.encoded_dataset(str(imagenet / "val"))
    decode = loaders.DeviceImages(SIZE, "cpu", train=False)
    xs = torch.stack([cpu[i][0] for i in range(len(cpu))])
    xg, _ = decode([enc[i][0] for i in range(len(enc))], torch.zeros(len(enc), dtype=torch.int64))
    assert xg.shape == xs.shape
    assert float((xg - xs).abs().mean()) < 0.03      # ~1.5/255 after normalization
    assert float((xg - xs).abs().max()) < 0.35


def test_random_resized_crop_statistics_match_torchvision():
    from torchvision import transforms
    rnd = random.Random(1)
    torch.manual_seed(1)
    mine = [loaders.crop_box(300, 400, rnd) for _ in range(3000)]
    ref = [transforms.RandomResizedCrop.get_params(torch.zeros(3, 300, 400), list(loaders.SCALE), list(loaders.RATIO))
           for _ in range(3000)]

    def stats(boxes):
        area = sum(h * w for _, _, h, w in boxes) / (len(boxes) * 300.0 * 400)
        aspect = sum(w / float(h) for _, _, h, w in boxes) / len(boxes)
        return area, aspect
    (a1, r1), (a2, r2) = stats(mine), stats(ref)
    assert abs(a1 - a2) < 0.03 and abs(r1 - r2) < 0.05
    assert all(0 <= t and 0 <= left and t + h <= 300 and left + w <= 400 for t, left, h, w in mine)


def test_flip_is_a_coin_per_image():
    """Whole-image crops of a left-white image: about half come out flipped; eval never flips."""
    from torchvision.io import encode_jpeg
    img = torch.zeros((3, 16, 16), dtype=torch.uint8)
    img[:, :, :8] = 255
    data = encode_jpeg(img, quality=100)
    for train in (True, False):
        decode = loaders.DeviceImages(16, "cpu", train=train, seed=0, scale=(1.0, 1.0), ratio=(1.0, 1.0))
        x, _ = decode([data] * 200, torch.zeros(200, dtype=torch.int64))
        left_white = (x[:, 0, :, :4].mean(dim=(1, 2)) > x[:, 0, :, -4:].mean(dim=(1, 2))).float().mean()
        if train:
            assert 0.4 < float(left_white) < 0.6
        else:
            assert float(left_white) == 1.0


def test_gpu_batch_in_amp_dtype_and_channels_last(imagenet):
    enc = loaders.encoded_dataset(str(imagenet / "train"))
    decode = loaders.DeviceImages(SIZE, "cpu", dtype=torch.bfloat16, channels_last=True)
    x, y = decode([enc[i][0] for i in range(4)], torch.arange(4))
    assert x.dtype == torch.bfloat16 and x.is_contiguous(memory_format=torch.channels_last)
    assert x.shape == (4, 3, SIZE, SIZE)


def test_choose_and_fallbacks():
    assert loaders.choose("cpu", loaders.BACKENDS, "cpu") == ("cpu", "asked for")
    name, why = loaders.choose("gpu", loaders.BACKENDS, "cpu")
    assert name == "gpu" and "decode_jpeg on cpu" in why
    assert loaders.choose("auto", loaders.BACKENDS, "cpu")[0] == "cpu"
    assert loaders.choose("auto", ("cpu",), "cuda")[0] == "cpu"
    with pytest.raises(UsageError, match="has only cpu"):
        loaders.choose("gpu", ("cpu",), "cpu")
    ok, _ = loaders.dali_support()
    name, why = loaders.choose("dali", loaders.BACKENDS, "cpu")
    if ok:
        assert name == "dali" and "CPU pipeline" in why
    else:
        assert name == "gpu" and "no NVIDIA DALI" in why     # falls back, says why


def test_dali_pipeline_on_the_cpu(imagenet):
    """DALI's CPU decoder with the same file list and labels (runs where DALI is installed)."""
    pytest.importorskip("nvidia.dali")
    samples = loaders.encoded_dataset(str(imagenet / "train")).samples
    good = [s for s in samples if not os.path.basename(s[0]).startswith(("png", "cmyk"))]
    x, y = next(loaders.dali_batches(good, SIZE, 8, 1, None, 0, 1, 0, train=False))
    assert x.shape == (8, 3, SIZE, SIZE) and x.dtype == torch.float32
    assert y.tolist() == [lab for _, lab in good[:8]]     # ImageFolder's labels, in file order
    for c in range(3):
        assert LO[c] - 1e-3 <= float(x[:, c].min()) and float(x[:, c].max()) <= HI[c] + 1e-3


def _run(name, tmp_path, *extra):
    cmd = [sys.executable, "-m", "dnnbench.workloads", name, "--device", "cpu", "--warmup", "1", "--number", "2",
           "--repeat", "2", "--results", str(tmp_path), "--progress", "0", "--batch-size", "4"] + list(extra)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return res, json.loads((tmp_path / "result.json").read_text())


def test_training_with_the_gpu_loader_records_which_ran(tmp_path, imagenet):
    res, data = _run("resnet18", tmp_path, "--data", str(imagenet), "--workers", "1", "--loader", "gpu")
    assert res.returncode == 0, res.stderr[-3000:]
    assert data["loader"]["used"] == "gpu" and data["loader"]["requested"] == "gpu"
    assert "decode_jpeg on cpu" in data["loader"]["why"]
    # on a busy machine the rule may say so instead (workloads/busy.py), and only then
    from dnnbench.workloads import busy
    assert data["verdict"]["label"] in ("compute-bound", "input-bound") or \
        (data["verdict"]["label"] == "host-bound" and busy.of_result(data)), data["verdict"]


def test_loader_workload_measures_each_backend(tmp_path, imagenet):
    for loader, split in (("cpu", "train"), ("gpu", "train"), ("gpu", "val")):
        out = tmp_path / (loader + split)
        res, data = _run("loader", out, "--data", str(imagenet), "--workers", "0", "--loader", loader,
                         "--split", split, "--image-size", str(SIZE))
        assert res.returncode == 0, res.stderr[-3000:]
        assert data["status"] == "ok" and data["throughput"]["total"]["value"] > 0
        assert data["loader"]["used"] == loader
        # what cannot change with the machine's load: a verdict from the set, and the data-wait
        # share it reads recorded as the windows' own sum (which label wins depends on timing)
        from dnnbench.workloads.verdict import LABELS
        assert data["verdict"]["label"] in LABELS
        waits, seconds = (sum(w[k] for w in data["windows"]) for k in ("data_wait", "seconds"))
        assert data["data_wait_fraction"] == pytest.approx(waits / seconds)


def test_auto_picks_cpu_without_a_gpu_and_says_why(tmp_path, imagenet):
    res, data = _run("loader", tmp_path, "--data", str(imagenet), "--workers", "0", "--image-size", str(SIZE))
    assert res.returncode == 0, res.stderr[-3000:]
    assert data["loader"] == {"requested": "auto", "used": "cpu", "why": data["loader"]["why"]}
    assert "no CUDA device" in data["loader"]["why"]


def test_host_options_carry_the_loader(tmp_path, imagenet):
    res = dnnbench("run", "resnet18", "--runtime", "host", "--loader", "gpu", "--dry-run")
    assert "--loader gpu" in res.stdout
    res = dnnbench("run", "resnet18", "--runtime", "host", "--loader", "tpu", "--dry-run", check=2)
    one_line_error(res, "--loader")
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\ndefaults: {runtime: host, repeats: 1, options: {loader: gpu, workers: 0, number: 1,"
                     " repeat: 1, warmup: 0}}\njobs:\n  - {workload: loader, batch_size: 4, data: %s,"
                     " extra: [--image-size, '%d']}\n" % (json.dumps(str(imagenet)), SIZE))
    dnnbench("suite", "run", str(suite), "--results", str(tmp_path / "out"))
    data = json.loads(next((tmp_path / "out").rglob("result.json")).read_text())
    assert data["options"]["loader"] == "gpu" and data["loader"]["used"] == "gpu"
    bad = tmp_path / "bad.yaml"
    bad.write_text(suite.read_text().replace("loader: gpu", "loader: '[red]tpu'"))
    res = dnnbench("suite", "run", str(bad), "--dry-run", check=2)
    one_line_error(res, "options.loader must be 'auto', 'cpu', 'gpu' or 'dali', got '[red]tpu'")
