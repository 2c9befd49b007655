"""The base catalog: explicit facts about each base image, read from images/*.yaml.

Facts are never guessed from tag strings (hpccm's lesson: nvcr.io tags carry no distro,
PowerAI tags often no arch). The one exception is a well-formed `ngc-YY.MM` missing from the
catalog, which borrows the nearest known release's facts and says so.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from dnnbench.errors import DnnbenchError

REQUIRED = ("image", "arch", "distro", "python", "python_bin", "accelerator", "bootstrap")
ACCELERATORS = ("nvidia", "amd", "none")
ARCHES = ("x86_64", "aarch64", "ppc64le")
# What engines and image configs call an architecture, in the catalog's (uname -m) words.
_ARCH_ALIASES = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64",
                 "ppc64le": "ppc64le", "ppc64el": "ppc64le"}
NGC_TAG = re.compile(r"^ngc-(\d{2})\.(\d{2})$")
# Docker reference grammar, simplified: registry/path:tag[@digest], lower-case path.
IMAGE_REF = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)*"
                       r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$")


@dataclass(frozen=True)
class Base:
    name: str
    family: str
    image: str
    arch: str
    distro: str
    python: str
    python_bin: str
    accelerator: str
    bootstrap: str
    pytorch: str | None = None
    cuda: str | None = None
    rocm: str | None = None
    profilers: tuple[str, ...] = ()
    env: dict = field(default_factory=dict)
    pip: tuple[str, ...] = ()
    pip_index: str | None = None
    apt: tuple[str, ...] = ()
    run: dict = field(default_factory=dict)
    notes: str | None = None
    inferred_from: str | None = None
    # The base image's own ENTRYPOINT, kept in front of every run; () when it has none,
    # None when the catalog does not know it (`dnnbench build` reads it from the image).
    entrypoint: tuple[str, ...] | None = None

    @property
    def tag(self) -> str:
        """The default tag of the image dnnbench builds from this base."""
        return "dnnbench:" + re.sub(r"[^A-Za-z0-9_.-]", "-", self.name)[:120]


def _load_family(text: str, source: str) -> dict[str, Base]:
    import yaml  # lazy: keeps `dnnbench --help` fast

    data = yaml.safe_load(text) or {}
    family = data.get("family")
    if not isinstance(family, str) or not family:
        raise DnnbenchError(f"catalog {source}: no `family:` (the bases' family name)")
    defaults = data.get("defaults") or {}
    out = {}
    for name, entry in (data.get("bases") or {}).items():
        facts = {**defaults, **(entry or {})}
        missing = [k for k in REQUIRED if facts.get(k) in (None, "")]
        if missing:
            raise DnnbenchError(f"catalog {source}: base {name!r} lacks {', '.join(missing)}")
        if facts["accelerator"] not in ACCELERATORS:
            raise DnnbenchError(f"catalog {source}: base {name!r} has unknown accelerator {facts['accelerator']!r}")
        for key in ("profilers", "pip", "apt"):
            facts[key] = tuple(facts.get(key) or ())
        entry = facts.get("entrypoint")
        if entry is not None:
            if not isinstance(entry, list) or not all(isinstance(w, str) and w for w in entry):
                raise DnnbenchError(f"catalog {source}: base {name!r} entrypoint must be a list of strings")
            facts["entrypoint"] = tuple(entry)
        if facts["arch"] not in ARCHES:
            raise DnnbenchError(f"catalog {source}: base {name!r} has unknown arch {facts['arch']!r}")
        facts["python"] = str(facts["python"])
        out[name] = Base(name=name, family=family, **facts)
    return out


@lru_cache(maxsize=None)
def catalog() -> dict[str, Base]:
    """Every base in images/*.yaml, by name."""
    bases: dict[str, Base] = {}
    for item in sorted(resources.files("dnnbench.images").iterdir(), key=lambda p: p.name):
        if item.name.endswith(".yaml"):
            bases.update(_load_family(item.read_text(encoding="utf-8"), item.name))
    return bases


def _ngc_month(name: str) -> int | None:
    m = NGC_TAG.match(name)
    return int(m.group(1)) * 12 + int(m.group(2)) if m else None


def resolve(name: str) -> tuple[Base, list[str]]:
    """The base called `name`, with any warnings about inferred facts.

    Accepts catalog names, well-formed NGC tags not yet catalogued, and `local:IMAGE`.
    """
    name = (name or "").strip()
    bases = catalog()
    if name in bases:
        return bases[name], []
    if name.startswith("local:"):
        image = name[len("local:"):]
        check_image_ref(image)
        # An image the user already has: it must carry Python 3 and PyTorch itself.
        return Base(name=name, family="local", image=image, arch="x86_64", distro="unknown",
                    python="3", python_bin="python3", accelerator="nvidia",
                    bootstrap="docker-daemon", run={"ipc": "host"}), []
    if name.startswith("ngc-"):
        m = NGC_TAG.match(name)
        if not m or not 1 <= int(m.group(2)) <= 12:
            raise DnnbenchError(f"malformed NGC base {name!r}: expected ngc-YY.MM, e.g. ngc-21.07 or ngc-24.10")
        month = int(m.group(1)) * 12 + int(m.group(2))
        known = {n: k for n, k in ((n, _ngc_month(n)) for n in bases) if k is not None}
        nearest = min(known, key=lambda n: (abs(known[n] - month), -known[n]))
        src = bases[nearest]
        yy_mm = name[len("ngc-"):]
        base = Base(**{**src.__dict__, "name": name, "image": f"nvcr.io/nvidia/pytorch:{yy_mm}-py3",
                       "pytorch": None, "cuda": None, "inferred_from": nearest})
        return base, [f"{name} is not in the catalog: distro, Python and profilers are taken from "
                      f"the nearest release {nearest}; PyTorch/CUDA versions are unknown"]
    close = difflib.get_close_matches(name, list(bases), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `dnnbench bases` lists them"
    raise DnnbenchError(f"unknown base {name!r}{hint}")


def normalize_arch(name: str | None) -> str | None:
    """`amd64` (Docker's word) and `x86_64` (uname's) are one architecture; None if unknown."""
    return _ARCH_ALIASES.get((name or "").strip().lower())


def platform_of(arch: str) -> str:
    """The `--platform` value for an architecture, e.g. linux/ppc64le."""
    return "linux/" + {"x86_64": "amd64", "aarch64": "arm64"}.get(arch, arch)


def check_image_ref(image: str) -> str:
    if not IMAGE_REF.match(image or ""):
        raise DnnbenchError(f"not a valid image reference: {image!r}")
    return image
