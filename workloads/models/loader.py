"""The input pipeline alone (mila's `loader`): JPEG decode + augmentation through DataLoader
workers, no model. Reports decoded images/s; with --synthetic it measures the harness itself."""
from .. import data
from ..harness import Workload


class Loader(Workload):
    name = "loader"
    description = "Input pipeline only: decoded + augmented images/s over --workers (imagenet layout)"
    default_batch_size = 256
    data_kind = "imagenet"
    image_size = 224

    def build(self, args):
        import torch
        import torch.nn as nn

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
        return data.image_folder(args.data, self.image_size)

    def loss(self, model, batch):
        return model(batch[0])
