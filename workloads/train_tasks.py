"""What `dnnbench.workloads.train` trains and evaluates, one class per kind of workload: its
data, optimizer, batches, loss and evaluation, as the reference the workload follows does it.
The loop, the clock, checkpoints and signals stay in train.py, the same for every kind.

Each batch of an epoch is a function of (seed, epoch, step) alone, so a run resumed mid-epoch
from a checkpoint continues the same trajectory. Python 3.7+, stdlib + torch/torchvision.
"""
import os
import random
import warnings

from . import data, fileio
from .errors import UsageError

# PyTorch warns (6 lines) at every DataLoader whose workers outnumber the CPUs: a train and an eval
# loader each epoch, said again whenever anything touches the warning filters (which clears even
# a "once" filter's memory). Its warning is silenced here; workers() says it in one line, once.
warnings.filterwarnings("ignore", message="This DataLoader will create", category=UserWarning)
_SAID = []


def _eval_ticker(batches, dist):
    """Progress lines through an evaluation (ImageNet's val set takes minutes), on rank 0."""
    import sys
    from . import progress
    return progress.Ticker("evaluating:", batches, lambda line: sys.stderr.write(line + "\n"), unit="batches",
                           enabled=dist.rank == 0)


def workers(n):
    """The DataLoader workers asked for, with one line, once per run, when they outnumber the CPUs."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if n > cpus and not _SAID:
        _SAID.append(n)
        import sys
        sys.stderr.write("note: %d DataLoader workers share %d CPUs (--workers %d may be as fast)\n" % (n, cpus, cpus))
    return n


class Seeded(object):
    """A dataset whose sample `i` in epoch `e` is augmented from (seed, e, i) alone, in whatever
    worker and whatever order it is read: the trajectory does not depend on where a run resumed."""

    def __init__(self, inner, seed):
        self.inner, self.seed, self.epoch = inner, seed, 0

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        import torch
        s = (self.seed * 1000003 + self.epoch) * 1000003 + int(i)
        # the CPU generator the transforms draw from; torch.manual_seed would also queue a CUDA
        # reseed with a stack trace each time (about 80 us a sample: 2 % of a CPU epoch here)
        torch.default_generator.manual_seed(s % (2**63))
        random.seed(s)
        return self.inner[i]


def order(n, seed, epoch, rank, world, batch):
    """This rank's sample indices for an epoch: a permutation drawn from (seed, epoch), split
    across ranks, whole batches only."""
    import torch
    g = torch.Generator()
    g.manual_seed(seed * 1000 + epoch)
    perm = torch.randperm(n, generator=g).tolist()
    per_rank = (n // world) // batch * batch
    return perm[rank * per_rank:(rank + 1) * per_rank]


class Classification(object):
    """The image classifiers, as pytorch/examples' ImageNet main.py trains them: SGD momentum
    0.9, weight decay 1e-4, lr 0.1 x batch/256 divided by 10 every --lr-step epochs;
    RandomResizedCrop + flip for train/, Resize + CenterCrop for val/; top-1 and top-5."""
    metric = "top1"
    evaluates = ("top-1 and top-5 accuracy (%) and the mean loss over val/, as pytorch/examples' validate(); "
                 "--target-accuracy is a top-1")

    def __init__(self, workload, args, dist, device):
        self.workload, self.args, self.dist, self.device = workload, args, dist, device
        if args.image_size:
            workload.image_size = args.image_size
        self.size = size = workload.image_size
        for split in ("train", "val"):
            if not fileio.is_real_dir(os.path.join(args.data, split)):
                raise UsageError("%s has no %s/ folder (the ImageNet layout: train/ and val/ of class folders)"
                                 % (args.data, split))
        from torchvision import datasets as tvd, transforms as T
        norm = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
        train = tvd.ImageFolder(os.path.join(args.data, "train"), T.Compose(
            [T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor(), norm]))
        self.val = tvd.ImageFolder(os.path.join(args.data, "val"), T.Compose(
            [T.Resize(int(round(size * 256 / 224.0))), T.CenterCrop(size), T.ToTensor(), norm]))
        if len(train) < args.batch_size * dist.world_size:
            raise UsageError("%s/train has %d images, fewer than one batch of %d" % (args.data, len(train),
                                                                                    args.batch_size))
        self.train = Seeded(train, args.seed)
        self.classes = list(train.classes)      # a checkpoint is resumed on these classes only
        self.extra = _extra_set(getattr(args, "eval_data", None), train.classes, self.val.transform, tvd)
        workload.num_classes = len(train.classes)
        self.base_lr = args.lr if args.lr is not None else workload.default_lr(args.batch_size * dist.world_size)
        self.poly = Poly(self.base_lr, args, (len(train) // dist.world_size) // args.batch_size) \
            if getattr(args, "lr_schedule", "step") == "poly" else None
        self.facts = {"image_size": size, "train_transform": "RandomResizedCrop(%d) + flip" % size,
                      "eval_transform": "Resize(%d) + CenterCrop(%d)" % (int(round(size * 256 / 224.0)), size)}
        self.intro = "%d images, image size %d" % (len(train), size)

    def lr_at(self, epoch):
        if self.poly:
            return self.poly.lr(epoch * self.poly.steps_per_epoch)
        return self.base_lr * (0.1 ** (epoch // self.args.lr_step))

    def steps(self):
        """Steps in an epoch (what batches() yields from step 0)."""
        return (len(self.train) // self.dist.world_size) // self.args.batch_size

    def optimizer(self, model):
        import torch
        self.schedule = ("SGD momentum 0.9, weight decay %g, lr %g divided by 10 every %d epochs (pytorch/examples)"
                         % (self.workload.weight_decay, self.base_lr, self.args.lr_step))
        if self.poly:
            self.schedule = ("SGD momentum 0.9, weight decay %g, lr %g after %g warmup epochs, polynomial decay "
                             "(power 2) to %g per step (MLPerf ResNet)" % (self.workload.weight_decay, self.base_lr,
                                                                        self.args.warmup_epochs, Poly.END_LR))
        return torch.optim.SGD(model.parameters(), lr=self.base_lr, momentum=0.9,
                               weight_decay=self.workload.weight_decay)

    def batches(self, epoch, start):
        """(steps in the epoch, an iterator over its batches from step `start`)."""
        import torch
        a, dist = self.args, self.dist
        self.train.epoch = epoch
        idx = order(len(self.train), a.seed, epoch, dist.rank, dist.world_size, a.batch_size)
        loader = torch.utils.data.DataLoader(
            self.train, batch_size=a.batch_size, sampler=idx[start * a.batch_size:], num_workers=workers(a.workers),
            drop_last=True, pin_memory=self.device == "cuda")
        return len(idx) // a.batch_size, iter(loader)

    def loss(self, model, batch):
        """(loss, items) of one batch."""
        import torch
        import torch.nn.functional as F
        x, y = batch[0].to(self.device, non_blocking=True), batch[1].to(self.device, non_blocking=True)
        if self.args.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        out = model(x)
        out = out[0] if isinstance(out, tuple) else out
        return F.cross_entropy(out, y), x.shape[0]

    def evaluate(self, model, amp):
        """top-1, top-5 (%) and mean loss over val/ (every rank's share, summed); with
        --eval-data the same over that set too, under "extra"."""
        ev = self._evaluate(model, amp, self.val)
        if self.extra is not None:
            ev["extra"] = self._evaluate(model, amp, self.extra)
        return ev

    def _evaluate(self, model, amp, dataset):
        import torch
        import torch.nn.functional as F
        from . import compat
        dist, device = self.dist, self.device
        loader = torch.utils.data.DataLoader(
            torch.utils.data.Subset(dataset, list(range(dist.rank, len(dataset), dist.world_size))),
            batch_size=self.args.batch_size, num_workers=workers(self.args.workers))
        totals = torch.zeros(4, dtype=torch.float64)
        ticker = _eval_ticker(len(loader), dist)
        model.eval()
        with torch.no_grad():
            for k, (x, y) in enumerate(loader):
                ticker.tick(k)
                x, y = x.to(device), y.to(device)
                with compat.autocast(device, amp):
                    out = model(x)
                out = out[0] if isinstance(out, tuple) else out
                k = min(5, out.shape[1])
                hit = out.float().topk(k, dim=1).indices == y[:, None]
                totals += torch.tensor([hit[:, 0].sum().item(), hit.any(dim=1).sum().item(),
                                        F.cross_entropy(out.float(), y, reduction="sum").item(), y.numel()],
                                       dtype=torch.float64)
        model.train()
        _sum(totals, dist, device)
        n = max(1.0, totals[3].item())
        return {"top1": 100.0 * totals[0].item() / n, "top5": 100.0 * totals[1].item() / n,
                "loss": totals[2].item() / n, "samples": int(totals[3].item())}

    @staticmethod
    def show(ev):
        extra = ev.get("extra")
        return "top-1 %.2f%%  top-5 %.2f%%" % (ev["top1"], ev["top5"]) + (
            "  (--eval-data top-1 %.2f%%  top-5 %.2f%%)" % (extra["top1"], extra["top5"]) if extra else "")


def _extra_set(folder, classes, transform, tvd):
    """--eval-data: its val/ (or the folder itself) as an ImageFolder whose class folders are
    the training set's, so an index means the same class in both."""
    if not folder:
        return None
    root = os.path.join(folder, "val") if fileio.is_real_dir(os.path.join(folder, "val")) else folder
    if not fileio.is_real_dir(root):
        raise UsageError("--eval-data %s is not a folder of class folders (val/<class>/)" % folder)
    extra = tvd.ImageFolder(root, transform)
    if extra.classes != list(classes):
        missing = sorted(set(classes) - set(extra.classes))
        raise UsageError("--eval-data %s: its classes are not the training set's (%d vs %d%s)" % (
            folder, len(extra.classes), len(classes), "; e.g. no %s" % missing[0] if missing else ""))
    return extra


class Recommendation(object):
    """NCF as MLPerf's NCF reference trains and evaluates it: each user's latest rating held
    out (leave-one-out), the rest implicit positives with 4 random negatives each per epoch
    (uniform items, as the reference: a negative may be a positive), Adam, binary cross-entropy;
    HR@10: the share of users whose held-out item ranks in the top 10 of it and 100 items they
    never rated (the NCF paper's protocol; MLPerf v0.7+ ranks among 999)."""
    metric = "hr10"
    evaluates = ("HR@10 (%): each user's latest rating held out and ranked among 100 items the user never rated "
                 "(the NCF paper's protocol; MLPerf ranks among 999); --target-accuracy is an HR@10")
    NEGATIVES, EVAL_NEGATIVES, K = 4, 100, 10

    def __init__(self, workload, args, dist, device):
        import torch
        self.workload, self.args, self.dist, self.device = workload, args, dist, device
        if args.image_size or args.channels_last:
            raise UsageError("--image-size and --channels-last are for the image classifiers")
        users, items, stamps = data.read_ratings(os.path.join(args.data, "ratings.csv"))
        uid = {u: k for k, u in enumerate(sorted(set(users)))}
        iid = {i: k for k, i in enumerate(sorted(set(items)))}
        args.users, args.items = len(uid), len(iid)
        if args.items <= self.EVAL_NEGATIVES:
            raise UsageError("%s: %d items; HR@10 ranks each held-out item among %d items a user never rated"
                             % (args.data, args.items, self.EVAL_NEGATIVES))
        latest, rated = {}, {}
        for k, (u, i, t) in enumerate(zip(users, items, stamps)):
            u, i = uid[u], iid[i]
            rated.setdefault(u, set()).add(i)
            if u not in latest or t >= latest[u][1]:
                latest[u] = (k, t)
        held = set(k for k, _ in latest.values())
        held = set(k for k in held if len(rated[uid[users[k]]]) > 1)   # a user's only rating stays in train
        train_u, train_i, self.eval_u, self.eval_i = [], [], [], []
        for k, (u, i) in enumerate(zip(users, items)):
            (self.eval_u if k in held else train_u).append(uid[u])
            (self.eval_i if k in held else train_i).append(iid[i])
        self.train_u, self.train_i = torch.tensor(train_u), torch.tensor(train_i)
        per_batch = args.batch_size // (1 + self.NEGATIVES)
        if per_batch < 1 or len(train_u) < per_batch * dist.world_size:
            raise UsageError("%s: %d training ratings, fewer than one batch of %d (a positive and %d negatives "
                             "each)" % (args.data, len(train_u), args.batch_size, self.NEGATIVES))
        # the evaluation candidates, fixed for the run: the held-out item, then 100 never rated
        g = random.Random(args.seed)
        cands = []
        for u, i in zip(self.eval_u, self.eval_i):
            seen, row = rated[u], [i]
            while len(row) <= self.EVAL_NEGATIVES:
                j = g.randrange(args.items)
                if j not in seen:
                    row.append(j)
            cands.append(row)
        self.cands = torch.tensor(cands, dtype=torch.long).view(len(cands), 1 + self.EVAL_NEGATIVES)
        self.base_lr = args.lr if args.lr is not None else workload.lr
        self.facts = {"users": args.users, "items": args.items, "train_ratings": len(train_u),
                      "held_out": len(self.eval_u), "negatives": self.NEGATIVES,
                      "eval_negatives": self.EVAL_NEGATIVES}
        self.intro = "%d users, %d items, %d ratings (%d held out)" % (args.users, args.items, len(users),
                                                                      len(self.eval_u))

    def lr_at(self, epoch):
        return self.base_lr

    def steps(self):
        return (len(self.train_u) // self.dist.world_size) // (self.args.batch_size // (1 + self.NEGATIVES))

    def optimizer(self, model):
        import torch
        self.schedule = "Adam at lr %g, no schedule (MLPerf NCF reference)" % self.base_lr
        return torch.optim.Adam(model.parameters(), lr=self.base_lr)

    def batches(self, epoch, start):
        import torch
        a, dist = self.args, self.dist
        per = a.batch_size // (1 + self.NEGATIVES)
        idx = torch.tensor(order(len(self.train_u), a.seed, epoch, dist.rank, dist.world_size, per),
                           dtype=torch.long)
        steps = len(idx) // per

        def gen():
            for s in range(start, steps):
                pick = idx[s * per:(s + 1) * per]
                g = torch.Generator()
                g.manual_seed(((a.seed * 1000003 + epoch) * 1000003 + s) % (2**63))
                neg = torch.randint(0, a.items, (per * self.NEGATIVES,), generator=g)
                u = torch.cat([self.train_u[pick], self.train_u[pick].repeat_interleave(self.NEGATIVES)])
                i = torch.cat([self.train_i[pick], neg])
                y = torch.cat([torch.ones(per), torch.zeros(per * self.NEGATIVES)])
                yield u, i, y
        return steps, gen()

    def loss(self, model, batch):
        import torch.nn.functional as F
        u, i, y = (t.to(self.device, non_blocking=True) for t in batch)
        return F.binary_cross_entropy_with_logits(model(u, i).float(), y), u.shape[0]

    def evaluate(self, model, amp):
        """HR@10 (%) over the held-out ratings (every rank's share, summed): a hit when fewer
        than 10 of the 100 negatives score above the held-out item."""
        import torch
        from . import compat
        dist, device = self.dist, self.device
        mine = list(range(dist.rank, len(self.eval_u), dist.world_size))
        totals = torch.zeros(2, dtype=torch.float64)
        users = torch.tensor(self.eval_u, dtype=torch.long)
        ticker = _eval_ticker((len(mine) + 1023) // 1024, dist)
        model.eval()
        with torch.no_grad():
            for c in range(0, len(mine), 1024):
                ticker.tick(c // 1024)
                rows = torch.tensor(mine[c:c + 1024], dtype=torch.long)
                cand = self.cands[rows].to(device)
                u = users[rows].to(device)[:, None].expand_as(cand)
                with compat.autocast(device, amp):
                    scores = model(u.reshape(-1), cand.reshape(-1)).float().view(cand.shape)
                above = (scores[:, 1:] > scores[:, :1]).sum(dim=1)
                totals += torch.tensor([(above < self.K).sum().item(), len(rows)], dtype=torch.float64)
        model.train()
        _sum(totals, dist, device)
        n = max(1.0, totals[1].item())
        return {"hr10": 100.0 * totals[0].item() / n, "samples": int(totals[1].item())}

    @staticmethod
    def show(ev):
        return "HR@10 %.2f%%" % ev["hr10"]


def _sum(totals, dist, device):
    """Every rank's totals summed, on the device the backend reduces on (NCCL: the GPU)."""
    if dist.enabled:
        import torch.distributed as tdist
        on = totals.to(device)
        tdist.all_reduce(on)
        totals.copy_(on.cpu())


class Poly(object):
    """MLPerf ResNet's schedule, per step: linear warmup to the base lr over --warmup-epochs, then
    polynomial decay (power 2) to END_LR at the last step of --epochs."""
    END_LR, POWER = 0.0001, 2

    def __init__(self, base_lr, args, steps_per_epoch):
        self.base_lr, self.steps_per_epoch = base_lr, max(1, steps_per_epoch)
        self.warmup = int(round(args.warmup_epochs * self.steps_per_epoch))
        self.decay_steps = max(1, args.epochs * self.steps_per_epoch - self.warmup)

    def lr(self, step):
        if step < self.warmup:
            return self.base_lr * (step + 1) / self.warmup
        left = max(0.0, 1.0 - float(step - self.warmup) / self.decay_steps)
        return (self.base_lr - self.END_LR) * left ** self.POWER + self.END_LR

    def mlperf_keys(self, args):
        """The schedule under closed_resnet_sgd.yaml's names."""
        return [("opt_learning_rate_warmup_epochs", args.warmup_epochs), ("sgd_opt_end_learning_rate", self.END_LR),
                ("sgd_opt_learning_rate_decay_poly_power", self.POWER),
                ("sgd_opt_learning_rate_decay_steps", self.decay_steps)]


def step_lr(task, opt, epoch, step, steps):
    """The lr for this step where the schedule changes it per step (poly); else nothing (the
    epoch's lr was set before its first step)."""
    poly = getattr(task, "poly", None)
    if poly is not None:
        lr = poly.lr(epoch * poly.steps_per_epoch + step)
        for group in opt.param_groups:
            group["lr"] = lr


TASKS = {"vision": Classification, "recsys": Recommendation}   # keyed by the workload's module


def for_workload(name):
    """The task class that trains `name`, or None."""
    from . import WORKLOADS
    return TASKS.get(WORKLOADS[name].module)


def evaluation(name):
    """What `dnnbench train NAME` evaluates (shown by `dnnbench workloads NAME`), or None where
    it does not train NAME (yet). Importable without PyTorch, as the host needs it."""
    task = for_workload(name)
    return task.evaluates if task is not None else None
