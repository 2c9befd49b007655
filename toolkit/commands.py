"""Commands registered on the app beyond the build side: run (and, in their own modules'
wiring below, what reads its results). Heavy imports stay inside the commands."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from .cli import app

RUN_HELP = """Run one workload in a container (or on the host) and keep its result.

Examples:

  dnnbench run resnet50 --gpus 0 --amp fp16 --channels-last

  dnnbench run inception_v3 --data /imagenet --gpus 0,1      (torchrun, one process per GPU)

  dnnbench run resnet18 --base cpu --build --number 5 --repeat 3

  dnnbench run wlm --runtime singularity --image dnnbench_ngc-24.10.sif --gpus all

Options after `--` go to the workload unchanged (`python -m dnnbench.workloads W --help`).
The dataset is mounted read-only at /data, the run folder read-write at /results; the run
folder results/<run-id>/ gets plan.json, log.txt and result.json whatever happens."""


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False}, help=RUN_HELP)
def run(
    ctx: typer.Context,
    workload: str = typer.Argument(..., help="Workload name (`dnnbench workloads` lists them)."),
    data: Optional[Path] = typer.Option(None, "--data", "-d", help="Dataset folder (mounted read-only at /data). Default: synthetic data."),
    gpus: Optional[str] = typer.Option(None, "--gpus", "-g", help="GPUs: all, or indices/UUIDs like 0 or 0,1. Default: CPU."),
    nproc: Optional[int] = typer.Option(None, "--nproc", help="CPU runs: processes (DDP over gloo, through torchrun)."),
    runtime: str = typer.Option("docker", "--runtime", "-r", help="docker, singularity (= apptainer) or host."),
    image: Optional[str] = typer.Option(None, "--image", "-i", help="Docker tag or .sif file. Default: the base's image, else the newest dnnbench image."),
    base: Optional[str] = typer.Option(None, "--base", "-b", help="Use the image of this base (see `dnnbench bases`)."),
    build: Optional[bool] = typer.Option(None, "--build/--no-build", help="Build the base's image if missing (default: ask when interactive)."),
    results: Path = typer.Option(Path("results"), "--results", help="Results folder; the run goes in RESULTS/<run-id>/."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Name of the run folder (default: time-workload-random)."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Stop the run after this many seconds (status timeout)."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Per-GPU batch size (default: the workload's)."),
    number: Optional[int] = typer.Option(None, "--number", help="Iterations per timed window (default 10)."),
    repeat: Optional[int] = typer.Option(None, "--repeat", help="Timed windows (default 10)."),
    warmup: Optional[int] = typer.Option(None, "--warmup", help="Untimed iterations first (default 5)."),
    start_iter: Optional[int] = typer.Option(None, "--start-iter", help="TBD-style: first timed iteration."),
    stop_iter: Optional[int] = typer.Option(None, "--stop-iter", help="TBD-style: iteration after the last timed one."),
    amp: Optional[str] = typer.Option(None, "--amp", help="Mixed precision: fp16 or bf16."),
    channels_last: bool = typer.Option(False, "--channels-last", help="NHWC memory format."),
    compile_: bool = typer.Option(False, "--compile", help="torch.compile the model (PyTorch 2+ images)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="DataLoader workers for real data."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Random seed."),
    profile: Optional[str] = typer.Option(None, "--profile", help="ncu, nsys, torch, nvprof or rocprof: profile the timed window "
                                          "(--start-iter/--stop-iter pick it); `dnnbench profile show` reads it."),
    cool_down: Optional[float] = typer.Option(None, "--cool-down", help="First wait (at most this many seconds) until the GPUs' temperature stops falling."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and the equivalent command line; run nothing."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not echo the run's output (it still goes to log.txt)."),
):
    from .run import RunOptions, run_command
    opts = RunOptions(workload=workload, data=data, gpus=gpus, nproc=nproc, runtime=runtime, image=image,
                      base=base, build=build, results=results, run_id=run_id, timeout=timeout, dry_run=dry_run,
                      quiet=quiet, batch_size=batch_size, number=number, repeat=repeat, warmup=warmup,
                      start_iter=start_iter, stop_iter=stop_iter, amp=amp, channels_last=channels_last,
                      compile=compile_, workers=workers, seed=seed, profile=profile, cool_down=cool_down,
                      extra=list(ctx.args))
    raise typer.Exit(run_command(opts))


SLURM_HELP = """Write (and with --submit, submit) an sbatch script that runs a workload on Slurm nodes.

srun starts one torchrun agent per node inside `apptainer exec --nv` (or on the nodes' Python
with --runtime host); the agents meet at a rendezvous on the first node; rank 0 writes one
result with every rank's numbers into RESULTS/<run-id>/, next to the script and Slurm's log.

Examples:

  dnnbench slurm resnet50 --image dnnbench_ngc-24.10.sif --nodes 2 --gpus-per-node 8 --partition gpu --time 30 --scaling --submit

  dnnbench slurm bert --base ngc-24.10 --nodes 4 --gpus-per-node 4 --setup 'module load apptainer' --dry-run

Options after `--` go to the workload unchanged."""


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False}, help=SLURM_HELP)
def slurm(
    ctx: typer.Context,
    workload: str = typer.Argument(..., help="Workload name (`dnnbench workloads` lists them)."),
    nodes: int = typer.Option(1, "--nodes", "-N", help="Nodes (one torchrun agent each)."),
    gpus_per_node: int = typer.Option(0, "--gpus-per-node", "-G", help="GPUs per node, one process each; 0 runs on CPUs (gloo)."),
    nproc_per_node: Optional[int] = typer.Option(None, "--nproc-per-node", help="CPU runs: processes per node (default 1)."),
    partition: Optional[str] = typer.Option(None, "--partition", "-p", help="Slurm partition."),
    time_limit: Optional[str] = typer.Option(None, "--time", "-t", help="Slurm time limit: minutes, H:MM:SS or D-HH:MM:SS."),
    account: Optional[str] = typer.Option(None, "--account", "-A", help="Slurm account to charge."),
    cpus_per_task: Optional[int] = typer.Option(None, "--cpus-per-task", help="Cores per node's task (DataLoader workers need them)."),
    sbatch_arg: List[str] = typer.Option([], "--sbatch-arg", help="Extra sbatch option, e.g. --sbatch-arg=--qos=high (repeatable; overrides the ones above)."),
    setup: List[str] = typer.Option([], "--setup", help="Shell line run before srun, e.g. 'module load apptainer' (repeatable)."),
    env: List[str] = typer.Option([], "--env", help="KEY=VALUE for the run, e.g. NCCL_SOCKET_IFNAME=ib0 (repeatable)."),
    runtime: str = typer.Option("singularity", "--runtime", "-r", help="singularity (= apptainer) or host."),
    image: Optional[str] = typer.Option(None, "--image", "-i", help=".sif file on the shared filesystem."),
    base: Optional[str] = typer.Option(None, "--base", "-b", help="Use dnnbench_<base>.sif here (see `dnnbench build --format singularity`)."),
    data: Optional[Path] = typer.Option(None, "--data", "-d", help="Dataset folder, on the shared filesystem (read-only at /data)."),
    results: Path = typer.Option(Path("results"), "--results", help="Results folder (shared); the run goes in RESULTS/<run-id>/."),
    run_id: Optional[str] = typer.Option(None, "--run-id", help="Name of the run folder."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Per-GPU batch size."),
    number: Optional[int] = typer.Option(None, "--number", help="Iterations per timed window."),
    repeat: Optional[int] = typer.Option(None, "--repeat", help="Timed windows."),
    warmup: Optional[int] = typer.Option(None, "--warmup", help="Untimed iterations first."),
    amp: Optional[str] = typer.Option(None, "--amp", help="Mixed precision: fp16 or bf16."),
    channels_last: bool = typer.Option(False, "--channels-last", help="NHWC memory format."),
    workers: Optional[int] = typer.Option(None, "--workers", help="DataLoader workers for real data."),
    scaling: bool = typer.Option(False, "--scaling", help="Run one process first as the reference: the result gets scaling efficiency."),
    submit: bool = typer.Option(False, "--submit", help="Submit the script with sbatch."),
    wait: bool = typer.Option(False, "--wait", help="With --submit: follow the job's log until it ends (Ctrl-C cancels it)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the script; write and submit nothing."),
):
    from .run import RunOptions
    from .slurm import SlurmOptions, slurm_command
    opts = RunOptions(workload=workload, data=data, runtime=runtime, image=image, base=base, results=results,
                      run_id=run_id, batch_size=batch_size, number=number, repeat=repeat, warmup=warmup, amp=amp,
                      channels_last=channels_last, workers=workers, extra=list(ctx.args))
    raise typer.Exit(slurm_command(SlurmOptions(
        run=opts, nodes=nodes, gpus_per_node=gpus_per_node, nproc_per_node=nproc_per_node, partition=partition,
        time=time_limit, account=account, cpus_per_task=cpus_per_task, sbatch_args=sbatch_arg, setup=setup,
        env=env, scaling=scaling, submit=submit, wait=wait), dry_run))


@app.command()
def workloads():
    """List the workloads: dataset layout, unit, the reference each follows, its parameters and how it differs."""
    from rich.markup import escape
    from rich.table import Table

    from dnnbench.workloads import WORKLOADS
    from .console import out
    table = Table(title="workloads", show_lines=True)
    for col, kw in (("workload", {"no_wrap": True}), ("--data", {"no_wrap": True}), ("unit", {"no_wrap": True}),
                    ("M params", {"no_wrap": True, "justify": "right"}),
                    ("reference (paper or code, config, data)", {"ratio": 1}), ("differs", {"ratio": 1})):
        table.add_column(col, **kw)
    for name, spec in sorted(WORKLOADS.items()):
        table.add_row(name, spec.data_kind or "synthetic", f"{spec.unit}/s",
                      f"{spec.params_m:.2f}" if spec.params > 1 else "-", escape(spec.reference), escape(spec.differs))
    out.print(table)


data_app = typer.Typer(help="Datasets: prepare real ones from their archives, verify them, make fake ones.", no_args_is_help=True)
app.add_typer(data_app, name="data")


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
    from .data import fake_command
    fake_command(kind, to, images, classes, size, workers)


@data_app.command("prepare")
def data_prepare(
    kind: str = typer.Argument(..., help="imagenet (ILSVRC2012)."),
    src: Path = typer.Option(..., "--from", help="Folder with ILSVRC2012_img_train.tar, ILSVRC2012_img_val.tar "
                                                 "and ILSVRC2012_devkit_t12.tar.gz (read only, never changed)."),
    to: Path = typer.Option(..., "--to", help="Folder to fill with train/<wnid>/ and val/<wnid>/."),
    val_map: Optional[Path] = typer.Option(None, "--val-map", help="Val labels instead of the devkit: lines "
                                           "'ILSVRC2012_val_00000001.JPEG n01751748' (valprep.sh and "
                                           "LOC_val_solution.csv work too)."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Classes extracted at once (default: cores, at most 8)."),
):
    """Extract the ImageNet tars into the layout the workloads read: nested train tars, val sorted
    into class folders. Checks disk space first; interrupt and rerun to resume; a finished
    folder is a no-op."""
    from .prepare import prepare_command
    prepare_command(kind, src, to, val_map, workers)


@data_app.command("verify")
def data_verify(
    path: Path = typer.Argument(..., help="Dataset folder."),
    kind: str = typer.Option(..., "--kind", "-k", help="imagenet, coco, text or ratings."),
    deep: bool = typer.Option(False, "--deep", help="Also open every image (slow)."),
):
    """Check a dataset's layout the way the workloads read it; say exactly what is wrong."""
    from .data import verify_command
    raise typer.Exit(verify_command(path, kind, deep))


@app.command()
def report(
    results: List[Path] = typer.Argument(..., help="Result files or folders (searched for result.json)."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, csv, md, json or html."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="Targets: YAML/JSON {job: throughput}, or a results folder."),
    weight: List[str] = typer.Option([], "--weight", help="JOB=W (or WORKLOAD=W) weight in the score (repeatable)."),
    tolerance: float = typer.Option(0.05, "--tolerance", help="A job passes at mean >= target x (1 - tolerance)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
    plots: Optional[Path] = typer.Option(None, "--plots", help="Write PNG plots into this folder."),
    wide_csv: Optional[Path] = typer.Option(None, "--wide-csv", help="Also write a Lambda-style CSV (system x job)."),
):
    """Mean, sd, sd% and n per job from raw result files; against a baseline: diff %, pass/fail,
    and a score (weighted geometric mean of ratios). Exit 1 when a job fails its target."""
    from .report import report_command
    raise typer.Exit(report_command(results, fmt, baseline, weight, tolerance, output, plots, wide_csv))


@app.command()
def compare(a: Path = typer.Argument(..., help="Results of machine/image A."),
            b: Path = typer.Argument(..., help="Results of machine/image B.")):
    """Two result sets side by side, job by job, with the ratio B/A."""
    from .report import compare_command
    compare_command(a, b)


suite_app = typer.Typer(help="Suites: many runs from one YAML file.", no_args_is_help=True)
app.add_typer(suite_app, name="suite")


@suite_app.command("run")
def suite_run(
    file: Path = typer.Argument(..., help="Suite YAML (see suites/*.yaml)."),
    only: List[str] = typer.Option([], "--only", help="Run only jobs matching this glob (repeatable), e.g. 'resnet*'."),
    resume: bool = typer.Option(False, "--resume", help="Skip runs that already finished; redo cut-off ones."),
    results: Path = typer.Option(Path("results"), "--results", help="The suite's runs go in RESULTS/<suite name>/."),
    runtime: Optional[str] = typer.Option(None, "--runtime", help="Override every job's runtime."),
    image: Optional[str] = typer.Option(None, "--image", help="Override every job's image."),
    base: Optional[str] = typer.Option(None, "--base", help="Override every job's base."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List the runs; run nothing."),
):
    """Run a suite: sweeps x repeats; a failed, timed-out or OOM run is recorded and the suite
    goes on; --resume continues an interrupted suite."""
    from .suite import run_command as suite_run_command
    raise typer.Exit(suite_run_command(file, only=only, resume=resume, results=results,
                                       overrides={"runtime": runtime, "image": image, "base": base},
                                       dry_run=dry_run))


profile_app = typer.Typer(help="Profiles: what --profile left in a run, as tables.", no_args_is_help=True)
app.add_typer(profile_app, name="profile")


@profile_app.command("show")
def profile_show(result: Path = typer.Argument(..., help="A run folder or its result.json."),
                 top: int = typer.Option(10, "--top", help="Kernels/ops listed per profile.")):
    """Pipe utilization (ncu), top kernels and GPU-busy share (nsys, nvprof, rocprof), top ops
    (torch.profiler), and the GPU telemetry medians, of one run."""
    from .profile_show import show_command
    show_command(result, top)
