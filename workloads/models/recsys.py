"""Recommendation: Neural Collaborative Filtering (NeuMF) as MLPerf v0.5/v0.6 runs it, MovieLens-20M sized."""
import os

from ..workload import Workload


class NCF(Workload):
    name = "ncf"
    description = "NeuMF (GMF + MLP), implicit feedback with 4 negatives; real data: ratings/ratings.csv"
    unit = "samples"
    default_batch_size = 65536
    data_kind = "ratings"
    optimizer = "adam"
    lr = 1e-3

    def add_args(self, parser):
        parser.add_argument("--users", type=int, default=138493)
        parser.add_argument("--items", type=int, default=26744)
        parser.add_argument("--factors", type=int, default=64, help="GMF embedding size")
        parser.add_argument("--layers", type=int, nargs="+", default=[256, 256, 128, 64],
                            help="MLP sizes; the first is the two MLP embeddings together")

    def build(self, args):
        """MLPerf v0.5/v0.6 NCF (recommendation/pytorch/neumf.py): GMF embeddings of --factors, MLP
        embeddings of layers[0] / 2 each, ReLU MLP layers[0] -> ... -> layers[-1], one logit from
        [GMF, MLP]. With the ml-20m defaults: 31,832,577 parameters."""
        import torch.nn as nn
        f, sizes = args.factors, args.layers

        class NeuMF(nn.Module):
            def __init__(self):
                super(NeuMF, self).__init__()
                self.gu, self.gi = nn.Embedding(args.users, f), nn.Embedding(args.items, f)
                self.mu, self.mi = nn.Embedding(args.users, sizes[0] // 2), nn.Embedding(args.items, sizes[0] // 2)
                mlp = []
                for a, b in zip(sizes[:-1], sizes[1:]):
                    mlp += [nn.Linear(a, b), nn.ReLU()]
                self.mlp = nn.Sequential(*mlp)
                self.out = nn.Linear(f + sizes[-1], 1)

            def forward(self, u, i):
                import torch
                gmf = self.gu(u) * self.gi(i)
                mlp = self.mlp(torch.cat([self.mu(u), self.mi(i)], 1))
                return self.out(torch.cat([gmf, mlp], 1)).view(-1)
        return NeuMF()

    def synthetic_batch(self, args, device):
        import torch
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        n = args.batch_size
        return (torch.randint(0, args.users, (n,), generator=g).to(device),
                torch.randint(0, args.items, (n,), generator=g).to(device),
                (torch.rand(n, generator=g) < 0.2).float().to(device))

    def dataset(self, args):
        return Ratings(os.path.join(args.data, "ratings.csv"), args.users, args.items, args.seed)

    def loss(self, model, batch):
        import torch.nn.functional as F
        return F.binary_cross_entropy_with_logits(model(batch[0], batch[1]).float(), batch[2])


class Ratings(object):
    """MovieLens ratings as implicit positives, each followed by 4 random negatives."""

    def __init__(self, path, users, items, seed, negatives=4):
        import torch
        from ..data import read_ratings
        us, its, _ = read_ratings(path)
        self.users = torch.tensor(us) % users
        self.items = torch.tensor(its) % items
        self.n_items, self.negatives = items, negatives
        self.gen = torch.Generator().manual_seed(seed)

    def __len__(self):
        return len(self.users) * (1 + self.negatives)

    def __getitem__(self, i):
        import torch
        k, r = divmod(i, 1 + self.negatives)
        if r == 0:
            return self.users[k], self.items[k], torch.tensor(1.0)
        return self.users[k], torch.randint(0, self.n_items, (), generator=self.gen), torch.tensor(0.0)
