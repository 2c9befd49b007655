"""`dnnbench render`, `build` and `pull`: from a base to a recipe, an image, a .sif."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import re
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from dnnbench import names
from dnnbench.containers import catalog, recipes
from dnnbench.console import err, escape, info, out, warn
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio



def resolve_base(name: str) -> catalog.Base:
    base, warnings = catalog.resolve(name)
    for w in warnings:
        warn(w)
    return base


def render_command(base_name: str, fmt: str, output: Path | None) -> None:
    base = resolve_base(base_name)
    formats = list(recipes.FORMATS) if fmt == "all" else [fmt]
    for f in formats:
        recipe = recipes.render(base, f)
        if output is None:
            if len(formats) > 1:
                out.print(f"# ---- {recipe.filename} ----", markup=False)
            out.print(recipe.text, markup=False, end="", soft_wrap=True)
        else:
            info(f"wrote {recipes.write(recipe, output)}")


def _copy_code(dest: Path) -> None:
    """The container side: dnnbench/__init__.py and dnnbench/workloads/, as source.

    Copied rather than pip-installed so old base Pythons (3.7, 3.8) run it unchanged.
    """
    import dnnbench
    import dnnbench.workloads as workloads

    pkg = dest / "dnnbench"
    pkg.mkdir(parents=True)
    shutil.copy2(dnnbench.__file__, pkg / "__init__.py")
    shutil.copytree(Path(workloads.__file__).parent, pkg / "workloads",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


@contextmanager
def build_context(recipe: recipes.Recipe, ca: "BuildCA | None" = None):
    """A minimal build context: the recipe, the container-side code and the build's CA, if any."""
    with tempfile.TemporaryDirectory(prefix="dnnbench-ctx-") as tmp:
        ctx = Path(tmp)
        fileio.write_atomic_text(ctx / recipe.filename, recipe.text)
        _copy_code(ctx)
        if ca is not None:
            fileio.write_atomic_bytes(ctx / recipes.CA_FILE, ca.data)
        yield ctx


@dataclasses.dataclass(frozen=True)
class BuildCA:
    """The CA a TLS-inspecting proxy signs with: trusted by the build's downloads only."""
    path: Path
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


CA_MAX = 4 << 20    # a system bundle is ~200 KiB


def build_ca(path: Path | None) -> BuildCA | None:
    """--ca-cert FILE, else DNNBENCH_CA_CERT: a readable PEM file with at least one certificate."""
    if path is None and os.environ.get("DNNBENCH_CA_CERT"):
        path = Path(os.environ["DNNBENCH_CA_CERT"])
    if path is None:
        return None
    try:
        with fileio.open_input(Path(path).expanduser()) as fh:    # never a FIFO or /dev/zero
            data = fh.read(CA_MAX + 1)
    except OSError as exc:
        raise DnnbenchError(f"--ca-cert {path}: {exc.strerror or exc}") from None
    if len(data) > CA_MAX:
        raise DnnbenchError(f"--ca-cert {path}: larger than {CA_MAX >> 20} MiB, not a CA bundle")
    if b"-----BEGIN CERTIFICATE-----" not in data:
        raise DnnbenchError(f"--ca-cert {path}: not a PEM certificate file (no BEGIN CERTIFICATE line)")
    return BuildCA(Path(path), data)


# Lines of a build log that say why it failed, beyond the engine's "returned a non-zero code".
_MEANINGFUL = re.compile(r"^\s*(error\s*:|E:|FATAL\s*:|×)|externally-managed-environment|"
                         r"CERTIFICATE_VERIFY_FAILED|No matching distribution|conflicting dependencies|"
                         r"Cannot install|No such file or directory|command not found", re.IGNORECASE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ENGINE_SUMMARY = re.compile(r"returned a non-zero code|while running engine|exit status \d+$|"
                             r"While performing build")


def meaningful_lines(log_text: str, limit: int = 4) -> list[str]:
    """The first few distinct lines of a failed build's log that name the cause."""
    found: list[str] = []
    for raw in log_text.splitlines():
        line = _ANSI.sub("", raw).strip()
        if _MEANINGFUL.search(line) and not _ENGINE_SUMMARY.search(line) and line not in found:
            found.append(line[:200])
    return found[:limit]


def explain_failure(exc: DnnbenchError, ca: BuildCA | None) -> DnnbenchError:
    """The engine's one line, then the lines of its log that say why (pip's own error, ...)."""
    try:
        text = fileio.read_text(exc.log, errors="replace") if exc.log else ""
    except OSError:
        text = ""
    lines = meaningful_lines(text)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        lines.append("hint: the network re-signs TLS (a proxy?): pass its CA with --ca-cert FILE or "
                     "DNNBENCH_CA_CERT" if ca is None else
                     f"hint: TLS still fails with --ca-cert {ca.path}: is it the proxy's CA?")
    if not lines:
        return exc
    return DnnbenchError(str(exc), log=exc.log, exit_code=exc.exit_code, details=lines)


def engine_arch_docker() -> str | None:
    from dnnbench.containers.engines import docker
    return catalog.normalize_arch(docker.client().info().get("Architecture"))


def check_arch(base: catalog.Base, engine_arch: str | None, engine: str) -> None:
    """Refuse a base of another architecture than the engine's, naming the ways out."""
    if engine_arch is None or base.arch == engine_arch:
        return
    raise DnnbenchError(
        f"base {base.name} is for {base.arch} but {engine} runs {engine_arch}: build on a {base.arch} host, "
        f"or emulate it (register qemu-{base.arch} with binfmt_misc) and build the recipe from "
        f"`dnnbench render --base {base.name}` with `docker build --platform {catalog.platform_of(base.arch)}`")


def image_config(image: str) -> dict | None:
    """A local image's config (Entrypoint, Architecture, ...), or None if it is not here."""
    import docker as docker_sdk

    from dnnbench.containers.engines import docker
    try:
        attrs = docker.client().images.get(image).attrs
    except docker_sdk.errors.ImageNotFound:
        return None
    return {**(attrs.get("Config") or {}), "Architecture": attrs.get("Architecture")}


def with_image_facts(base: catalog.Base, config: dict | None) -> catalog.Base:
    """The base, corrected by what its image says of itself: its ENTRYPOINT and architecture."""
    if config is None:
        return base
    entrypoint = tuple(config.get("Entrypoint") or ())
    arch = catalog.normalize_arch(config.get("Architecture")) or base.arch
    if base.entrypoint is not None and entrypoint != base.entrypoint:
        warn(f"{base.image} starts {json.dumps(list(entrypoint))}, not {json.dumps(list(base.entrypoint))} "
             f"as the catalog says: the image's own is kept in front of the workload")
    if arch != base.arch and base.family != "local":
        warn(f"{base.image} is a {arch} image, not {base.arch} as the catalog says")
    return dataclasses.replace(base, entrypoint=entrypoint, arch=arch)


def _log_path(log_dir: Path, base: catalog.Base, what: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "-", base.name)
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DnnbenchError(f"cannot write build logs to {log_dir}: {exc.strerror}") from None
    return log_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}-{what}.log"


def _parse_build_args(items: list[str]) -> dict:
    args = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise DnnbenchError(f"--build-arg expects KEY=VALUE, got {item!r}")
        args[key] = value
    return args


def docker_build(base: catalog.Base, *, tag: str | None = None, no_cache: bool = False, pull: bool = False,
                 build_args: dict | None = None, log_dir: Path = Path("results/build-logs"),
                 ca_cert: Path | None = None) -> str:
    """Build the docker image of a base with live progress; returns the tag.

    The base's own ENTRYPOINT and architecture come from its image when it is here (else from
    the catalog, checked again once the build has pulled it)."""
    from dnnbench.containers.engines import docker

    tag = names.image_tag(tag or base.tag, "--tag")
    ca = build_ca(ca_cert)
    docker.client()  # fail fast, before any work, if the daemon is down
    config = None if pull else image_config(base.image)
    base = with_image_facts(base, config)
    check_arch(base, engine_arch_docker(), "this Docker engine")
    started = time.monotonic()
    recipe, image_id, log_path = _docker_build_once(base, tag, ca, no_cache=no_cache, pull=pull,
                                                    build_args=build_args, log_dir=log_dir)
    if config is None:   # the build pulled the base: now its own facts can be read
        pulled = with_image_facts(base, image_config(base.image))
        if pulled.entrypoint != base.entrypoint:
            info("building again with the base's own entrypoint (only the last layers change)")
            recipe, image_id, log_path = _docker_build_once(pulled, tag, ca, no_cache=False, pull=False,
                                                            build_args=build_args, log_dir=log_dir)
    info(f"built {tag} ({image_id[:19]}) in {time.monotonic() - started:.1f}s; recipe sha256 {recipe.sha256[:12]}; "
         + (f"CA {ca.path} (sha256 {ca.sha256[:12]}) trusted by the build only; " if ca else "") + f"log {log_path}")
    return tag


def _docker_build_once(base: catalog.Base, tag: str, ca: BuildCA | None, *, no_cache: bool, pull: bool,
                       build_args: dict | None, log_dir: Path) -> tuple[recipes.Recipe, str, Path]:
    from dnnbench.containers.engines import docker

    recipe = recipes.render(base, "docker", ca_sha256=ca.sha256 if ca else None)
    log_path = _log_path(log_dir, base, "docker")
    layers: dict[str, str] = {}
    with err.status(escape(f"building {tag} from {base.image}")) as status, build_context(recipe, ca) as ctx:
        def on_step(line: str) -> None:
            status.update(escape(f"{tag}: {line[:100]}"))

        def on_pull(chunk: dict) -> None:
            if chunk.get("id"):
                layers[chunk["id"]] = chunk.get("status", "")
            done = sum(1 for s in layers.values() if s in ("Pull complete", "Already exists"))
            status.update(escape(f"pulling {base.image}: {done}/{len(layers)} layers"))

        try:
            image_id = docker.build(ctx, tag=tag, base_image=base.image, nocache=no_cache, pull=pull,
                                    buildargs=build_args, log_path=log_path, on_step=on_step, on_pull=on_pull)
        except DnnbenchError as exc:
            raise explain_failure(exc, ca) from None
    return recipe, image_id, log_path


def sif_path(output: Path | None, base: catalog.Base) -> Path:
    name = "dnnbench_" + re.sub(r"[^A-Za-z0-9_.-]", "-", base.name) + ".sif"
    if output is None:
        return Path(name)
    return output / name if output.is_dir() or str(output).endswith("/") else output


COMPRESSORS = ("gzip", "lz4", "zstd", "xz")


def singularity_build(base: catalog.Base, *, output: Path | None, from_docker: bool, tag: str | None,
                      no_cache: bool, build_args: dict, log_dir: Path, compression: str | None = None,
                      ca_cert: Path | None = None) -> Path:
    from dnnbench.containers.engines import apptainer, docker

    apptainer.binary()
    if compression is not None and compression not in COMPRESSORS:
        raise DnnbenchError(f"--compression {compression!r}: choose {', '.join(COMPRESSORS)}")
    ca = build_ca(ca_cert)
    sif = sif_path(output, base)
    log_path = _log_path(log_dir, base, "sif")
    started = time.monotonic()
    if from_docker:
        tag = names.image_tag(tag or base.tag, "--tag")
        if no_cache or docker.image_labels(tag) is None:
            docker_build(base, tag=tag, no_cache=no_cache, build_args=build_args, log_dir=log_dir, ca_cert=ca_cert)
        # A conversion only unpacks layers: no fakeroot (which needs subuid ranges on the node).
        with err.status(escape(f"converting {tag} to {sif}")) as status:
            apptainer.build(f"docker-daemon://{tag}", sif, log_path=log_path, compression=compression,
                            on_line=lambda line: status.update(escape(f"{sif.name}: {line[:100]}")))
    else:
        if base.bootstrap == "docker-daemon":   # a local image: its own entrypoint and arch are readable
            base = with_image_facts(base, image_config(base.image))
        check_arch(base, catalog.normalize_arch(platform.machine()), "this host")
        recipe = recipes.render(base, "singularity", ca_sha256=ca.sha256 if ca else None)
        # %post installs packages as root, which needs --fakeroot (a user namespace) for a user,
        # and for root too where its capabilities are bounded (containers, CI).
        with err.status(escape(f"building {sif} from {base.image}")) as status, build_context(recipe, ca) as ctx:
            try:
                apptainer.build(recipe.filename, sif.resolve(), log_path=log_path, cwd=ctx, compression=compression,
                                fakeroot=True,
                                on_line=lambda line: status.update(escape(f"{sif.name}: {line[:100]}")))
            except DnnbenchError as exc:
                raise explain_failure(exc, ca) from None
    info(f"built {sif} ({sif.stat().st_size / 2**20:.0f} MiB) in {time.monotonic() - started:.1f}s; log {log_path}")
    return sif


def build_command(*, base: str, fmt: str, tag: str | None, no_cache: bool, pull: bool, build_args: list[str],
                  output: Path | None, from_docker: bool, log_dir: Path, compression: str | None = None,
                  ca_cert: Path | None = None, dry_run: bool = False) -> None:
    resolved = resolve_base(base)
    args = _parse_build_args(build_args)
    ca = build_ca(ca_cert)   # a bad --ca-cert is bad input: say so before any engine is touched
    if dry_run:
        _show_build_plan(resolved, fmt, tag, output, ca)
        return
    builds = {"docker": lambda: docker_build(resolved, tag=tag, no_cache=no_cache, pull=pull, build_args=args,
                                             log_dir=log_dir, ca_cert=ca_cert),
              "singularity": lambda: singularity_build(resolved, output=output, from_docker=from_docker, tag=tag,
                                                       no_cache=no_cache, build_args=args, log_dir=log_dir,
                                                       compression=compression, ca_cert=ca_cert)}
    builds[image_format(fmt)]()


# --format: the kind of image `build` makes (a key of recipes.FORMATS), under each name it takes
IMAGE_FORMATS = {"docker": "docker", "singularity": "singularity", "apptainer": "singularity", "sif": "singularity"}


def image_format(fmt: str) -> str:
    kind = IMAGE_FORMATS.get(fmt)
    if kind is None:
        raise DnnbenchError(f"unknown format {fmt!r}: choose docker or singularity")
    return kind


def _show_build_plan(base: catalog.Base, fmt: str, tag: str | None, output: Path | None, ca) -> None:
    """What `build` would make, from the catalog and the rendered recipe alone: no engine, no registry."""
    kind = image_format(fmt)
    recipe = recipes.render(base, kind, ca_sha256=ca.sha256 if ca else None)
    targets = {"docker": lambda: names.image_tag(tag or base.tag, "--tag"),
               "singularity": lambda: str(sif_path(output, base))}
    target = targets[kind]()
    chain = " ".join(base.entrypoint or ()) or "(none)"
    lines = [f"would build {target} from {base.image} ({base.arch}, {base.accelerator})",
             f"recipe {recipe.filename}, sha256 {recipe.sha256[:12]}; entrypoint {chain} -> python -m dnnbench.workloads",
             f"CA {ca.path} (sha256 {ca.sha256[:12]}) for the build's downloads only" if ca else "no extra CA"]
    for line in lines:
        out.print(line, markup=False, soft_wrap=True)
    here = catalog.normalize_arch(platform.machine())
    if base.arch != here:
        warn(f"{base.name} is {base.arch} and this host is {here}: the build would be refused here "
             f"(build on a {base.arch} host, or with qemu through binfmt_misc)")


def pull_command(*, base: str, output: Path | None, cache_dir: Path | None, tmp_dir: Path | None,
                 force: bool) -> None:
    from dnnbench.containers.engines import apptainer

    resolved = resolve_base(base)
    uri = ("docker-daemon://" if resolved.bootstrap == "docker-daemon" else "docker://") + resolved.image
    sif = sif_path(output, resolved)
    env = {}
    for var, path in (("CACHEDIR", cache_dir), ("TMPDIR", tmp_dir)):
        if path is not None:
            try:
                fileio.make_dirs(str(path.expanduser()))
            except OSError as exc:
                raise DnnbenchError(f"--{var.lower().replace('dir', '-dir')} {path}: "
                                    f"{exc.strerror or exc}; give a folder") from None
            env[f"APPTAINER_{var}"] = env[f"SINGULARITY_{var}"] = os.path.realpath(path)
    log_path = _log_path(Path("results/build-logs"), resolved, "pull")
    started = time.monotonic()
    with err.status(escape(f"pulling {uri}")) as status:
        apptainer.pull(uri, sif, log_path=log_path, force=force, env=env,
                       on_line=lambda line: status.update(escape(f"{sif.name}: {line[:100]}")))
    info(f"pulled {sif} ({sif.stat().st_size / 2**20:.0f} MiB) in {time.monotonic() - started:.1f}s")
