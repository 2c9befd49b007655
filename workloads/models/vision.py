"""Image classification workloads on torchvision models (no pretrained weights, never a download)."""
from .. import compat, data
from ..workload import Workload
from ..loaders import BACKENDS


class Classifier(Workload):
    arch = ""
    image_size = 224
    num_classes = 1000
    data_kind = "imagenet"
    loaders = BACKENDS              # --loader choices: PIL in workers, GPU decode, DALI
    default_batch_size = 64
    extra = {}
    # what the pytorch/examples ImageNet script (and NVIDIA's) does per step: weight decay 1e-4,
    # lr 0.1 per 256 images (Goyal et al.'s linear scaling)
    lr = None
    weight_decay = 1e-4

    def default_lr(self, batch_size):
        return 0.1 * batch_size / 256.0

    def build(self, args):
        import torchvision
        return compat.call_model(getattr(torchvision.models, self.arch), num_classes=self.num_classes, **self.extra)

    def synthetic_batch(self, args, device):
        import torch
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        x = torch.randn(args.batch_size, 3, self.image_size, self.image_size, generator=g)
        y = torch.randint(0, self.num_classes, (args.batch_size,), generator=g)
        return x.to(device), y.to(device)

    def dataset(self, args):
        return data.image_folder(args.data, self.image_size)

    def loss(self, model, batch):
        import torch.nn.functional as F
        x, y = batch[0], batch[1]
        out = model(x)
        if isinstance(out, tuple):  # inception_v3 in training mode: (logits, aux_logits)
            return F.cross_entropy(out[0], y) + 0.4 * F.cross_entropy(out[1], y)
        return F.cross_entropy(out, y)


class ResNet50(Classifier):
    name, arch, description = "resnet50", "resnet50", "ResNet-50 v1.5, ImageNet classification, 224x224"
    default_batch_size = 256


class ResNet18(Classifier):
    name, arch, description = "resnet18", "resnet18", "ResNet-18, ImageNet classification, 224x224"
    default_batch_size = 256


class InceptionV3(Classifier):
    name, arch, description = "inception_v3", "inception_v3", "Inception v3 (aux logits in the loss), 299x299"
    image_size = 299
    default_batch_size = 128

    def build(self, args):
        import sys

        import torchvision
        ctor = torchvision.models.inception_v3
        # The aux head pools to 1x1 before a BatchNorm, which cannot train on one value per
        # channel: at batch 1 the model trains without it, and the result records that.
        args.aux_logits = args.batch_size > 1
        if not args.aux_logits:
            sys.stderr.write("[inception_v3] batch 1: training without the aux head (its BatchNorm needs 2+ "
                             "samples); recorded as options.aux_logits = false\n")
        try:  # torchvision >= 0.8 warns unless init_weights is explicit
            return compat.call_model(ctor, num_classes=self.num_classes, aux_logits=args.aux_logits,
                                     init_weights=True)
        except TypeError:
            return compat.call_model(ctor, num_classes=self.num_classes, aux_logits=args.aux_logits)


class VGG16(Classifier):
    name, arch, description = "vgg16", "vgg16", "VGG-16, ImageNet classification, 224x224"
    default_batch_size = 128

    def default_lr(self, batch_size):
        return 0.01 * batch_size / 256.0   # pytorch/examples: 0.01 for VGG (no BatchNorm; 0.1 diverges)


class MobileNetV3(Classifier):
    name, arch, description = "mobilenet_v3", "mobilenet_v3_large", "MobileNet v3 large, 224x224 (torchvision >= 0.9)"
    default_batch_size = 256


class ViTB16(Classifier):
    name, arch, description = "vit_b_16", "vit_b_16", "Vision Transformer B/16, 224x224 (torchvision >= 0.12)"
    default_batch_size = 128
