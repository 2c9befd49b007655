"""Sequence workloads: a Transformer translation model, an LSTM word language model, and a
BERT-style masked-LM encoder. Tensors are (sequence, batch) so old PyTorch (no batch_first) runs them."""
import os

from ..harness import Workload


def _module():
    import torch.nn as nn
    return nn


class Translation(Workload):
    name = "transformer"
    description = "Transformer (base) translation model, synthetic parallel batches"
    unit = "tokens"
    default_batch_size = 64
    optimizer = "adam"
    lr = 1e-4

    def add_args(self, parser):
        parser.add_argument("--seq-len", type=int, default=64)
        parser.add_argument("--vocab", type=int, default=32000)
        parser.add_argument("--d-model", type=int, default=512)
        parser.add_argument("--layers", type=int, default=6)
        parser.add_argument("--heads", type=int, default=8)

    def build(self, args):
        nn = _module()
        wl = self

        class Seq2Seq(nn.Module):
            def __init__(self):
                super(Seq2Seq, self).__init__()
                self.embed = nn.Embedding(args.vocab, args.d_model)
                self.pos = nn.Embedding(args.seq_len, args.d_model)
                self.core = nn.Transformer(d_model=args.d_model, nhead=args.heads, num_encoder_layers=args.layers,
                                           num_decoder_layers=args.layers, dim_feedforward=4 * args.d_model)
                self.out = nn.Linear(args.d_model, args.vocab)

            def forward(self, src, tgt):
                import torch
                pos = torch.arange(src.shape[0], device=src.device).unsqueeze(1)
                mask = wl.causal_mask(tgt.shape[0], src.device)
                h = self.core(self.embed(src) + self.pos(pos), self.embed(tgt) + self.pos(pos[:tgt.shape[0]]), tgt_mask=mask)
                return self.out(h)
        return Seq2Seq()

    @staticmethod
    def causal_mask(n, device):
        import torch
        return torch.triu(torch.full((n, n), float("-inf"), device=device), diagonal=1)

    def synthetic_batch(self, args, device):
        import torch
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        src = torch.randint(0, args.vocab, (args.seq_len, args.batch_size), generator=g)
        tgt = torch.randint(0, args.vocab, (args.seq_len + 1, args.batch_size), generator=g)
        return src.to(device), tgt.to(device)

    def items(self, batch):
        return int(batch[1].shape[0] - 1) * int(batch[1].shape[1])

    def loss(self, model, batch):
        import torch.nn.functional as F
        src, tgt = batch
        logits = model(src, tgt[:-1])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tgt[1:].reshape(-1))


class WordLM(Workload):
    name = "wlm"
    description = "Word language model: 2-layer LSTM (650), truncated BPTT; real data: text/train.txt"
    unit = "tokens"
    default_batch_size = 64
    data_kind = "text"
    lr = 1.0

    def add_args(self, parser):
        parser.add_argument("--bptt", type=int, default=35)
        parser.add_argument("--vocab", type=int, default=10000)
        parser.add_argument("--hidden", type=int, default=650)
        parser.add_argument("--layers", type=int, default=2)

    def build(self, args):
        nn = _module()

        class LSTMModel(nn.Module):
            def __init__(self):
                super(LSTMModel, self).__init__()
                self.embed = nn.Embedding(args.vocab, args.hidden)
                self.rnn = nn.LSTM(args.hidden, args.hidden, args.layers, dropout=0.5)
                self.drop = nn.Dropout(0.5)
                self.out = nn.Linear(args.hidden, args.vocab)

            def forward(self, x):
                h, _ = self.rnn(self.drop(self.embed(x)))
                return self.out(self.drop(h))
        return LSTMModel()

    def synthetic_batch(self, args, device):
        import torch
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        seq = torch.randint(0, args.vocab, (args.batch_size, args.bptt + 1), generator=g)
        return (seq.to(device),)

    def dataset(self, args):
        return TokenChunks(os.path.join(args.data, "train.txt"), args.bptt + 1, args.vocab)

    def items(self, batch):  # batches are (batch, bptt + 1), as the DataLoader stacks them
        return int(batch[0].shape[0]) * int(batch[0].shape[1] - 1)

    def loss(self, model, batch):
        import torch.nn.functional as F
        seq = batch[0].t()
        logits = model(seq[:-1])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), seq[1:].reshape(-1))


class TokenChunks(object):
    """Fixed-length token chunks of a whitespace-tokenized corpus; ids by frequency, capped at vocab."""

    def __init__(self, path, length, vocab):
        import collections
        import torch
        with open(path) as fh:
            words = fh.read().split()
        common = [w for w, _ in collections.Counter(words).most_common(vocab - 1)]
        ids = dict((w, i + 1) for i, w in enumerate(common))  # 0 = unknown
        self.tokens = torch.tensor([ids.get(w, 0) for w in words], dtype=torch.int64)
        self.length = length

    def __len__(self):
        return max(0, (len(self.tokens) - 1) // self.length)

    def __getitem__(self, i):
        return (self.tokens[i * self.length:(i + 1) * self.length],)


class BertMLM(Workload):
    name = "bert"
    description = "BERT-base-style encoder, masked-LM objective, synthetic sequences"
    unit = "sequences"
    default_batch_size = 32
    optimizer = "adam"
    lr = 1e-4

    def add_args(self, parser):
        parser.add_argument("--seq-len", type=int, default=128)
        parser.add_argument("--vocab", type=int, default=30522)
        parser.add_argument("--d-model", type=int, default=768)
        parser.add_argument("--layers", type=int, default=12)
        parser.add_argument("--heads", type=int, default=12)

    def build(self, args):
        nn = _module()

        class Encoder(nn.Module):
            def __init__(self):
                super(Encoder, self).__init__()
                self.embed = nn.Embedding(args.vocab, args.d_model)
                self.pos = nn.Embedding(args.seq_len, args.d_model)
                layer = nn.TransformerEncoderLayer(args.d_model, args.heads, 4 * args.d_model, activation="gelu")
                self.encoder = nn.TransformerEncoder(layer, args.layers)
                self.norm = nn.LayerNorm(args.d_model)
                self.head = nn.Linear(args.d_model, args.vocab)

            def forward(self, x):
                import torch
                pos = torch.arange(x.shape[0], device=x.device).unsqueeze(1)
                return self.head(self.norm(self.encoder(self.embed(x) + self.pos(pos))))
        return Encoder()

    def synthetic_batch(self, args, device):
        import torch
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        tokens = torch.randint(5, args.vocab, (args.seq_len, args.batch_size), generator=g)
        masked = torch.rand(tokens.shape, generator=g) < 0.15
        labels = torch.where(masked, tokens, torch.full_like(tokens, -100))
        inputs = torch.where(masked, torch.full_like(tokens, 4), tokens)  # 4 = [MASK]
        return inputs.to(device), labels.to(device)

    def items(self, batch):
        return int(batch[0].shape[1])

    def loss(self, model, batch):
        import torch.nn.functional as F
        logits = model(batch[0])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), batch[1].reshape(-1), ignore_index=-100)

