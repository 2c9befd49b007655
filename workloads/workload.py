"""The base class every workload subclasses: a model, its batches and its loss."""
from .errors import UsageError


class Workload(object):
    """A workload: a model, its batches and its loss. Subclasses override what differs."""

    name = ""
    description = ""
    unit = "images"
    default_batch_size = 32
    data_kind = None        # layout --data must have ("imagenet", "coco", "text", ...); None: synthetic only
    optimizer = "sgd"
    lr = 0.01
    weight_decay = 0.0

    def default_lr(self, batch_size):
        """The lr when --lr is not given (a classifier scales it with the batch)."""
        return self.lr

    def add_args(self, parser):
        pass

    def build(self, args):
        raise NotImplementedError

    def synthetic_batch(self, args, device):
        raise NotImplementedError

    def dataset(self, args):
        raise UsageError("%s has no real-data path; use --synthetic" % self.name)

    def collate(self):
        return None

    def check_data(self, path):
        """Raise UsageError if `path` does not hold this workload's dataset."""
        from . import data
        data.check(path, self.data_kind)

    def loss(self, model, batch):
        raise NotImplementedError

    def items(self, batch):
        return int(batch[0].shape[0])

    def to_device(self, batch, device, channels_last=False):
        out = []
        for i, t in enumerate(batch):
            if hasattr(t, "to"):
                t = t.to(device, non_blocking=True)
                if channels_last and i == 0 and t.dim() == 4:
                    import torch
                    t = t.contiguous(memory_format=torch.channels_last)
            out.append(t)
        return tuple(out)
