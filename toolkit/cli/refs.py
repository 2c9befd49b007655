"""`dnnbench refs`: the world's published numbers (Lambda, MLPerf Training, milabench) imported
into the history store as references, and listed."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from dnnbench.cli.history import DB

refs_app = typer.Typer(
    help="Published reference numbers (Lambda's PyTorch CSVs, MLPerf Training summaries, milabench "
         "scaling files), kept in the history store apart from results; `history peers` places a "
         "result against those that measured the same thing (docs/reference-numbers.md).",
    no_args_is_help=True)


def _source(value: Optional[str]) -> Optional[str]:
    from dnnbench.refs.sources import SOURCES
    if value is not None and value not in SOURCES:
        raise typer.BadParameter(f"choose {', '.join(SOURCES)}")
    return value


@refs_app.command("import")
def import_refs(paths: List[Path] = typer.Argument(..., help="Published files: Lambda's "
                                                              "pytorch-train-throughput-*.csv, MLPerf's summary.json "
                                                              "or result_summarizer's csv/json, milabench's "
                                                              "config/scaling/GPU.yaml."),
                source: Optional[str] = typer.Option(None, "--source", callback=_source,
                                                     help="lambda, mlperf or milabench (default: told by content)."),
                version: Optional[str] = typer.Option(None, "--version",
                                                      help="The file's version or commit (kept with each reference; "
                                                           "MLPerf's round is read from its links)."),
                precision: Optional[str] = typer.Option(None, "--precision",
                                                        help="fp16, fp32, tf32 or bf16 where the file does not say "
                                                             "(Lambda's name says it: -fp16.csv)."),
                gpu: Optional[str] = typer.Option(None, "--gpu", help="The GPU model where the file names none "
                                                                      "precisely (milabench's H100.yaml: "
                                                                      "'H100 80GB SXM5')."),
                db: Optional[str] = DB):
    """Import published numbers as references: each once (by source, version, system, GPU, count,
    workload, precision, batch and unit; a new value updates it). A 0.0 cell or a null is not
    measured, never a zero; a row that cannot be read refuses its file whole (one line naming the
    rows; nothing of it imported). Exit 0 when every file was imported, 1 when one was refused
    (the others imported), 2 on bad usage or a store that cannot be used."""
    from dnnbench.refs.commands import import_command
    raise typer.Exit(import_command(paths, source, precision, gpu, version, db))


@refs_app.command("list")
def list_refs(workload: Optional[str] = typer.Option(None, "--workload", help="dnnbench's workload (resnet50) or "
                                                                               "the source's name (bert_base_squad)."),
              gpu: Optional[str] = typer.Option(None, "--gpu", help="A GPU model, by any name the alias table "
                                                                    "knows ('NVIDIA H100 80GB HBM3')."),
              source: Optional[str] = typer.Option(None, "--source", callback=_source,
                                                   help="lambda, mlperf or milabench."),
              fmt: str = typer.Option("table", "--format", "-f", help="table, csv or json (one object per reference)."),
              wide: bool = typer.Option(False, "--wide", help="The table with every column, however wide."),
              db: Optional[str] = DB):
    """The imported references: workload, GPU model and count, precision, batch, value (with the
    spread of the measurements merged into it), source and system."""
    from dnnbench.refs.commands import list_command
    raise typer.Exit(list_command(workload, gpu, source, fmt, db, wide))


def register(app: typer.Typer) -> None:
    app.add_typer(refs_app, name="refs")
