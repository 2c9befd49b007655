"""Commands of the data stage: `dnnbench data prepare|digits|fake|verify`."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


data_app = typer.Typer(help="Datasets: prepare real ones from their archives, write the small real digits, verify them, make fake ones.", no_args_is_help=True)


@data_app.command("fake")
def data_fake(
    kind: str = typer.Argument(..., help="imagenet, coco, text or ratings."),
    to: Path = typer.Option(..., "--to", help="Folder to write (made if missing)."),
    images: int = typer.Option(1000, "--images", "-n", help="Images (text/ratings: x100 words/ratings)."),
    classes: int = typer.Option(10, "--classes", help="ImageNet: class folders."),
    size: int = typer.Option(256, "--size", help="Image side in pixels."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Parallel writers (default: all cores)."),
):
    """Write a dataset of the right layout from random pixels (real JPEGs, real COCO JSON), so the
    real-data path (decode, augment, DataLoader workers) runs anywhere."""
    from dnnbench.datasets.fake import fake_command
    fake_command(kind, to, images, classes, size, workers)


@data_app.command("digits")
def data_digits(
    to: Path = typer.Option(..., "--to", help="Folder to write (made if missing): train/ and val/ inside."),
    size: int = typer.Option(32, "--size", help="Image side in pixels (the 8x8 originals scaled up)."),
):
    """Write a small real dataset in the ImageNet layout: the UCI handwritten digits (1,797
    images, 10 classes) from scikit-learn's own copy, no network. resnet18 reaches 90 % top-1 on
    it in minutes on a CPU: the dataset of the README's MLPerf example."""
    from dnnbench.datasets.digits import digits_command
    digits_command(to, size)


@data_app.command("prepare")
def data_prepare(
    kind: str = typer.Argument(..., help="imagenet (ILSVRC2012) or imagenetv2 (an ImageNetV2 archive)."),
    src: Path = typer.Option(..., "--from", help="Folder with ILSVRC2012_img_train.tar, ILSVRC2012_img_val.tar "
                                                 "and ILSVRC2012_devkit_t12.tar.gz (read only, never changed); "
                                                 "imagenetv2: the archive, e.g. "
                                                 "imagenetv2-matched-frequency.tar.gz."),
    to: Path = typer.Option(..., "--to", help="Folder to fill with train/<wnid>/ and val/<wnid>/."),
    val_map: Optional[Path] = typer.Option(None, "--val-map", help="Val labels instead of the devkit: lines "
                                           "'ILSVRC2012_val_00000001.JPEG n01751748' (valprep.sh and "
                                           "LOC_val_solution.csv work too)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Classes extracted at once (default: cores, at most 8)."),
    classes_from: Optional[Path] = typer.Option(None, "--classes-from", help="imagenetv2: the ImageNet folder "
                                                "whose sorted class folders the archive's 0..999 stand for."),
):
    """Extract the ImageNet tars into the layout the workloads read: nested train tars, val sorted
    into class folders. Checks disk space first; interrupt and rerun to resume; a finished
    folder is a no-op."""
    if kind == "imagenetv2":
        from dnnbench.datasets import imagenetv2
        return imagenetv2.prepare_command(src, to, classes_from)
    from dnnbench.datasets.imagenet import prepare_command
    prepare_command(kind, src, to, val_map, workers)


@data_app.command("verify")
def data_verify(
    path: Path = typer.Argument(..., help="Dataset folder."),
    kind: str = typer.Option(..., "--kind", "-k", help="imagenet, imagenetv2, coco, text or ratings."),
    deep: bool = typer.Option(False, "--deep", help="Also open every image (slow)."),
):
    """Check a dataset's layout the way the workloads read it; say exactly what is wrong."""
    from dnnbench.datasets.verify import verify_command
    raise typer.Exit(verify_command(path, kind, deep))


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")
