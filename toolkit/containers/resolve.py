"""Which image a run uses: `--image`, else `--base` (built first when missing, if allowed),
else the most recently built dnnbench image. Returns its facts from its own labels."""
from __future__ import annotations

import json
import platform
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dnnbench.containers import catalog, recipes
from dnnbench.console import warn
from dnnbench.errors import DnnbenchError


@dataclass
class RunImage:
    ref: str | None       # docker tag or .sif path; None on the host runtime
    base: str | None
    python: str           # interpreter inside
    accelerator: str      # nvidia | amd | none
    entrypoint: list = field(default_factory=list)   # the base's own, run in front of the workload
    arch: str | None = None


def _entrypoint(label: str | None) -> list:
    """The base's entrypoint from its label: a JSON list of strings ([] when absent or unreadable)."""
    try:
        value = json.loads(label or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) and all(isinstance(w, str) and w for w in value) else []


def _facts(ref: str, labels: dict) -> RunImage:
    return RunImage(ref=ref, base=labels.get(recipes.LABEL_BASE),
                    python=labels.get(recipes.LABEL_PYTHON) or "python3",
                    accelerator=labels.get(recipes.LABEL_ACCELERATOR) or "nvidia",
                    entrypoint=_entrypoint(labels.get(recipes.LABEL_ENTRYPOINT)),
                    arch=catalog.normalize_arch(labels.get(recipes.LABEL_ARCH)))


def check_arch(img: RunImage, engine_arch: str | None, engine: str, emulate: str) -> RunImage:
    """Refuse an image of another architecture than the engine's, naming the ways out."""
    if img.arch and engine_arch and img.arch != engine_arch:
        raise DnnbenchError(f"{img.ref} is a {img.arch} image but {engine} runs {engine_arch}: run it on a "
                            f"{img.arch} host, or emulate it (register qemu-{img.arch} with binfmt_misc) {emulate}")
    return img


def _docker_checked(img: RunImage) -> RunImage:
    from dnnbench.containers.build import engine_arch_docker
    return check_arch(img, engine_arch_docker(), "this Docker engine",
                      f"and add --platform {catalog.platform_of(img.arch or '')} to the line "
                      f"`dnnbench run --dry-run` prints")


def _sif_checked(img: RunImage) -> RunImage:
    return check_arch(img, catalog.normalize_arch(platform.machine()), "this host",
                      "and run the line `dnnbench run --dry-run` prints")


def planned(image: str | None, base: str | None, runtime: str | None = None) -> RunImage:
    """For --dry-run, without building or running: what the catalog knows of the base (an
    uncatalogued NGC tag: the nearest release's facts, with `render`'s warning), or the image a
    real run would take (the newest dnnbench image, when the engine answers), so that the line
    printed can be pasted. An engine's own `planned` puts its stand-in first (docker: its newest
    image); runtime is not read (kept for callers)."""
    if base:
        known, notes = catalog.resolve(base)
        for note in notes:
            warn(note)
        return RunImage(ref=image or known.tag, base=base, python=known.python_bin, accelerator=known.accelerator,
                        entrypoint=list(known.entrypoint or ()), arch=known.arch)
    if image:
        return RunImage(ref=image, base=None, python="python3", accelerator="nvidia")
    return RunImage(ref="<most recent dnnbench image>", base=None, python="python3", accelerator="nvidia")


def newest_docker() -> RunImage | None:
    """The newest dnnbench image of the Docker engine, for a dry run (None, said once, when the
    engine does not answer)."""
    from dnnbench.containers.engines import docker
    try:
        docker.client()
        latest = docker.latest_image(recipes.LABEL_BASE)
    except DnnbenchError as exc:
        latest = None
        warn(f"the newest dnnbench image could not be looked up ({exc}): the line names a placeholder")
    return _facts(latest["tags"][0], latest["labels"]) if latest is not None else None


def _may_build(what: str, build: bool | None) -> bool:
    if build is not None:
        return build
    if sys.stdin.isatty() and sys.stderr.isatty():
        import typer
        return typer.confirm(f"{what} does not exist yet. Build it now?", default=True, err=True)
    return False


def resolve_docker(image: str | None, base: str | None, build: bool | None) -> RunImage:
    from dnnbench.containers.engines import docker

    if image:
        labels = docker.image_labels(image)
        if labels is None:
            raise DnnbenchError(f"image {image} is not on this machine (`docker images` lists what is; "
                                f"`dnnbench build --base ...` makes one)")
        return _docker_checked(_facts(image, labels))
    if base:
        from dnnbench.containers.build import docker_build, resolve_base
        resolved = resolve_base(base)
        labels = docker.image_labels(resolved.tag)
        if labels is None:
            if not _may_build(f"image {resolved.tag}", build):
                raise DnnbenchError(f"image {resolved.tag} for base {base} is not built: pass --build, "
                                    f"or run `dnnbench build --base {base}` first")
            docker_build(resolved)
            labels = docker.image_labels(resolved.tag) or {}
        return _docker_checked(_facts(resolved.tag, labels))
    latest = docker.latest_image(recipes.LABEL_BASE)
    if latest is None:
        raise DnnbenchError("no dnnbench image on this machine: `dnnbench build --base cpu` (or ngc-YY.MM) "
                            "makes one, or pass --image / --base")
    return _docker_checked(_facts(latest["tags"][0], latest["labels"]))


def resolve_sif(image: str | None, base: str | None, build: bool | None) -> RunImage:
    from dnnbench.containers.engines import apptainer

    if image:
        if not Path(image).expanduser().exists():
            raise DnnbenchError(f"no such .sif: {image} (`dnnbench build --format singularity` or "
                                f"`dnnbench pull` makes one)")
        sif = apptainer.regular_sif(image)
        return _sif_checked(_facts(os.path.realpath(sif), apptainer.labels(sif)))
    if base:
        from dnnbench.containers.build import sif_path, resolve_base, singularity_build
        resolved = resolve_base(base)
        sif = sif_path(None, resolved)
        if not sif.is_file():
            if not _may_build(str(sif), build):
                raise DnnbenchError(f"{sif} for base {base} is not built: pass --build, or run "
                                    f"`dnnbench build --base {base} --format singularity` first")
            singularity_build(resolved, output=None, from_docker=True, tag=None, no_cache=False,
                              build_args={}, log_dir=Path("results/build-logs"))
        return _sif_checked(_facts(os.path.realpath(apptainer.regular_sif(sif)), apptainer.labels(sif)))
    found = sorted((p for p in Path(".").glob("dnnbench_*.sif") if p.is_file()), key=lambda p: p.stat().st_mtime,
                   reverse=True)
    if not found:
        raise DnnbenchError("no dnnbench_*.sif here: pass --image FILE.sif or --base B --build")
    return _sif_checked(_facts(os.path.realpath(apptainer.regular_sif(found[0])), apptainer.labels(found[0])))


def host() -> RunImage:
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        raise DnnbenchError("--runtime host needs PyTorch in this Python: pip install 'dnnbench[torch]' "
                            "(or use --runtime docker|singularity)")
    return RunImage(ref=None, base=None, python=sys.executable, accelerator="nvidia")
