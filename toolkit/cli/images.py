"""Commands of the image stage: the base catalog, recipes, builds, pulls, built images, doctor."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from dnnbench.console import WIDE_HELP


def bases(family: Optional[str] = typer.Option(None, help="Only this family (ngc, rocm, powerai, cpu)."),
          wide: bool = typer.Option(False, "--wide", help=WIDE_HELP)):
    """List the bases in the catalog, with their facts."""
    from dnnbench.containers.listing import bases_table
    bases_table(family, wide)


def render(
    base: str = typer.Option(..., "--base", "-b", help="Base name, e.g. ngc-21.07, rocm-6.0.2, cpu, local:IMAGE."),
    fmt: str = typer.Option("all", "--format", "-f", help="docker, singularity or all."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write files here instead of printing."),
):
    """Render the Dockerfile and/or Singularity definition for a base."""
    from dnnbench.containers.build import render_command
    render_command(base, fmt, output)


def build(
    base: str = typer.Option(..., "--base", "-b", help="Base name (see `dnnbench bases`)."),
    fmt: str = typer.Option("docker", "--format", "-f", help="docker (an image) or singularity (a .sif)."),
    tag: Optional[str] = typer.Option(None, help="Image tag (default dnnbench:<base>)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not reuse cached layers."),
    pull: bool = typer.Option(False, "--pull", help="Pull a newer base image first."),
    build_arg: List[str] = typer.Option([], "--build-arg", help="KEY=VALUE build argument (repeatable)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Singularity: where the .sif goes (file or folder)."),
    from_docker: bool = typer.Option(True, "--from-docker/--from-recipe",
                                     help="Singularity: convert the docker image (built first if missing) "
                                          "or build from the rendered definition."),
    log_dir: Path = typer.Option(Path("results/build-logs"), "--log-dir", help="Where build logs are kept."),
    compression: Optional[str] = typer.Option(None, "--compression",
                                              help="Singularity: squashfs compressor (gzip default; lz4 or zstd "
                                                   "build several times faster, larger files)."),
    ca_cert: Optional[Path] = typer.Option(None, "--ca-cert", envvar="DNNBENCH_CA_CERT",
                                           help="CA bundle (PEM) the build's pip and apt downloads trust, for "
                                                "networks behind a TLS-inspecting proxy; used during the build "
                                                "only, recorded as a label (its sha256)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would be built (image, recipe, entrypoint, "
                                                          "CA); touch no engine or registry."),
):
    """Build the image for a base (docker SDK) or a .sif (Apptainer/Singularity)."""
    from dnnbench.containers.build import build_command
    build_command(base=base, fmt=fmt, tag=tag, no_cache=no_cache, pull=pull, build_args=build_arg,
                  output=output, from_docker=from_docker, log_dir=log_dir, compression=compression,
                  ca_cert=ca_cert, dry_run=dry_run)


def pull(
    base: str = typer.Option(..., "--base", "-b", help="Base name."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="The .sif to write (file or folder)."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="APPTAINER_CACHEDIR (layers; ~20 GB for NGC)."),
    tmp_dir: Optional[Path] = typer.Option(None, "--tmp-dir", help="APPTAINER_TMPDIR (scratch during the pull)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing .sif."),
):
    """HPC: make a .sif of a base straight from its registry (`apptainer pull docker://...`)."""
    from dnnbench.containers.build import pull_command
    pull_command(base=base, output=output, cache_dir=cache_dir, tmp_dir=tmp_dir, force=force)


def images(sif_dir: List[Path] = typer.Option([Path(".")], "--sif-dir", help="Folders to scan for .sif files."),
           wide: bool = typer.Option(False, "--wide", help=WIDE_HELP)):
    """List the images and .sif files dnnbench built."""
    from dnnbench.containers.listing import images_table
    images_table(sif_dir, wide)


def doctor():
    """Check which engines and GPUs are reachable, with a hint for each missing piece."""
    from dnnbench.containers.doctor import doctor_command
    raise typer.Exit(doctor_command())


def register(app: typer.Typer) -> None:
    for command in (bases, render, build, pull, images, doctor):
        app.command()(command)
