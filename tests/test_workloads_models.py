"""Every workload is the model its name says: its parameter count against the published reference,
and the facts table (dnnbench.workloads.WORKLOADS) agrees with what the code builds. CPU only, no
forward passes: building the models is all it takes."""
import subprocess
import sys
from pathlib import Path

import pytest

from dnnbench.workloads import WORKLOADS, Spec, harness, load


def _transformer_base(vocab, d=512, ffn=2048, layers=6):
    """Transformer base with one shared embedding/output table, no output bias, no final norms."""
    attn = 4 * (d * d + d)
    ffn_params = d * ffn + ffn + ffn * d + d
    encoder = attn + ffn_params + 2 * 2 * d
    decoder = 2 * attn + ffn_params + 3 * 2 * d
    return vocab * d + layers * (encoder + decoder)


def _lstm_lm(vocab=10000, hidden=650, layers=2):
    """Embedding, LSTM (PyTorch keeps two bias vectors per gate set) and an untied decoder."""
    lstm = layers * (4 * hidden * (hidden + hidden) + 2 * 4 * hidden)
    return vocab * hidden + lstm + hidden * vocab + vocab


def _neumf(users=138493, items=26744, factors=64, sizes=(256, 256, 128, 64)):
    mlp = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
    return (users + items) * (factors + sizes[0] // 2) + mlp + (factors + sizes[-1]) + 1


# name -> (published count, relative tolerance, where it comes from)
PUBLISHED = {
    "resnet50": (25557032, 0, "torchvision resnet50 (ResNet-50 v1.5), 25,557,032"),
    "resnet18": (11689512, 0, "torchvision resnet18, 11,689,512"),
    "inception_v3": (27161264, 0, "torchvision inception_v3 with the aux head, 27,161,264"),
    "vgg16": (138357544, 0, "torchvision vgg16, 138,357,544"),
    "mobilenet_v3": (5483032, 0, "torchvision mobilenet_v3_large, 5,483,032"),
    "vit_b_16": (86567656, 0, "torchvision vit_b_16, 86,567,656"),
    "ssd300": (35641826, 0, "torchvision ssd300_vgg16, 35,641,826"),
    # torchvision publishes 44,401,393 with FrozenBatchNorm; the default build trains BatchNorm's
    # weight and bias too: + 2 x 26,560 ResNet-50 BN channels (see also the --reference-setup test)
    "maskrcnn": (44401393 + 53120, 0, "torchvision maskrcnn_resnet50_fpn, 44,401,393 + trainable BN affine"),
    # Vaswani et al. 2017 Table 3 says 65 M for base; the architecture over a shared 37000-token
    # table counts 63,082,496 (fairseq transformer_wmt_en_de with --share-all-embeddings)
    "transformer": (_transformer_base(37000), 0, "Transformer base, shared embeddings, vocab 37000"),
    "wlm": (_lstm_lm(), 0, "Zaremba et al. 2014 medium: 2 x 650 LSTM, PTB vocab 10000, untied"),
    # Hugging Face BertForPreTraining(bert-base-uncased config): 110,106,428
    # (BertModel incl. pooler 109,482,240 + MLM head 622,650 + NSP head 1,538)
    "bert": (110106428, 0, "HF BertForPreTraining, bert-base-uncased config"),
    "dcgan": (3576704 + 2765568, 0, "pytorch/examples dcgan 64x64: G 3,576,704 + D 2,765,568"),
    "vae": (652824, 0, "pytorch/examples vae 784-400-20"),
    "ncf": (31.8e6, 0.002, "MLPerf v0.5/v0.6 NCF on ml-20m, 31.8 M"),
    "loader": (1, 0, "no model: one dummy parameter"),
}


def _build(name, *argv):
    workload = load(name)
    args = harness.parser_for(workload).parse_args(["--device", "cpu"] + list(argv))
    return workload.build(args)


def _count(model, trainable=False):
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable)


def test_facts_exist_for_every_workload():
    assert set(PUBLISHED) == set(WORKLOADS)
    root = Path(__file__).resolve().parent.parent / "workloads" / "models"
    for name, spec in WORKLOADS.items():
        assert isinstance(spec, Spec), name
        assert (root / (spec.module + ".py")).is_file(), name
        assert spec.unit in ("images", "tokens", "sequences", "samples"), name
        assert spec.data_kind in (None, "imagenet", "coco", "text", "ratings"), name
        assert isinstance(spec.params, int) and spec.params > 0, name
        assert spec.params_m == spec.params / 1e6
        assert len(spec.reference) > 20 and len(spec.differs) > 10, name
        assert spec[2] == spec.data_kind and spec[3] == spec.unit   # old positional readers keep working


def test_facts_agree_with_the_workload_classes():
    for name, spec in WORKLOADS.items():
        workload = load(name)
        assert workload.name == name
        assert workload.unit == spec.unit and workload.data_kind == spec.data_kind, name


def test_facts_import_without_torch():
    code = "import sys, dnnbench.workloads as w; w.WORKLOADS['bert'].params_m; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_parameter_count(name):
    count = _count(_build(name))
    assert count == WORKLOADS[name].params, (name, count)
    published, tolerance, source = PUBLISHED[name]
    assert abs(count - published) <= tolerance * published, (name, count, source)


def test_bert_is_bert_base_with_tied_decoder():
    model = _build("bert")
    tables = [n for n, p in model.named_parameters() if tuple(p.shape) == (30522, 768)]
    assert tables == ["word.weight"]                     # the MLM decoder reuses it
    assert tuple(model.pos.weight.shape) == (512, 768) and tuple(model.types.weight.shape) == (2, 768)
    assert _count(_build("bert", "--seq-len", "64")) == 110106428   # position table independent of --seq-len


def test_transformer_shares_one_table():
    model = _build("transformer")
    tables = [n for n, p in model.named_parameters() if p.shape[0] == 37000]
    assert tables == ["embed.weight"]
    assert _count(_build("transformer", "--seq-len", "16")) == 63082496   # sinusoidal: no position params


def test_maskrcnn_reference_setup_matches_torchvision():
    from torchvision.ops.misc import FrozenBatchNorm2d
    model = _build("maskrcnn", "--reference-setup")
    assert _count(model) == 44401393                      # torchvision's published count
    assert _count(model, trainable=True) == 44178993      # stem and layer1 frozen
    body = model.backbone.body
    assert isinstance(body.bn1, FrozenBatchNorm2d)
    assert not body.conv1.weight.requires_grad and not body.layer1[0].conv1.weight.requires_grad
    assert body.layer2[0].conv1.weight.requires_grad


def test_dcgan_generator_and_discriminator():
    model = _build("dcgan")
    assert (_count(model.G), _count(model.D)) == (3576704, 2765568)


def test_ncf_is_mlperf_size():
    assert _count(_build("ncf")) == _neumf() == 31832577


def test_classifier_defaults_are_the_examples_scripts():
    """The per-step work of pytorch/examples' ImageNet script: weight decay 1e-4, lr 0.1 per 256
    images (0.01 for VGG); other workloads keep their own fixed lr and no weight decay."""
    from dnnbench.workloads import load as get
    assert get("resnet50").default_lr(256) == 0.1 and get("resnet50").weight_decay == 1e-4
    assert get("resnet18").default_lr(64) == 0.025 and get("vgg16").default_lr(256) == 0.01
    assert get("ncf").default_lr(64) == get("ncf").lr and get("ncf").weight_decay == 0.0
