"""Sequence workloads: Transformer base translation, an LSTM word language model (Zaremba medium)
and BERT-base pre-training. Tensors are (sequence, batch) so old PyTorch (no batch_first) runs them."""
import os

from ..workload import Workload


def _module():
    import torch.nn as nn
    return nn


class Translation(Workload):
    """Transformer base (Vaswani et al. 2017; fairseq transformer_wmt_en_de): d_model 512, 6 + 6
    post-LN layers, 8 heads, FFN 2048, sinusoidal positions, one embedding table shared by source,
    target and the output projection (no output bias), over the paper's joint BPE vocab of 37000:
    63,082,496 parameters."""

    name = "transformer"
    description = "Transformer base translation model (shared embeddings), synthetic parallel batches"
    unit = "tokens"
    default_batch_size = 64
    optimizer = "adam"
    lr = 1e-4
    label_smoothing = 0.1

    def add_args(self, parser):
        parser.add_argument("--seq-len", type=int, default=64)
        parser.add_argument("--vocab", type=int, default=37000, help="joint source/target BPE vocabulary")
        parser.add_argument("--d-model", type=int, default=512)
        parser.add_argument("--layers", type=int, default=6)
        parser.add_argument("--heads", type=int, default=8)
        parser.add_argument("--ffn", type=int, default=2048)

    def build(self, args):
        nn = _module()
        wl = self
        d = args.d_model

        class Seq2Seq(nn.Module):
            def __init__(self):
                super(Seq2Seq, self).__init__()
                self.embed = nn.Embedding(args.vocab, d)
                nn.init.normal_(self.embed.weight, 0.0, d ** -0.5)   # as fairseq: the table is also the output
                self.register_buffer("pos", _sinusoids(args.seq_len + 1, d))
                self.drop = nn.Dropout(0.1)
                self.encoder = _encoder(nn, d, args.heads, args.ffn, args.layers, "relu", 1e-5)
                dec = nn.TransformerDecoderLayer(d, args.heads, args.ffn, 0.1,
                                                 **_layer_kwargs(nn.TransformerDecoderLayer, "relu", 1e-5))
                self.decoder = _stack(nn.TransformerDecoder, dec, args.layers)
                self.scale = float(d) ** 0.5

            def embed_at(self, tokens):
                return self.drop(self.embed(tokens) * self.scale + self.pos[:tokens.shape[0]].unsqueeze(1))

            def forward(self, src, tgt):
                import torch.nn.functional as F
                memory = self.encoder(self.embed_at(src))
                h = self.decoder(self.embed_at(tgt), memory, tgt_mask=wl.causal_mask(tgt.shape[0], src.device))
                return F.linear(h, self.embed.weight)
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
        src, tgt = batch
        logits = model(src, tgt[:-1])
        return _smoothed_cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tgt[1:].reshape(-1),
                                       self.label_smoothing)


def _sinusoids(n, d):
    """The paper's fixed positional encodings, (n, d): sin on even, cos on odd channels."""
    import math
    import torch
    pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table


def _smoothed_cross_entropy(logits, target, eps):
    """Label-smoothed cross entropy; by hand where F.cross_entropy has no label_smoothing (< 1.10)."""
    import torch.nn.functional as F
    try:
        return F.cross_entropy(logits, target, label_smoothing=eps)
    except TypeError:
        logp = F.log_softmax(logits, -1)
        nll = -logp.gather(1, target.unsqueeze(1)).squeeze(1)
        return ((1.0 - eps) * nll - eps * logp.mean(-1)).mean()


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
        from .. import fileio
        with fileio.open_input(path) as fh:   # a FIFO or device is refused, not waited on
            words = fh.read().decode("utf-8", "replace").split()
        common = [w for w, _ in collections.Counter(words).most_common(vocab - 1)]
        ids = dict((w, i + 1) for i, w in enumerate(common))  # 0 = unknown
        self.tokens = torch.tensor([ids.get(w, 0) for w in words], dtype=torch.int64)
        self.length = length

    def __len__(self):
        return max(0, (len(self.tokens) - 1) // self.length)

    def __getitem__(self, i):
        return (self.tokens[i * self.length:(i + 1) * self.length],)


class BertMLM(Workload):
    """BERT-base pre-training, built to match Hugging Face's BertForPreTraining (bert-base-uncased
    config): 110,106,428 parameters. Word, position (512) and token-type (2) embeddings with
    LayerNorm; 12 post-LN encoder layers; a pooler (dense + tanh) feeding the next-sentence head;
    the MLM head (dense + GELU + LayerNorm) decodes through the word embeddings plus its own bias."""

    name = "bert"
    description = "BERT-base pre-training (MLM + next-sentence heads, tied decoder), synthetic sequences"
    unit = "sequences"
    default_batch_size = 32
    optimizer = "adam"
    lr = 1e-4
    max_positions = 512
    type_vocab = 2

    def add_args(self, parser):
        parser.add_argument("--seq-len", type=int, default=128, help="at most 512")
        parser.add_argument("--vocab", type=int, default=30522)
        parser.add_argument("--d-model", type=int, default=768)
        parser.add_argument("--layers", type=int, default=12)
        parser.add_argument("--heads", type=int, default=12)
        parser.add_argument("--ffn", type=int, default=3072, help="intermediate size")

    def build(self, args):
        from ..harness import UsageError
        if not 2 <= args.seq_len <= self.max_positions:
            raise UsageError("--seq-len must be 2 to %d (BERT's position table)" % self.max_positions)
        nn = _module()
        d, vocab, positions, types = args.d_model, args.vocab, self.max_positions, self.type_vocab

        class Bert(nn.Module):
            def __init__(self):
                import torch
                super(Bert, self).__init__()
                self.word = nn.Embedding(vocab, d)
                self.pos = nn.Embedding(positions, d)
                self.types = nn.Embedding(types, d)
                self.embed_norm = nn.LayerNorm(d, eps=1e-12)
                self.drop = nn.Dropout(0.1)
                self.encoder = _encoder(nn, d, args.heads, args.ffn, args.layers, "gelu", 1e-12)
                self.pooler = nn.Linear(d, d)
                self.nsp = nn.Linear(d, 2)
                self.transform = nn.Linear(d, d)
                self.transform_norm = nn.LayerNorm(d, eps=1e-12)
                self.decoder_bias = nn.Parameter(torch.zeros(vocab))
                for table in (self.word, self.pos, self.types):   # BERT's initializer_range; N(0, 1) tables
                    nn.init.normal_(table.weight, 0.0, 0.02)      # would start the tied decoder at a huge loss

            def forward(self, x, token_types):
                import torch
                import torch.nn.functional as F
                pos = torch.arange(x.shape[0], device=x.device).unsqueeze(1)
                h = self.drop(self.embed_norm(self.word(x) + self.pos(pos) + self.types(token_types)))
                h = self.encoder(h)
                pooled = torch.tanh(self.pooler(h[0]))           # the [CLS] position
                t = self.transform_norm(F.gelu(self.transform(h)))
                return F.linear(t, self.word.weight, self.decoder_bias), self.nsp(pooled)
        return Bert()

    def synthetic_batch(self, args, device):
        import torch
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        tokens = torch.randint(5, args.vocab, (args.seq_len, args.batch_size), generator=g)
        masked = torch.rand(tokens.shape, generator=g) < 0.15
        labels = torch.where(masked, tokens, torch.full_like(tokens, -100))
        inputs = torch.where(masked, torch.full_like(tokens, 4), tokens)  # 4 = [MASK]
        token_types = torch.zeros_like(tokens)
        token_types[args.seq_len // 2:] = 1                                # sentence B
        next_sentence = torch.randint(0, 2, (args.batch_size,), generator=g)
        return inputs.to(device), token_types.to(device), labels.to(device), next_sentence.to(device)

    def items(self, batch):
        return int(batch[0].shape[1])

    def loss(self, model, batch):
        import torch.nn.functional as F
        inputs, token_types, labels, next_sentence = batch
        logits, nsp = model(inputs, token_types)
        mlm = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100)
        return mlm + F.cross_entropy(nsp.float(), next_sentence)


def _layer_kwargs(cls, activation, eps):
    """activation and layer_norm_eps where this PyTorch's layer takes them (eps: 1.9+)."""
    import inspect
    params = inspect.signature(cls.__init__).parameters
    kwargs = {"activation": activation}
    if "layer_norm_eps" in params:
        kwargs["layer_norm_eps"] = eps
    return kwargs


def _stack(cls, layer, n):
    """cls(layer, n) without a final norm (post-LN stacks have none) and without the nested-tensor
    fast path, which only warns for GELU layers and never applies in training."""
    import inspect
    if "enable_nested_tensor" in inspect.signature(cls.__init__).parameters:
        return cls(layer, n, enable_nested_tensor=False)
    return cls(layer, n)


def _encoder(nn, d, heads, ffn, layers, activation, eps):
    layer = nn.TransformerEncoderLayer(d, heads, ffn, 0.1, **_layer_kwargs(nn.TransformerEncoderLayer, activation, eps))
    return _stack(nn.TransformerEncoder, layer, layers)
