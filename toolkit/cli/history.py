"""Commands of the results history: list, import, series, peers, changes."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from dnnbench.cli.harness_options import INJECTED, in_range, with_harness_options, with_params
from dnnbench.cli.exports import PUSH
from dnnbench.cli.runs import IMAGES_PARAMS
from dnnbench.workloads.options import BY_NAME

DB = typer.Option(None, "--db", help="The store: a SQLite file or a postgresql:// URL (default $DNNBENCH_DB, "
                                     "else ~/.local/share/dnnbench/history.db).")
FORMAT = typer.Option("table", "--format", "-f", help="table, csv, json or html (a page with the series plotted).")
OUTPUT = typer.Option(None, "--output", "-o", help="Write here instead of stdout (csv, json, html).")
WIDE = typer.Option(False, "--wide", help="The table with every column, however wide.")
INCLUDE_BUSY = typer.Option(False, "--include-busy",
                            help="Count results whose host was busy (every core taken while the run got under "
                                 "half of one: the figure is the host's); left out, and counted, by default.")

history_app = typer.Typer(
    help="The results history: every result dnnbench writes is also recorded in a database "
         "(SQLite by default, PostgreSQL for a team). Without a subcommand: the results, filtered "
         "by the options below (as `history list`).",
    invoke_without_command=True)


def _by(value: str) -> str:
    if value not in ("release", "time"):
        raise typer.BadParameter("choose release or time")
    return value


JOB = typer.Option(None, "--job", help="One job (as the report names it).")
WORKLOAD = typer.Option(None, "--workload", help="One workload (every job of it).")
IMAGE = typer.Option(None, "--image", help="One image (as run named it).")
BASE = typer.Option(None, "--base", help="One base (ngc-24.10, local:IMAGE...).")
TORCH = typer.Option(None, "--torch", help="PyTorch version or prefix (2.4 finds 2.4.1).")
CUDA = typer.Option(None, "--cuda", help="CUDA version or prefix.")
HOST = typer.Option(None, "--host", help="One host name.")
GPU = typer.Option(None, "--gpu", help="One GPU model (as the result names it; CPU for none).")
SINCE = typer.Option(None, "--since", help="From: an age (4w, 3d, 12h) or a date.")
UNTIL = typer.Option(None, "--until", help="Before: an age or a date.")
LAST = typer.Option(None, "--last", min=0, help="Only the newest N results (0: all; default: 100 in the table, "
                                                   "all in csv, json and html).")


def _list(job, workload, image, base, torch, cuda, host, gpu, since, until, fmt, output, wide, db, last) -> int:
    from dnnbench.history import when
    from dnnbench.history.commands import list_command
    filters = dict(job=job, workload=workload, image=image, base=base, pytorch=torch, cuda=cuda, host=host,
                   gpu=gpu, since=when.parse(since, "--since"), until=when.parse(until, "--until"))
    return list_command(filters, fmt, output, wide, db, last)


@history_app.callback()
def _default(ctx: typer.Context, job: Optional[str] = JOB, workload: Optional[str] = WORKLOAD,
             image: Optional[str] = IMAGE, base: Optional[str] = BASE, torch: Optional[str] = TORCH,
             cuda: Optional[str] = CUDA, host: Optional[str] = HOST, gpu: Optional[str] = GPU,
             since: Optional[str] = SINCE, until: Optional[str] = UNTIL, fmt: str = FORMAT,
             output: Optional[Path] = OUTPUT, wide: bool = WIDE, db: Optional[str] = DB, last: Optional[int] = LAST):
    if ctx.invoked_subcommand is None:
        raise typer.Exit(_list(job, workload, image, base, torch, cuda, host, gpu, since, until, fmt, output, wide, db,
                               last))


@history_app.command("list")
def list_results(job: Optional[str] = JOB, workload: Optional[str] = WORKLOAD, image: Optional[str] = IMAGE,
                 base: Optional[str] = BASE, torch: Optional[str] = TORCH, cuda: Optional[str] = CUDA,
                 host: Optional[str] = HOST, gpu: Optional[str] = GPU, since: Optional[str] = SINCE,
                 until: Optional[str] = UNTIL, fmt: str = FORMAT, output: Optional[Path] = OUTPUT,
                 wide: bool = WIDE, db: Optional[str] = DB, last: Optional[int] = LAST):
    """Recorded results, oldest first, with each one's throughput and 95% CI, filtered (the same
    as `dnnbench history` with these options); the table the newest 100 unless --last says otherwise."""
    raise typer.Exit(_list(job, workload, image, base, torch, cuda, host, gpu, since, until, fmt, output, wide, db,
                           last))


@history_app.command("import")
def import_results(results: List[Path] = typer.Argument(..., help="Result files or folders (searched for result.json)."),
                   db: Optional[str] = DB):
    """Record results from existing folders (a backfill, or what a run could not record): each
    result once, by its identity and content, each on its own (a bad one never keeps the others
    out); counts of imported, already there, updated, unreadable, refused (a value no database
    keeps: a NUL, a lone surrogate, an over-long GPU name, a start time out of range) and in
    conflict (unlike results claiming one run id, host and start: neither recorded), each left
    out named with why. Exit 0 when every result is in the store, exit 1 when some were left
    out (the others are recorded), 2 when the store cannot be used (nothing recorded)."""
    from dnnbench.history.commands import import_command
    raise typer.Exit(import_command(results, db))


@history_app.command("series")
def series(job: str = typer.Argument(..., help="The job."),
           by: str = typer.Option("release", "--by", callback=_by, help="release (images by version) or time."),
           gpu: Optional[str] = typer.Option(None, "--gpu", help="One GPU model."),
           fmt: str = FORMAT, output: Optional[Path] = OUTPUT, wide: bool = WIDE, db: Optional[str] = DB,
           include_busy: bool = INCLUDE_BUSY):
    """One job's ok results in order: across images (release order) or across time."""
    from dnnbench.history.commands import series_command
    raise typer.Exit(series_command(job, by, gpu, fmt, output, wide, db, include_busy))


@history_app.command("peers")
def peers(result: Path = typer.Argument(..., help="A run folder or its result.json."),
          as_json: bool = typer.Option(False, "--json", help="The figures as JSON."), db: Optional[str] = DB,
          include_busy: bool = INCLUDE_BUSY):
    """Is this number normal? Where one result falls among the store's results of the same job on
    the same GPU model: percentile, median, range, n, and a word: normal, slower or faster than
    the peers' spread (median +- 3 robust spreads), or too few peers to say (under 5)."""
    from dnnbench.history.commands import peers_command
    raise typer.Exit(peers_command(result, as_json, db, include_busy))


@history_app.command("changes")
def changes(job: Optional[str] = typer.Argument(None, help="One job (default: every job)."),
            by: str = typer.Option("release", "--by", callback=_by, help="release (images by version) or time."),
            fmt: str = typer.Option("table", "--format", "-f", help="table or json."), db: Optional[str] = DB,
            push: Optional[str] = PUSH, include_busy: bool = INCLUDE_BUSY):
    """Lasting changes in each job's series (per GPU model): where, by how much (95% CI), and what
    changed between the two sides (image, PyTorch, CUDA, cuDNN, NCCL, driver). One outlier is
    not a change. Exit 1 when a change is a slowdown beyond its CI; 3 when all else succeeded
    but --push did not. GITHUB_STEP_SUMMARY set: the changes appended there as a table."""
    from dnnbench.history.commands import changes_command
    raise typer.Exit(changes_command(job, by, fmt, db, push, include_busy))


@with_params(IMAGES_PARAMS, key="job")
@with_harness_options()
def watch(workload: str = typer.Argument(..., help="Workload name (`dnnbench workloads`)."),
          rounds: int = typer.Option(8, "--rounds", callback=in_range(BY_NAME["rounds"]),
                                     help="The most rounds per judgement of a suspected slowdown (its ends, "
                                          "then each midpoint with both ends), as bisect; looked at from 3 on."),
          every: int = typer.Option(1, "--every", min=1,
                                    help="Survey every N-th release (and the newest); the releases between "
                                         "are measured only where a slowdown is suspected (bisected)."),
          max_runs: Optional[int] = typer.Option(None, "--max-runs", callback=in_range(BY_NAME["max_runs"]),
                                                 help="Stop after N runs with the verdict so far."),
          deadline: Optional[float] = typer.Option(None, "--deadline", callback=in_range(BY_NAME["deadline"]),
                                                   help="Stop after MIN minutes with the verdict so far."),
          push: Optional[str] = PUSH, harness: dict = INJECTED, job: dict = INJECTED):
    """Which release made the job slower: the releases in order (`--images A,B,C` or `--bases
    X..Y`) not yet in the history for this job and GPU model are measured (the newest always),
    each result recorded; change detection and the newest release against its predecessors
    choose where to look; each suspected slowdown is judged in alternated rounds and bisected as
    `bisect` does, naming the first slower release and what changed. Finished runs are read back
    (resumable after Ctrl-C); a CPU job's steps run on one thread (OMP_NUM_THREADS=1) unless you
    set it. With --slurm each run is a one-node Slurm job, waited for in turn
    (Ctrl-C cancels it), its result in the run's folder as a local run's. Exit 1 when a release was found slower, 0 otherwise, 2 when the
    store cannot be used, 3 when all else succeeded but --push did not. GITHUB_STEP_SUMMARY
    set: the verdicts appended there as a table."""
    from dnnbench.cli.runs import images_job
    from dnnbench.campaigns.watch import watch_command
    from dnnbench.campaigns.bisect import Budget
    opts, images, bases = images_job(workload, job, harness)
    raise typer.Exit(watch_command(opts, images, bases, job["tolerance"], rounds, every, push=push,
                                   budget=Budget(max_runs, deadline)))


def register(app: typer.Typer) -> None:
    app.add_typer(history_app, name="history")
    app.command()(watch)
