"""The one place that knows two image names are one image: two tags (or a tag and an id) whose
engine reports the same digest (docker: the image id; a .sif: its SHA-256) hold the same bytes,
so measuring them against each other can only find noise. compare-images, bisect and watch ask
here before they run anything: the same image is said ("the same image") and measured once.
Names whose digest cannot be read (not pulled or built yet, no engine) are never called the same."""
from __future__ import annotations


def digest(runtime: str, ref: str | None) -> str | None:
    """The image's digest as the engine reports it now, or None (unknown: not the same as anything)."""
    from dnnbench.containers.engines import lookup
    engine = lookup(runtime)
    if engine is None or not ref:
        return None
    try:
        found = engine.digest(ref) or {}
    except Exception:  # noqa: BLE001 - an engine that cannot say leaves the images to be measured
        return None
    value = found.get("id") or found.get("sha256")
    return str(value) if value else None


def firsts(runtime: str, refs: list[str]) -> dict[int, int]:
    """For each image that is the same as an earlier one in `refs`: its index -> that earlier
    image's index (the first of its digest). Images not listed here are measured."""
    seen: dict[str, int] = {}
    same: dict[int, int] = {}
    for i, ref in enumerate(refs):
        d = digest(runtime, ref)
        if d is None:
            continue
        if d in seen:
            same[i] = seen[d]
        else:
            seen[d] = i
    return same


def said(a: str, b: str, runtime: str) -> str:
    """The line that says two names are one image."""
    d = digest(runtime, b) or ""
    short = d.split(":", 1)[-1][:12]
    return f"{b} is the same image as {a} ({short}): nothing to measure between them"
