"""`dnnbench render`, `build` and `pull`: from a base to a recipe, an image, a .sif."""
from __future__ import annotations

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
def build_context(recipe: recipes.Recipe):
    """A minimal build context: the recipe and the container-side code, nothing else."""
    with tempfile.TemporaryDirectory(prefix="dnnbench-ctx-") as tmp:
        ctx = Path(tmp)
        (ctx / recipe.filename).write_text(recipe.text, encoding="utf-8")
        _copy_code(ctx)
        yield ctx


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
                 build_args: dict | None = None, log_dir: Path = Path("results/build-logs")) -> str:
    """Build the docker image of a base with live progress; returns the tag."""
    from dnnbench.containers.engines import docker

    tag = names.image_tag(tag or base.tag, "--tag")
    recipe = recipes.render(base, "docker")
    log_path = _log_path(log_dir, base, "docker")
    docker.client()  # fail fast, before any work, if the daemon is down
    started = time.monotonic()
    layers: dict[str, str] = {}
    with err.status(escape(f"building {tag} from {base.image}")) as status, build_context(recipe) as ctx:
        def on_step(line: str) -> None:
            status.update(escape(f"{tag}: {line[:100]}"))

        def on_pull(chunk: dict) -> None:
            if chunk.get("id"):
                layers[chunk["id"]] = chunk.get("status", "")
            done = sum(1 for s in layers.values() if s in ("Pull complete", "Already exists"))
            status.update(escape(f"pulling {base.image}: {done}/{len(layers)} layers"))

        image_id = docker.build(ctx, tag=tag, base_image=base.image, nocache=no_cache, pull=pull,
                                buildargs=build_args, log_path=log_path, on_step=on_step, on_pull=on_pull)
    info(f"built {tag} ({image_id[:19]}) in {time.monotonic() - started:.1f}s; "
         f"recipe sha256 {recipe.sha256[:12]}; log {log_path}")
    return tag


def sif_path(output: Path | None, base: catalog.Base) -> Path:
    name = "dnnbench_" + re.sub(r"[^A-Za-z0-9_.-]", "-", base.name) + ".sif"
    if output is None:
        return Path(name)
    return output / name if output.is_dir() or str(output).endswith("/") else output


COMPRESSORS = ("gzip", "lz4", "zstd", "xz")


def singularity_build(base: catalog.Base, *, output: Path | None, from_docker: bool, tag: str | None,
                      no_cache: bool, build_args: dict, log_dir: Path, compression: str | None = None) -> Path:
    from dnnbench.containers.engines import apptainer, docker

    apptainer.binary()
    if compression is not None and compression not in COMPRESSORS:
        raise DnnbenchError(f"--compression {compression!r}: choose {', '.join(COMPRESSORS)}")
    sif = sif_path(output, base)
    log_path = _log_path(log_dir, base, "sif")
    started = time.monotonic()
    if from_docker:
        tag = names.image_tag(tag or base.tag, "--tag")
        if no_cache or docker.image_labels(tag) is None:
            docker_build(base, tag=tag, no_cache=no_cache, build_args=build_args, log_dir=log_dir)
        with err.status(escape(f"converting {tag} to {sif}")) as status:
            apptainer.build(f"docker-daemon://{tag}", sif, log_path=log_path, compression=compression,
                            on_line=lambda line: status.update(escape(f"{sif.name}: {line[:100]}")))
    else:
        recipe = recipes.render(base, "singularity")
        with err.status(escape(f"building {sif} from {base.image}")) as status, build_context(recipe) as ctx:
            apptainer.build(recipe.filename, sif.resolve(), log_path=log_path, cwd=ctx, compression=compression,
                            on_line=lambda line: status.update(escape(f"{sif.name}: {line[:100]}")))
    info(f"built {sif} ({sif.stat().st_size / 2**20:.0f} MiB) in {time.monotonic() - started:.1f}s; log {log_path}")
    return sif


def build_command(*, base: str, fmt: str, tag: str | None, no_cache: bool, pull: bool, build_args: list[str],
                  output: Path | None, from_docker: bool, log_dir: Path, compression: str | None = None) -> None:
    resolved = resolve_base(base)
    args = _parse_build_args(build_args)
    if fmt == "docker":
        docker_build(resolved, tag=tag, no_cache=no_cache, pull=pull, build_args=args, log_dir=log_dir)
    elif fmt in ("singularity", "apptainer", "sif"):
        singularity_build(resolved, output=output, from_docker=from_docker, tag=tag, no_cache=no_cache,
                          build_args=args, log_dir=log_dir, compression=compression)
    else:
        raise DnnbenchError(f"unknown format {fmt!r}: choose docker or singularity")


def pull_command(*, base: str, output: Path | None, cache_dir: Path | None, tmp_dir: Path | None,
                 force: bool) -> None:
    from dnnbench.containers.engines import apptainer

    resolved = resolve_base(base)
    uri = ("docker-daemon://" if resolved.bootstrap == "docker-daemon" else "docker://") + resolved.image
    sif = sif_path(output, resolved)
    env = {}
    for var, path in (("CACHEDIR", cache_dir), ("TMPDIR", tmp_dir)):
        if path is not None:
            path.mkdir(parents=True, exist_ok=True)
            env[f"APPTAINER_{var}"] = env[f"SINGULARITY_{var}"] = str(path.resolve())
    log_path = _log_path(Path("results/build-logs"), resolved, "pull")
    started = time.monotonic()
    with err.status(escape(f"pulling {uri}")) as status:
        apptainer.pull(uri, sif, log_path=log_path, force=force, env=env,
                       on_line=lambda line: status.update(escape(f"{sif.name}: {line[:100]}")))
    info(f"pulled {sif} ({sif.stat().st_size / 2**20:.0f} MiB) in {time.monotonic() - started:.1f}s")
