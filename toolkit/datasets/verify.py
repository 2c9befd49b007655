"""`dnnbench data verify`: check a dataset and say exactly what is wrong. The checks are the
container side's own (dnnbench.workloads.data), so `verify`, `run` and the harness agree."""
from __future__ import annotations

from pathlib import Path

from dnnbench.console import err, escape, out
from dnnbench.errors import DnnbenchError


def verify_command(path: Path, kind: str, deep: bool) -> int:
    from dnnbench.workloads import data as data_mod

    if kind == "imagenetv2":   # an evaluation set alone (val/<wnid>/), checked by its own module
        from dnnbench.datasets import imagenetv2
        return _show(path, kind, imagenetv2.problems(path), deep=True)
    if kind not in data_mod.KINDS:
        raise DnnbenchError(f"unknown dataset kind {kind!r}: choose {', '.join(data_mod.KINDS)}")
    if deep and kind in ("imagenet", "coco"):
        from dnnbench.datasets.fake import need_pillow
        need_pillow("--deep opens every image")
    with err.status(escape(f"checking {path} as {kind}{' (opening every image)' if deep else ''}")):
        found = data_mod.problems(str(path), kind, deep=deep)
    return _show(path, kind, found, deep)


def _show(path: Path, kind: str, found: list[str], deep: bool) -> int:
    if found:
        for problem in found:
            out.print(f"[red]x[/] {escape(problem)}", soft_wrap=True)
        return 1
    out.print(f"[green]ok[/] {escape(path)} is a valid {kind} dataset"
              f"{'' if deep else ' (layout; --deep opens every image)'}", soft_wrap=True)
    return 0
