"""The input pipeline alone (mila's `loader`): JPEG decode + augmentation by the --loader backend
(PIL in DataLoader workers, the GPU, or DALI), no model. Reports decoded images/s, the input
ceiling to set beside a training figure; --split val measures the evaluation transform."""
from .. import loaders
from ..workload import Workload


class Loader(Workload):
    name = "loader"
    description = "Input pipeline only: decoded + augmented images/s of --loader over --workers (imagenet layout)"
    default_batch_size = 256
    data_kind = "imagenet"
    image_size = 224
    loaders = loaders.BACKENDS

    def add_args(self, parser):
        parser.add_argument("--split", choices=("train", "val"), default="train",
                            help="train: random resized crop + flip; val: resize + centre crop")
        parser.add_argument("--image-size", type=int, default=self.image_size, help="output size (299: inception_v3)")

    def build(self, args):
        import torch
        import torch.nn as nn

        self.image_size = args.image_size

        class Touch(nn.Module):
            """One parameter and one reduction: enough for the harness's step, nothing to measure."""

            def __init__(self):
                super(Touch, self).__init__()
                self.w = nn.Parameter(torch.zeros(1))

            def forward(self, x):
                return (x.float().mean() * self.w).sum()
        return Touch()

    def synthetic_batch(self, args, device):
        import torch
        return torch.rand(args.batch_size, 3, self.image_size, self.image_size).to(device), torch.zeros(args.batch_size)

    def dataset(self, args):
        return loaders.cpu_dataset(loaders.split_root(args.data, args.split == "train"), self.image_size,
                                   train=args.split == "train")

    def loss(self, model, batch):
        return model(batch[0])
