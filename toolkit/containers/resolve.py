"""Which image a run uses, one rule for every command (run, train, suite, slurm, reproduce,
compare-images): `--image`, else `--base` (built first when missing, if allowed), else the one
dnnbench image on this machine (docker) or the one `dnnbench_*.sif` here (Apptainer). With no
name and several candidates nothing is guessed: the run is refused with the candidates listed,
since the newest image may be anyone's. Returns its facts from its own labels, and why it was
chosen (`RunImage.why`, said in the run's header)."""
from __future__ import annotations

import json
import platform
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dnnbench.containers import catalog, recipes
from dnnbench.containers.engines.common import HOST_WHY, ONLY_IMAGE, ONLY_SIF, why_chosen
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
    why: str = ""         # how it was chosen, in words: "--image", "--base cpu", "the only dnnbench image here"


def _entrypoint(label: str | None) -> list:
    """The base's entrypoint from its label: a JSON list of strings ([] when absent or unreadable)."""
    try:
        value = json.loads(label or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) and all(isinstance(w, str) and w for w in value) else []


def _facts(ref: str, labels: dict, why: str = "") -> RunImage:
    return RunImage(why=why, ref=ref, base=labels.get(recipes.LABEL_BASE),
                    python=labels.get(recipes.LABEL_PYTHON) or "python3",
                    accelerator=labels.get(recipes.LABEL_ACCELERATOR) or "nvidia",
                    entrypoint=_entrypoint(labels.get(recipes.LABEL_ENTRYPOINT)),
                    arch=catalog.normalize_arch(labels.get(recipes.LABEL_ARCH)))


def _only(candidates: list[str], what: str, hint: str) -> str:
    """The one candidate, or the one-line refusal that lists them all."""
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise DnnbenchError(f"no {what} here: {hint}")
    shown = ", ".join(candidates)
    raise DnnbenchError(f"{len(candidates)} {what}s here and none named, so none is guessed: pass --image or "
                        f"--base (candidates: {shown})")


def only_docker_image(none_ok: bool = False) -> dict | None:
    """The one dnnbench image the docker engine holds (its tags and labels), or the refusal
    (None where there is none and `none_ok`)."""
    from dnnbench.containers.engines import docker
    found = {i["tags"][0]: i for i in docker.list_images(recipes.LABEL_BASE) if i["tags"]}
    if not found and none_ok:
        return None
    tag = _only(sorted(found), "dnnbench image",
                "`dnnbench build --base cpu` (or ngc-YY.MM) makes one, or pass --image / --base")
    return found[tag]


def only_sif(none_ok: bool = False) -> Path | None:
    found = sorted(str(p) for p in Path(".").glob("dnnbench_*.sif") if p.is_file())
    if not found and none_ok:
        return None
    return Path(_only(found, "dnnbench_*.sif", "pass --image FILE.sif or --base B --build"))


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


def planned(image: str | None, base: str | None, why: str = "") -> RunImage:
    """For --dry-run, without building or running: what the catalog knows of the base (an
    uncatalogued NGC tag: the nearest release's facts, with `render`'s warning), the image named,
    or a placeholder; an engine's own `planned` puts the image a real run would take first
    (`planned_docker`, `planned_sif`), so that the line printed can be pasted."""
    if base:
        known, notes = catalog.resolve(base)
        for note in notes:
            warn(note)
        return RunImage(ref=image or known.tag, base=base, python=known.python_bin, accelerator=known.accelerator,
                        entrypoint=list(known.entrypoint or ()), arch=known.arch, why=why)
    if image:
        return RunImage(ref=image, base=None, python="python3", accelerator="nvidia", why=why)
    return RunImage(ref="<the dnnbench image>", base=None, python="python3", accelerator="nvidia", why=why)


def planned_docker() -> RunImage | None:
    """The one dnnbench image of the Docker engine, for a dry run, by the rule a real run follows
    (several are refused here too); None, said once, when the engine does not answer."""
    from dnnbench.containers.engines import docker
    try:
        docker.client()
    except DnnbenchError as exc:
        warn(f"the dnnbench images could not be looked up ({exc}): the line names a placeholder")
        return None
    only = only_docker_image(none_ok=True)
    return _facts(only["tags"][0], only["labels"], ONLY_IMAGE) if only is not None else None


def planned_sif() -> RunImage | None:
    """The one dnnbench_*.sif here, for a dry run (several are refused)."""
    sif = only_sif(none_ok=True)
    return _facts(os.path.realpath(sif), {}, ONLY_SIF) if sif is not None else None


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
        return _docker_checked(_facts(image, labels, why_chosen(image, None, ONLY_IMAGE)))
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
        return _docker_checked(_facts(resolved.tag, labels, why_chosen(None, base, ONLY_IMAGE)))
    only = only_docker_image()
    assert only is not None
    return _docker_checked(_facts(only["tags"][0], only["labels"], ONLY_IMAGE))


def resolve_sif(image: str | None, base: str | None, build: bool | None) -> RunImage:
    from dnnbench.containers.engines import apptainer

    if image:
        if not Path(image).expanduser().exists():
            raise DnnbenchError(f"no such .sif: {image} (`dnnbench build --format singularity` or "
                                f"`dnnbench pull` makes one)")
        sif = apptainer.regular_sif(image)
        return _sif_checked(_facts(os.path.realpath(sif), apptainer.labels(sif), why_chosen(image, None, ONLY_SIF)))
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
        return _sif_checked(_facts(os.path.realpath(apptainer.regular_sif(sif)), apptainer.labels(sif),
                                   why_chosen(None, base, ONLY_SIF)))
    only = only_sif()
    assert only is not None
    return _sif_checked(_facts(os.path.realpath(apptainer.regular_sif(only)), apptainer.labels(only), ONLY_SIF))


def host() -> RunImage:
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        raise DnnbenchError("--runtime host needs PyTorch in this Python: pip install 'dnnbench[torch]' "
                            "(or use --runtime docker|singularity)")
    return RunImage(ref=None, base=None, python=sys.executable, accelerator="nvidia",
                    why=HOST_WHY)
