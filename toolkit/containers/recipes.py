"""Render a base's Dockerfile and Singularity/Apptainer definition from one context.

Both formats get the same labels, environment, packages, files and entrypoint; the templates
only lay them out. Every value is validated and quoted here, so a hostile catalog entry or
option cannot add an instruction (no newlines, quoted in the target syntax).
"""
from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from dnnbench import __version__
from dnnbench.containers.catalog import Base
from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio

FORMATS = {"docker": ("Dockerfile.j2", "Dockerfile"),
           "singularity": ("Singularity.def.j2", "Singularity.def")}
CODE_DIR = "/opt/dnnbench"
WORKDIR = "/workspace"
LABEL_SHA = "io.dnnbench.recipe-sha256"
LABEL_BASE = "io.dnnbench.base"
LABEL_VERSION = "io.dnnbench.version"
LABEL_PYTHON = "io.dnnbench.python"
LABEL_ACCELERATOR = "io.dnnbench.accelerator"
LABEL_ARCH = "io.dnnbench.arch"
LABEL_ENTRYPOINT = "io.dnnbench.entrypoint"          # the base's own, as a JSON list
LABEL_CA = "io.dnnbench.build-ca-sha256"             # which CA the build's downloads trusted
SITE_DIR = f"{CODE_DIR}/site"       # dnnbench's own pip packages (pip --target): the base's stay untouched
CA_FILE = "dnnbench-build-ca.pem"   # in the build context, when `--ca-cert` is given
# Where NGC (25.03 on) lists the version of every package it was built with.
PIP_CONSTRAINT = "/etc/pip/constraint.txt"
_REQ_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def _requirement_name(spec: str) -> str:
    m = _REQ_NAME.match(spec)
    if m is None:
        raise DnnbenchError(f"pip package {spec!r}: a requirement starts with the package's name")
    return m.group(0)
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LABEL_KEY = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
# pip requirement or apt package spec: names, versions, extras and comparison operators.
_PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+\-]*(\[[A-Za-z0-9,._-]+\])?([=<>!~]=?[A-Za-z0-9.*+_-]+,?)*$")
_URL = re.compile(r"^https?://[A-Za-z0-9.\-]+(:\d+)?(/[A-Za-z0-9._~\-/]*)?$")


@dataclass(frozen=True)
class Recipe:
    base: Base
    format: str
    filename: str
    text: str
    sha256: str


def _plain(what: str, value) -> str:
    from dnnbench.console import unprintable
    text = str(value)
    if unprintable(text):
        raise DnnbenchError(f"{what} contains a newline or control character: {text!r}")
    return text


def context(base: Base, *, extra_env: dict | None = None, extra_pip: tuple = (), ca_sha256: str | None = None) -> dict:
    """The one context both templates render from.

    ca_sha256: the fingerprint of the CA file the build's downloads trust (`--ca-cert`); the
    file itself is used during the build only.
    """
    pip = tuple(base.pip) + tuple(extra_pip)
    env = {**base.env, **(extra_env or {}),
           "PYTHONPATH": f"{CODE_DIR}:{SITE_DIR}" if pip else CODE_DIR,
           "PYTHONUNBUFFERED": "1", "DNNBENCH_BASE": base.name}
    for key, value in env.items():
        if not _ENV_KEY.match(str(key)):
            raise DnnbenchError(f"not a valid environment variable name: {key!r}")
        _plain(f"environment value {key}", value)
    for pkg in pip + tuple(base.apt):
        if not _PACKAGE.match(_plain("package", pkg)):
            raise DnnbenchError(f"not a valid package spec: {pkg!r}")
    if base.pip_index and not _URL.match(base.pip_index):
        raise DnnbenchError(f"not a valid pip index URL: {base.pip_index!r}")
    _plain("image", base.image)
    entrypoint = [_plain("entrypoint", w) for w in base.entrypoint or ()]
    if ca_sha256 is not None and not re.match(r"^[0-9a-f]{64}$", ca_sha256):
        raise DnnbenchError(f"not a sha256 fingerprint: {ca_sha256!r}")
    labels = {
        "org.opencontainers.image.title": "dnnbench",
        "org.opencontainers.image.version": __version__,
        "org.opencontainers.image.base.name": base.image,
        LABEL_BASE: base.name,
        LABEL_VERSION: __version__,
        LABEL_PYTHON: base.python_bin,          # `dnnbench run` starts the entry with it
        LABEL_ACCELERATOR: base.accelerator,    # nvidia | amd | none: which devices a run passes
        LABEL_ARCH: base.arch,                  # runs and builds refuse another architecture
    }
    if base.entrypoint is not None:             # unknown until `dnnbench build` reads the image
        labels[LABEL_ENTRYPOINT] = json.dumps(entrypoint)
    if ca_sha256:
        labels[LABEL_CA] = ca_sha256
    return {
        "version": __version__,
        "base": base,
        "python": shlex.quote(base.python_bin),
        "labels": labels,
        "env": env,
        "apt": list(base.apt),
        # (name, spec): the name says whether the base already has the package
        "pip": [(_requirement_name(spec), spec) for spec in pip],
        "pip_index": base.pip_index,
        "pip_constraint": PIP_CONSTRAINT,
        "site": SITE_DIR,
        "ca": CA_FILE if ca_sha256 else None,
        "code": {"src": "dnnbench", "dst": f"{CODE_DIR}/dnnbench"},
        "workdir": WORKDIR,
        "base_entrypoint": entrypoint,
        "entrypoint_known": base.entrypoint is not None,
        "entrypoint": entrypoint + [base.python_bin, "-m", "dnnbench.workloads"],
    }


def environment():
    import jinja2  # lazy: keeps `dnnbench --help` fast
    from importlib import resources

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.files("dnnbench.templates"))),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, autoescape=False)
    env.filters["dq"] = lambda v: json.dumps(_plain("value", v), ensure_ascii=False)
    env.filters["sh"] = lambda v: shlex.quote(_plain("value", v))
    return env


def render(base: Base, fmt: str, **ctx_options) -> Recipe:
    """Render one format. The recipe's own sha256 (of the text without it) goes into its labels."""
    if fmt not in FORMATS:
        raise DnnbenchError(f"unknown format {fmt!r}: choose docker or singularity")
    import jinja2

    template_name, filename = FORMATS[fmt]
    ctx = context(base, **ctx_options)
    try:
        template = environment().get_template(template_name)
        unlabelled = template.render(**ctx)
        sha = hashlib.sha256(unlabelled.encode()).hexdigest()
        ctx["labels"][LABEL_SHA] = sha
        text = template.render(**ctx)
    except jinja2.TemplateError as exc:
        lineno = getattr(exc, "lineno", None)      # a syntax error has one
        where = f" line {lineno}" if lineno else ""
        raise DnnbenchError(f"template {template_name}{where}: {exc}") from None
    return Recipe(base=base, format=fmt, filename=filename, text=text, sha256=sha)


def write(recipe: Recipe, out_dir: Path) -> Path:
    """Write a recipe into out_dir (created if needed); a clear error if it is not writable."""
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / recipe.filename
        fileio.write_atomic_text(path, recipe.text)
    except OSError as exc:
        raise DnnbenchError(f"cannot write to {out_dir}: {exc.strerror or exc}") from None
    return path
