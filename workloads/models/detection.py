"""Object detection workloads: SSD300 (VGG16) and Mask R-CNN (ResNet-50 FPN), COCO layout."""
from .. import compat, data
from ..workload import Workload


def _collate(batch):
    return tuple(zip(*batch))


class Detector(Workload):
    unit = "images"
    data_kind = "coco"
    num_classes = 91
    masks = False
    image_size = 300
    lr = 1e-3

    def add_args(self, parser):
        parser.add_argument("--image-size", type=int, default=self.image_size, help="input side length")
        parser.add_argument("--boxes", type=int, default=4, help="synthetic objects per image")

    def synthetic_batch(self, args, device):
        import torch
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        s = args.image_size
        images, targets = [], []
        for _ in range(args.batch_size):
            images.append(torch.rand(3, s, s, generator=g))
            xy = torch.rand(args.boxes, 2, generator=g) * (s / 2)
            wh = torch.rand(args.boxes, 2, generator=g) * (s / 2) + 8
            t = {"boxes": torch.cat([xy, xy + wh], 1).clamp(max=s - 1),
                 "labels": torch.randint(1, self.num_classes, (args.boxes,), generator=g)}
            if self.masks:
                m = torch.zeros(args.boxes, s, s, dtype=torch.uint8)
                for k, b in enumerate(t["boxes"].long()):
                    m[k, b[1]:b[3], b[0]:b[2]] = 1
                t["masks"] = m
            targets.append(t)
        return images, targets

    def dataset(self, args):
        return data.CocoDetection(args.data, args.image_size, masks=self.masks)

    def collate(self):
        return _collate

    def to_device(self, batch, device, channels_last=False):
        images, targets = batch
        return ([im.to(device, non_blocking=True) for im in images],
                [{k: v.to(device, non_blocking=True) for k, v in t.items()} for t in targets])

    def items(self, batch):
        return len(batch[0])

    def loss(self, model, batch):
        losses = model(list(batch[0]), list(batch[1]))
        return sum(losses.values())


class SSD300(Detector):
    name, description = "ssd300", "SSD300 with a VGG16 backbone (torchvision >= 0.10), COCO"
    default_batch_size = 32
    lr = 1e-4  # VGG without batch norm, from scratch: 1e-3 with momentum diverges in a few steps

    def build(self, args):
        from torchvision.models import detection
        return compat.call_model(detection.ssd300_vgg16, num_classes=self.num_classes)


class MaskRCNN(Detector):
    """torchvision's maskrcnn_resnet50_fpn without pretrained weights, which makes torchvision train
    every layer with plain BatchNorm (44,454,513 parameters). --reference-setup builds the model that
    torchvision's reference training and MLPerf use instead: FrozenBatchNorm2d and the stem + layer1
    frozen (trainable_backbone_layers=3), 44,401,393 parameters as torchvision publishes."""

    name, description = "maskrcnn", "Mask R-CNN ResNet-50 FPN (torchvision), COCO"
    default_batch_size = 4
    masks = True
    image_size = 800

    def add_args(self, parser):
        super(MaskRCNN, self).add_args(parser)
        parser.add_argument("--reference-setup", action="store_true",
                            help="FrozenBatchNorm and stem + layer1 frozen, as torchvision's reference "
                                 "training and MLPerf (default: everything trainable)")

    def build(self, args):
        from torchvision.models import detection
        if not getattr(args, "reference_setup", False):
            return compat.call_model(detection.maskrcnn_resnet50_fpn, num_classes=self.num_classes,
                                     min_size=args.image_size, max_size=args.image_size)
        # maskrcnn_resnet50_fpn ignores trainable_backbone_layers without pretrained weights: build it by hand
        from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
        from torchvision.ops.misc import FrozenBatchNorm2d
        backbone = compat.call_model(resnet_fpn_backbone, backbone_name="resnet50", norm_layer=FrozenBatchNorm2d,
                                     trainable_layers=3)
        return detection.MaskRCNN(backbone, num_classes=self.num_classes,
                                  min_size=args.image_size, max_size=args.image_size)
