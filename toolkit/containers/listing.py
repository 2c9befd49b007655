"""Tables of what dnnbench knows: the base catalog, the images and .sif files it built."""
from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

from dnnbench.containers import catalog, recipes
from dnnbench.console import Column, escape, print_table, warn
from dnnbench.errors import DnnbenchError


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _age(seconds: float) -> str:
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= span:
            return f"{seconds / span:.0f}{unit}"
    return f"{seconds:.0f}s"


BASE_COLUMNS = [Column("base", key=True), Column("pytorch", rank=5), Column("cuda/rocm", rank=5),
                Column("python", rank=4), Column("distro", rank=3), Column("arch", rank=2),
                Column("profilers", rank=2), Column("env", rank=1), Column("image", rank=0)]


def bases_table(family: str | None, wide: bool = False) -> None:
    rows = [b for b in catalog.catalog().values() if family in (None, b.family)]
    if not rows:
        families = sorted({b.family for b in catalog.catalog().values()})
        raise DnnbenchError(f"no bases in family {family!r}; families: {', '.join(families)}")
    cells = [list(map(escape, (b.name, b.pytorch or "?", b.cuda or b.rocm or "-", b.python, b.distro, b.arch,
                               ",".join(b.profilers) or "-", " ".join(f"{k}={v}" for k, v in b.env.items()) or "-",
                               b.image))) for b in rows]
    print_table("dnnbench bases (also: any ngc-YY.MM, local:IMAGE)", BASE_COLUMNS, cells, wide=wide)


# base, size and age are what `images` is for: kept at any width (a long tag or path loses its middle)
IMAGE_COLUMNS = [Column("image", key=True), Column("kind", rank=5), Column("base", decides=True),
                 Column("size", right=True, headline=True, whole=True), Column("age", right=True, decides=True),
                 Column("recipe", rank=1)]


def images_table(sif_dirs: list[Path], wide: bool = False) -> None:
    from dnnbench.containers.engines import apptainer, docker

    rows = []
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
            rows.append(list(map(escape, (", ".join(img["tags"]) or img["id"], "docker",
                                        labels.get(recipes.LABEL_BASE, "?"), _size(img["size"]), _age(age),
                                        labels.get(recipes.LABEL_SHA, "?")[:12]))))
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
            rows.append(list(map(escape, (sif, "sif", labels[recipes.LABEL_BASE], _size(st.st_size),
                                        _age(now - st.st_mtime), labels.get(recipes.LABEL_SHA, "?")[:12]))))
    print_table("images built by dnnbench", IMAGE_COLUMNS, rows, wide=wide)
