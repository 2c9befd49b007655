"""Tables of what dnnbench knows: the base catalog, the images and .sif files it built."""
from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

from rich.table import Table

from dnnbench.containers import catalog, recipes
from dnnbench.console import escape, out, warn
from dnnbench.errors import DnnbenchError


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _age(seconds: float) -> str:
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= span:
            return f"{seconds / span:.0f}{unit}"
    return f"{seconds:.0f}s"


def bases_table(family: str | None) -> None:
    rows = [b for b in catalog.catalog().values() if family in (None, b.family)]
    if not rows:
        families = sorted({b.family for b in catalog.catalog().values()})
        raise DnnbenchError(f"no bases in family {family!r}; families: {', '.join(families)}")
    table = Table(title="dnnbench bases (also: any ngc-YY.MM, local:IMAGE)")
    for col in ("base", "image", "arch", "distro", "python", "pytorch", "cuda/rocm", "profilers", "env"):
        table.add_column(col, overflow="fold")
    for b in rows:
        table.add_row(*map(escape, (b.name, b.image, b.arch, b.distro, b.python, b.pytorch or "?",
                                    b.cuda or b.rocm or "-", ",".join(b.profilers) or "-",
                                    " ".join(f"{k}={v}" for k, v in b.env.items()) or "-")))
    out.print(table)


def images_table(sif_dirs: list[Path]) -> None:
    from dnnbench.containers.engines import apptainer, docker

    table = Table(title="images built by dnnbench")
    for col in ("image", "kind", "base", "size", "age", "recipe sha256"):
        table.add_column(col, overflow="fold")
    now = time.time()
    try:
        docker.client()
        reachable = True
    except DnnbenchError as exc:   # say so: an empty table would read as "no images built"
        warn(f"docker images not listed: {exc}")
        reachable = False
    if reachable:
        for img in docker.list_images(recipes.LABEL_BASE):
            created = img["created"]
            try:
                age = now - datetime.fromisoformat(created[:26].rstrip("Z")).replace(tzinfo=timezone.utc).timestamp()
            except ValueError:
                age = 0
            labels = img["labels"]
            table.add_row(*map(escape, (", ".join(img["tags"]) or img["id"], "docker",
                                        labels.get(recipes.LABEL_BASE, "?"), _size(img["size"]), _age(age),
                                        labels.get(recipes.LABEL_SHA, "?")[:12])))
    for folder in sif_dirs:
        if not Path(folder).is_dir():
            raise DnnbenchError(f"--sif-dir {folder} is not a folder")
        for sif in sorted(Path(folder).glob("*.sif")):
            if not sif.is_file():       # a FIFO named x.sif: never handed to apptainer
                continue
            labels = apptainer.labels(sif)
            if recipes.LABEL_BASE not in labels:
                continue
            st = sif.stat()
            table.add_row(*map(escape, (sif, "sif", labels[recipes.LABEL_BASE], _size(st.st_size),
                                        _age(now - st.st_mtime), labels.get(recipes.LABEL_SHA, "?")[:12])))
    out.print(table)
