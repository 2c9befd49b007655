"""The container side of dnnbench: the harness, the workloads and the result schema.

Importable without PyTorch (the host reads WORKLOADS and the schema); runs on Python 3.7+.
Entry point: `python -m dnnbench.workloads WORKLOAD [options]`.
"""
import importlib

# name -> (module, class, data kind or None, unit)
WORKLOADS = {
    "resnet50": ("vision", "ResNet50", "imagenet", "images"),
    "resnet18": ("vision", "ResNet18", "imagenet", "images"),
    "inception_v3": ("vision", "InceptionV3", "imagenet", "images"),
    "vgg16": ("vision", "VGG16", "imagenet", "images"),
    "mobilenet_v3": ("vision", "MobileNetV3", "imagenet", "images"),
    "vit_b_16": ("vision", "ViTB16", "imagenet", "images"),
    "ssd300": ("detection", "SSD300", "coco", "images"),
    "maskrcnn": ("detection", "MaskRCNN", "coco", "images"),
    "transformer": ("text", "Translation", None, "tokens"),
    "wlm": ("text", "WordLM", "text", "tokens"),
    "bert": ("text", "BertMLM", None, "sequences"),
    "dcgan": ("generative", "DCGAN", "imagenet", "images"),
    "vae": ("generative", "VAE", "imagenet", "images"),
    "ncf": ("recsys", "NCF", "ratings", "samples"),
    "loader": ("loader", "Loader", "imagenet", "images"),
}


def load(name):
    """The workload object called `name` (imports its module, and so PyTorch)."""
    module, cls, _, _ = WORKLOADS[name]
    return getattr(importlib.import_module("%s.models.%s" % (__name__, module)), cls)()
