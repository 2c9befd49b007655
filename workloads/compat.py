"""Feature detection for old PyTorch/torchvision (NGC 21.07 = PyTorch 1.10, PowerAI older)."""
import contextlib
import inspect


def autocast(device, dtype):
    """An autocast context for `dtype` ("fp16"/"bf16") or a no-op context (None)."""
    import torch

    if dtype is None:
        return contextlib.nullcontext() if hasattr(contextlib, "nullcontext") else contextlib.suppress()
    torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    if hasattr(torch, "autocast"):  # 1.10+
        return torch.autocast(device_type=device, dtype=torch_dtype)
    if device == "cuda" and dtype == "fp16" and hasattr(torch.cuda, "amp"):  # 1.6 - 1.9
        return torch.cuda.amp.autocast()
    raise RuntimeError("this PyTorch (%s) has no autocast for %s on %s" % (torch.__version__, dtype, device))


def grad_scaler(device, dtype):
    """A GradScaler for fp16 on CUDA; None otherwise (bf16 needs no loss scaling)."""
    import torch

    if dtype != "fp16" or device != "cuda":
        return None
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        try:
            return amp.GradScaler("cuda")
        except TypeError:
            pass
    return torch.cuda.amp.GradScaler()


def has_compile():
    import torch
    return hasattr(torch, "compile")


def optimizer_kwargs(cls, device, fused):
    """fused=True where this optimizer supports it on this device, else foreach where known."""
    params = inspect.signature(cls.__init__).parameters
    if fused and device == "cuda" and "fused" in params:
        return {"fused": True}
    if "foreach" in params and device == "cuda":
        return {"foreach": True}
    return {}


def call_model(ctor, **kwargs):
    """Build a torchvision model with no pretrained weights in any torchvision version.

    New API: weights=None, weights_backbone=None. Old API: pretrained=False,
    pretrained_backbone=False. Never downloads.
    """
    params = inspect.signature(ctor).parameters
    if "weights" in params:
        kwargs.setdefault("weights", None)
        if "weights_backbone" in params:
            kwargs.setdefault("weights_backbone", None)
    else:
        kwargs.setdefault("pretrained", False)
        if "pretrained_backbone" in params:
            kwargs.setdefault("pretrained_backbone", False)
    return ctor(**kwargs)


def channels_last():
    import torch
    return getattr(torch, "channels_last", None)
