"""The container-side harness: every workload trains a few CPU steps; statuses are honest."""
import json
import subprocess
import sys

import pytest

from dnnbench.workloads import WORKLOADS, harness, schema
from tests.helpers import dnnbench

SMALL = {  # keep CPU steps quick: small batches; options each workload understands
    "maskrcnn": ["--batch-size", "1"], "ssd300": ["--batch-size", "2"], "vit_b_16": ["--batch-size", "2"],
    "vgg16": ["--batch-size", "2"], "inception_v3": ["--batch-size", "2"],
}


def _run(name, tmp_path, *extra):
    cmd = [sys.executable, "-m", "dnnbench.workloads", name, "--device", "cpu", "--warmup", "1",
           "--number", "2", "--repeat", "2", "--results", str(tmp_path), "--progress", "0"]
    cmd += SMALL.get(name, ["--batch-size", "4"]) + list(extra)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    data = json.loads((tmp_path / "result.json").read_text()) if (tmp_path / "result.json").exists() else None
    return res, data


@pytest.mark.parametrize("name", sorted(n for n in WORKLOADS if WORKLOADS[n].data_kind != "imagenet" or n in ("resnet18", "inception_v3", "mobilenet_v3", "vit_b_16", "vgg16", "resnet50", "dcgan", "vae")))
def test_workload_trains_on_cpu_synthetic(name, tmp_path):
    if name == "loader":
        pytest.skip("loader has no synthetic mode: tested with real data below")
    # two timed steps, no warmup: each workload's model, data and step are what is checked here
    # (warmup and longer windows are tested on resnet18), and maskrcnn's CPU step alone is seconds
    res, data = _run(name, tmp_path, "--synthetic", "--warmup", "0", "--number", "1")
    assert res.returncode == 0, res.stderr[-3000:]
    assert schema.problems(data) == []
    assert data["status"] == "ok" and data["workload"] == name
    assert data["throughput"]["total"]["n"] == 2 and data["throughput"]["total"]["value"] > 0
    assert len(data["windows"]) == 2 and len(data["loss"]) == 2
    assert data["system"]["pytorch"] and data["options"]["device"] == "cpu"


def test_ncf_reads_real_ratings(tmp_path):
    """A layout without train/ (ratings.csv) reaches the workload's own dataset: the image
    layout's split-folder check once refused every non-image dataset."""
    from tests.ratings import write_ratings
    data_dir = write_ratings(tmp_path / "ml")
    res, data = _run("ncf", tmp_path / "r", "--data", str(data_dir), "--workers", "0",
                     "--users", "300", "--items", "400")
    assert res.returncode == 0, res.stderr[-3000:]
    assert data["status"] == "ok" and data["synthetic"] is False and data["throughput"]["total"]["value"] > 0
    (tmp_path / "empty").mkdir()
    bad = _run("ncf", tmp_path / "b", "--data", str(tmp_path / "empty"))[0]
    assert bad.returncode == 2 and bad.stderr.count("error:") == 1 and "ratings.csv" in bad.stderr


def test_wlm_reads_a_real_text_corpus(tmp_path):
    """The word LM's real-data path: a corpus from `data fake text`, tokenized by frequency."""
    dnnbench("data", "fake", "text", "--to", tmp_path / "corpus", "--images", "20", check=0)
    res, data = _run("wlm", tmp_path / "r", "--data", str(tmp_path / "corpus"), "--workers", "0",
                     "--batch-size", "2")
    assert res.returncode == 0, res.stderr[-3000:]
    assert data["status"] == "ok" and data["synthetic"] is False and data["throughput"]["total"]["value"] > 0


def test_ssd300_reads_a_real_coco_layout(tmp_path):
    """The detection workloads' real-data path: COCO's annotations JSON and train2017/ images
    (`data fake coco`), boxes scaled to the model's input."""
    dnnbench("data", "fake", "coco", "--to", tmp_path / "coco", "--images", "8", "--size", "64", check=0)
    res, data = _run("ssd300", tmp_path / "r", "--data", str(tmp_path / "coco"), "--workers", "0", "--repeat", "1")
    assert res.returncode == 0, res.stderr[-3000:]
    assert data["status"] == "ok" and data["synthetic"] is False and data["throughput"]["total"]["value"] > 0


def test_coco_masks_are_drawn_from_the_polygons(tmp_path):
    """maskrcnn's targets (one step of it takes minutes on this CPU): a mask per kept box, drawn
    from the annotation's polygon at the model's input size."""
    from dnnbench.workloads import data
    dnnbench("data", "fake", "coco", "--to", tmp_path / "coco", "--images", "4", "--size", "64", check=0)
    dataset = data.CocoDetection(str(tmp_path / "coco"), 48, masks=True)
    image, target = dataset[0]
    assert len(dataset) >= 1 and tuple(image.shape) == (3, 48, 48)
    boxes, masks = target["boxes"], target["masks"]
    assert len(boxes) == len(masks) == len(target["labels"]) >= 1
    assert tuple(masks.shape[1:]) == (48, 48) and int(masks.sum()) > 0 and masks.max() == 1


@pytest.mark.parametrize("name", ["dcgan", "vae"])
def test_generative_models_read_real_images(tmp_path, fake_imagenet, name):
    res, data = _run(name, tmp_path, "--data", str(fake_imagenet), "--workers", "0")
    assert res.returncode == 0, res.stderr[-3000:]
    assert data["status"] == "ok" and data["synthetic"] is False


def test_real_data_path_and_data_wait(tmp_path, fake_imagenet):
    res, data = _run("resnet18", tmp_path, "--data", str(fake_imagenet), "--workers", "1")
    assert res.returncode == 0, res.stderr[-3000:]
    assert data["synthetic"] is False
    assert 0 <= data["data_wait_fraction"] < 1


def test_loader_measures_the_input_pipeline(tmp_path, fake_imagenet):
    res, data = _run("loader", tmp_path, "--data", str(fake_imagenet), "--workers", "1")
    assert res.returncode == 0, res.stderr[-3000:]
    assert data["status"] == "ok" and data["throughput"]["total"]["value"] > 0


def test_bad_data_dir_fails_before_building_a_model(tmp_path):
    res, data = _run("resnet18", tmp_path, "--data", str(tmp_path / "missing"))
    assert res.returncode == harness.EXIT_USAGE
    assert data["status"] == "error" and "does not exist" in data["message"]
    assert data["system"] == {}          # nothing was built


def test_tbd_start_stop_iter(tmp_path):
    res, data = _run("resnet18", tmp_path, "--synthetic", "--start-iter", "2", "--stop-iter", "7", "--number", "2")
    assert res.returncode == 0, res.stderr[-2000:]
    assert data["options"]["warmup"] == 2
    assert sum(w["items"] for w in data["windows"]) == 5 * 4   # 5 timed iterations of batch 4


class _Tiny(harness.Workload):
    """A two-parameter model whose loss turns NaN or raises on cue."""
    name = "tiny"
    unit = "samples"
    default_batch_size = 2

    def __init__(self, fail_at=None, error=None):
        self.fail_at, self.error, self.calls = fail_at, error, 0

    def build(self, args):
        import torch
        return torch.nn.Linear(2, 1)

    def synthetic_batch(self, args, device):
        import torch
        return (torch.ones(args.batch_size, 2, device=device),)

    def loss(self, model, batch):
        self.calls += 1
        if self.error and self.calls >= self.fail_at:
            raise RuntimeError(self.error)
        out = model(batch[0]).mean()
        return out * float("nan") if self.fail_at and self.calls >= self.fail_at else out


def _inproc(workload, tmp_path, *extra):
    code = harness.run(workload, ["--device", "cpu", "--warmup", "1", "--number", "3", "--repeat", "4",
                                  "--results", str(tmp_path), "--progress", "0"] + list(extra))
    return code, schema.read(str(tmp_path / "result.json"))


def test_nan_loss_fails_the_run_at_a_window_edge(tmp_path):
    code, data = _inproc(_Tiny(fail_at=6), tmp_path)   # warmup 1, then NaN in the 2nd window
    assert code == harness.EXIT_NAN
    assert data["status"] == "nan" and "window 2" in data["message"]
    assert len(data["windows"]) == 2


def test_out_of_memory_is_its_own_status(tmp_path):
    code, data = _inproc(_Tiny(fail_at=3, error="CUDA out of memory. Tried to allocate 2.00 GiB"), tmp_path)
    assert code == harness.EXIT_OOM and data["status"] == "oom"


def test_crash_keeps_a_result_with_the_message(tmp_path):
    code, data = _inproc(_Tiny(fail_at=3, error="cudnn exploded"), tmp_path)
    assert code == harness.EXIT_ERROR and data["status"] == "error" and "cudnn exploded" in data["message"]


def test_usage_error_in_harness(tmp_path):
    code, data = _inproc(_Tiny(), tmp_path, "--start-iter", "3")
    assert code == harness.EXIT_USAGE and "go together" in data["message"]


def test_entry_lists_and_rejects():
    res = subprocess.run([sys.executable, "-m", "dnnbench.workloads", "list"], capture_output=True, text=True)
    assert "inception_v3" in res.stdout
    res = subprocess.run([sys.executable, "-m", "dnnbench.workloads", "resnet5"], capture_output=True, text=True)
    assert res.returncode == 2 and "resnet50" in res.stderr


def test_gpu_paths_that_run_on_a_cpu_bf16_and_channels_last(tmp_path):
    """Autocast to bfloat16 and channels-last run on the CPU as on a GPU: the same seed gives
    other losses in bf16 than in fp32 (autocast really applied), and both are recorded."""
    one = ["--synthetic", "--batch-size", "2", "--seed", "3", "--warmup", "0", "--number", "1", "--repeat", "1"]
    fp32, fp32_data = _run("resnet18", tmp_path / "fp32", *one)       # one step each: its loss is compared
    bf16, bf16_data = _run("resnet18", tmp_path / "bf16", *one, "--amp", "bf16", "--channels-last")
    assert fp32.returncode == 0 and bf16.returncode == 0, fp32.stderr[-2000:] + bf16.stderr[-2000:]
    assert bf16_data["status"] == "ok" and bf16_data["options"]["amp"] == "bf16"
    assert bf16_data["options"]["channels_last"] is True
    assert all(x == x for x in bf16_data["loss"])                         # finite, not NaN
    assert bf16_data["loss"][0] != fp32_data["loss"][0]


def test_compile_runs_on_a_cpu(tmp_path):
    """torch.compile (inductor, C++ on the CPU) on the smallest model: the compiled kernels land
    in the cache this run was given, and the run is recorded as compiled."""
    import os
    cache = tmp_path / "inductor"
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "dnnbench.workloads", "ncf", "--device", "cpu", "--synthetic", "--compile",
           "--warmup", "1", "--number", "1", "--repeat", "2", "--results", str(tmp_path), "--progress", "0"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads((tmp_path / "result.json").read_text())
    assert data["status"] == "ok" and data["options"]["compile"] is True
    assert any(p.suffix in (".so", ".py", ".cpp") for p in cache.rglob("*"))
