"""The container side of dnnbench: the harness, the workloads and the result schema.

Importable without PyTorch (the host reads WORKLOADS and the schema); runs on Python 3.7+.
Entry point: `python -m dnnbench.workloads WORKLOAD [options]`.
"""
import collections
import importlib


class Spec(collections.namedtuple("Spec", "module cls data_kind unit reference params differs")):
    """What the host needs to know about a workload, readable by name and without PyTorch.

    module, cls: where the workload lives (workloads/models/<module>.py, class <cls>).
    data_kind: the --data layout ("imagenet", "coco", "text", "ratings") or None (synthetic only).
    unit: what the throughput counts, per second.
    reference: the paper or implementation it follows, its configuration and dataset.
    params: the parameter count of the default build (tests/test_workloads_models.py checks it).
    differs: what it deliberately does differently, and with whose numbers it is not comparable.
    The first four fields keep their old positions, so WORKLOADS[name][2] is still the data kind.
    """
    __slots__ = ()

    @property
    def params_m(self):
        """Parameters in millions."""
        return self.params / 1e6


_IMAGENET = "ImageNet-1k (ILSVRC2012) 224x224"
_CLASSIFIER = ("random init; SGD momentum 0.9, weight decay 1e-4, lr 0.1 x batch/256 (as pytorch/examples), "
               "no schedule; real data: RandomResizedCrop + flip "
               "(no ColorJitter, no label smoothing)")

WORKLOADS = {
    "resnet50": Spec(
        "vision", "ResNet50", "imagenet", "images",
        "He et al. 2016, ResNet-50 v1.5 (stride in the 3x3 conv, as NVIDIA's and MLPerf's): torchvision "
        "resnet50; " + _IMAGENET, 25557032, _CLASSIFIER),
    "resnet18": Spec(
        "vision", "ResNet18", "imagenet", "images",
        "He et al. 2016, ResNet-18: torchvision resnet18; " + _IMAGENET, 11689512, _CLASSIFIER),
    "inception_v3": Spec(
        "vision", "InceptionV3", "imagenet", "images",
        "Szegedy et al. 2016, Inception v3 with the auxiliary head (loss + 0.4 x aux): torchvision "
        "inception_v3; ImageNet-1k 299x299", 27161264, _CLASSIFIER),
    "vgg16": Spec(
        "vision", "VGG16", "imagenet", "images",
        "Simonyan & Zisserman 2015, VGG-16 (configuration D, no BatchNorm): torchvision vgg16; " + _IMAGENET,
        138357544, _CLASSIFIER.replace("lr 0.1 x", "lr 0.01 x")),
    "mobilenet_v3": Spec(
        "vision", "MobileNetV3", "imagenet", "images",
        "Howard et al. 2019, MobileNetV3-Large 1.0: torchvision mobilenet_v3_large; " + _IMAGENET,
        5483032, _CLASSIFIER + "; the paper trains with RMSprop"),
    "vit_b_16": Spec(
        "vision", "ViTB16", "imagenet", "images",
        "Dosovitskiy et al. 2021, ViT-B/16: torchvision vit_b_16; " + _IMAGENET, 86567656,
        _CLASSIFIER + "; the paper pre-trains on ImageNet-21k/JFT with AdamW"),
    "ssd300": Spec(
        "detection", "SSD300", "coco", "images",
        "Liu et al. 2016, SSD300 with a VGG-16 backbone: torchvision ssd300_vgg16; COCO 2017, 300x300, "
        "91 classes", 35641826,
        "NOT MLPerf Training's SSD (a ResNet-34 backbone at 300x300, until RetinaNet replaced it; the "
        "1200x1200 SSD-ResNet34 is MLPerf Inference's): not comparable with MLPerf SSD numbers; random "
        "init (no ImageNet backbone); SGD momentum 0.9 at lr 1e-4, no schedule; real data: images squashed "
        "to a square, no SSD crop/expand augmentation"),
    "maskrcnn": Spec(
        "detection", "MaskRCNN", "coco", "images",
        "He et al. 2017, Mask R-CNN ResNet-50-FPN: torchvision maskrcnn_resnet50_fpn; COCO 2017, 91 classes "
        "(44.40 M with FrozenBatchNorm, as published)", 44454513,
        "default: every layer and BatchNorm trainable (no pretrained backbone), fixed 800x800 inputs, "
        "images squashed to a square: NOT comparable with torchvision's reference or MLPerf Mask R-CNN "
        "numbers (FrozenBatchNorm, stem + layer1 frozen, min side 800 / max 1333, aspect-ratio grouping). "
        "--reference-setup gives their model (FrozenBatchNorm, trainable_backbone_layers=3: 44.40 M, "
        "44.18 M trainable); the input size stays fixed"),
    "transformer": Spec(
        "text", "Translation", None, "tokens",
        "Vaswani et al. 2017, Transformer base (fairseq transformer_wmt_en_de): d_model 512, 6+6 layers, "
        "8 heads, FFN 2048, post-LN, sinusoidal positions, source/target/output embeddings shared over a "
        "joint BPE vocab of 37000 (the paper's WMT'14 En-De); label smoothing 0.1", 63082496,
        "synthetic batches only: fixed length 64, 64 sentences (4096 target tokens) per GPU, not the "
        "paper's ~25000 tokens per step over 8 GPUs batched by length; Adam at a fixed lr, no warmup; the "
        "paper reports 65 M parameters"),
    "wlm": Spec(
        "text", "WordLM", "text", "tokens",
        "Zaremba et al. 2014, medium LSTM LM (pytorch/examples word_language_model): 2 x 650 LSTM, "
        "dropout 0.5, bptt 35, untied embeddings; Penn Treebank (vocab 10000)", 19780400,
        "hidden state NOT carried over between batches (each bptt window starts from zero; same compute "
        "per step) and chunks shuffled: perplexities not comparable with the paper's; batch 64 (paper 20); "
        "SGD with momentum 0.9 at lr 1.0 (the paper: plain SGD, gradients clipped at 5)"),
    "bert": Spec(
        "text", "BertMLM", None, "sequences",
        "Devlin et al. 2019, BERT-base uncased pre-training (= Hugging Face BertForPreTraining): vocab 30522, "
        "768 hidden, 12 layers, 12 heads, FFN 3072, 512 positions, 2 token types, pooler, MLM head tied to "
        "the word embeddings, NSP head", 110106428,
        "synthetic sequences (--seq-len 128, 15% masked, all [MASK]); Adam at a fixed lr, no warmup or "
        "weight decay; MLPerf's BERT is BERT-large with MLM only: not comparable with MLPerf numbers"),
    "dcgan": Spec(
        "generative", "DCGAN", "imagenet", "images",
        "Radford et al. 2016, DCGAN 64x64 (pytorch/examples dcgan): nz 100, ngf = ndf = 64, "
        "G 3.58 M + D 2.77 M; ImageNet/LSUN-style images", 6342272,
        "one step = D and G losses summed into one backward pass (same compute as the alternating updates, "
        "not the same training); Adam betas (0.9, 0.999), the paper's are (0.5, 0.999)"),
    "vae": Spec(
        "generative", "VAE", "imagenet", "images",
        "Kingma & Welling 2014, VAE (pytorch/examples vae): 784-400-20-400-784; MNIST 28x28", 652824,
        "real data: an imagenet-layout folder resized to 28x28 grayscale, not MNIST itself"),
    "ncf": Spec(
        "recsys", "NCF", "ratings", "samples",
        "He et al. 2017, NeuMF as in MLPerf v0.5/v0.6 NCF: GMF 64 factors + MLP 256-256-128-64; "
        "MovieLens-20M (138493 users, 26744 items), 4 negatives per positive", 31832577,
        "benchmark runs: random negatives (may repeat a positive), no evaluation (`dnnbench train ncf` "
        "holds ratings out and evaluates HR@10); Adam at a fixed lr"),
    "loader": Spec(
        "loader", "Loader", "imagenet", "images",
        "no model (one dummy parameter): the ImageNet input pipeline alone (decode, RandomResizedCrop, flip, "
        "DataLoader workers)", 1,
        "measures data loading, not training"),
}


def load(name):
    """The workload object called `name` (imports its module, and so PyTorch)."""
    spec = WORKLOADS[name]
    return getattr(importlib.import_module("%s.models.%s" % (__name__, spec.module)), spec.cls)()
