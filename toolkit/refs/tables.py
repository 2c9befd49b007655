"""The three tables every comparison goes through: GPU names (one model, many spellings),
precisions, and the sources' workloads as dnnbench's. A name not in a table matches nothing:
a reference is never placed against a result by a guess."""
from __future__ import annotations

from dnnbench.refs.reference import key

# A GPU model and the names it goes by: nvidia-smi's (what a result records), Lambda's
# (`H100 80GB SXM5`, v2's `H100_80GB_SXM5`), MLPerf's `accelerator_model_name`. Bare names
# that cover two models ("H100": PCIe or SXM5; "H200": SXM or NVL) are not here.
GPUS: dict[str, tuple[str, ...]] = {
    "H100 SXM5 80GB": ("NVIDIA H100 80GB HBM3", "H100 80GB SXM5", "NVIDIA H100-SXM5-80GB"),
    "H100 PCIe 80GB": ("NVIDIA H100 PCIe", "H100 80GB PCIe Gen5", "H100 80GB PCIe", "NVIDIA H100-PCIe-80GB"),
    "H100 NVL": ("NVIDIA H100 NVL", "H100 NVL"),
    "H200 SXM 141GB": ("NVIDIA H200", "H200 140GB SXM", "NVIDIA H200-SXM5-141GB", "H200 SXM 141GB",
                       "NVIDIA H200-SXM-141GB"),
    "B200 SXM": ("NVIDIA B200", "B200 192GB", "NVIDIA B200-SXM-180GB", "B200 SXM 180GB"),
    "A100 SXM4 80GB": ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM4", "NVIDIA A100-SXM-80GB"),
    "A100 SXM4 40GB": ("NVIDIA A100-SXM4-40GB", "A100 40GB SXM4"),
    "A100 PCIe 80GB": ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
    "A100 PCIe 40GB": ("NVIDIA A100-PCIE-40GB", "A100 40GB PCIe"),
    "A10": ("NVIDIA A10", "A10"),
    "L40S": ("NVIDIA L40S", "L40S"),
    "RTX 6000 Ada": ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    "RTX A6000": ("NVIDIA RTX A6000", "RTX A6000"),
    "RTX 4090": ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    "RTX 3090": ("NVIDIA GeForce RTX 3090", "RTX 3090"),
    "Quadro RTX 8000": ("Quadro RTX 8000", "NVIDIA Quadro RTX 8000"),
    "MI300X": ("AMD Instinct MI300X", "AMD Instinct MI300X 192GB HBM3", "MI300X"),
    "MI325X": ("AMD Instinct MI325X", "AMD Instinct MI325X 256GB HBM3E", "MI325"),   # milabench's MI325.yaml
}
_GPU_BY_KEY = {key(n): model for model, names in GPUS.items() for n in (model, *names)}


def gpu_model(name: str | None) -> str | None:
    """The model a GPU name is, or None when the table does not know the name."""
    return _GPU_BY_KEY.get(key(name)) if name else None


def gpu_suffix(name: str) -> str | None:
    """The longest GPU name in the table that `name` ends with, as `name` spells it (Lambda's
    "DellTexas H100 80GB SXM5" names its vendor first); None when none does."""
    words = name.split()
    for start in range(len(words)):
        tail = " ".join(words[start:])
        if key(tail) in _GPU_BY_KEY:
            return tail
    return None


# precisions as the sources write them -> one name: `fp16` is autocast to fp16 (Lambda's AMP,
# milabench's tf32-fp16, dnnbench's --amp fp16); `fp32` is no autocast (dnnbench's --amp none,
# PyTorch's default TF32 rules); `tf32` is milabench's explicit TF32 for matmuls and convs
PRECISIONS = {"fp16": "fp16", "amp": "fp16", "tf32-fp16": "fp16", "mixed": "fp16", "bf16": "bf16",
              "fp32": "fp32", "none": "fp32", "tf32": "tf32"}


def precision(text: str | None) -> str | None:
    return PRECISIONS.get((text or "").strip().lower())


# (source, the source's workload) -> (dnnbench's workload or None, unit, why, when not the same)
# Only the same model trained the same way is dnnbench's workload; the rest stay references
# by their own names (listed, never compared with a dnnbench result).
WORKLOADS: dict[tuple[str, str], tuple[str | None, str, str]] = {
    ("lambda", "resnet50"): ("resnet50", "images/s", ""),
    ("lambda", "ncf"): ("ncf", "samples/s", ""),
    ("lambda", "ssd"): (None, "images/s", "NVIDIA's SSD300 has a ResNet-50 backbone; dnnbench's ssd300 VGG-16"),
    ("lambda", "bert_base_squad"): (None, "sequences/s", "SQuAD fine-tuning; dnnbench's bert is pre-training"),
    ("lambda", "bert_large_squad"): (None, "sequences/s", "BERT-large SQuAD fine-tuning"),
    ("lambda", "gnmt"): (None, "tokens/s", "GNMT; dnnbench's transformer is Transformer base"),
    ("lambda", "transformerxlbase"): (None, "tokens/s", "Transformer-XL"),
    ("lambda", "transformerxllarge"): (None, "tokens/s", "Transformer-XL"),
    ("lambda", "tacotron2"): (None, "items/s", "no dnnbench workload"),
    ("lambda", "waveglow"): (None, "items/s", "no dnnbench workload"),
    ("milabench", "resnet50"): ("resnet50", "images/s", ""),
    ("milabench", "resnet50-noio"): ("resnet50", "images/s", ""),
    ("milabench", "bert"): (None, "sequences/s", "sequences of 512, MLM only; dnnbench's bert: 128, MLM + NSP"),
    ("mlperf", "resnet"): ("resnet50", "minutes", ""),
    ("mlperf", "maskrcnn"): ("maskrcnn", "minutes", ""),
    ("mlperf", "bert"): (None, "minutes", "BERT-large; dnnbench's bert is BERT-base"),
    ("mlperf", "ssd"): (None, "minutes", "SSD with a ResNet-34 backbone"),
    ("mlperf", "retinanet"): (None, "minutes", "RetinaNet ResNeXt-50; dnnbench has ssd300 and maskrcnn"),
}


def workload(source: str, name: str) -> str | None:
    """dnnbench's workload for a source's, or None (milabench's precision suffix left aside)."""
    found = WORKLOADS.get((source, name)) or WORKLOADS.get((source, milabench_base(name)[0]))
    return found[0] if found else None


def unit(source: str, name: str, default: str = "items/s") -> str:
    found = WORKLOADS.get((source, name)) or WORKLOADS.get((source, milabench_base(name)[0]))
    return found[1] if found else default


MILABENCH_PRECISIONS = ("-tf32-fp16", "-fp16", "-fp32", "-tf32", "-bf16")


def milabench_base(name: str) -> tuple[str, str | None]:
    """milabench's `bert-tf32-fp16` as (`bert`, `tf32-fp16`); a name without a suffix as is."""
    for suffix in MILABENCH_PRECISIONS:
        if name.endswith(suffix):
            return name[:-len(suffix)], suffix[1:]
    return name, None
