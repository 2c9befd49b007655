"""`watch`, `bisect` and `compare-images` with `--slurm`: every run of theirs a one-node Slurm job,
through `dnnbench slurm`'s own script, submission, wait and cancel, its result in the step's own
folder. The script and the option checks without a cluster; then a bisect over two .sif releases
and a job that fails, on the namespace cluster (tests/conftest.py `slurm_cluster`)."""
from __future__ import annotations

import json
import re

import pytest

from dnnbench.cli.runs import SLURM_PARAMS
from tests.helpers import cli_inprocess, dnnbench, one_line_error
from tests.releases import sif_release
from tests.test_campaigns_bisect import GOOD, SLOW, TINY, WORKLOAD

COMMANDS = ("watch", "bisect", "compare-images")
# a value each Slurm placement option takes (the table's every row has one: checked below)
GIVEN = {"partition": "gpu", "time": "30", "account": "lab", "cpus_per_task": "4",
         "sbatch_args": "--qos=high", "setup": "module load apptainer"}


def _flag(name: str) -> str:
    return SLURM_PARAMS[name][1].param_decls[0]


def _sifs(tmp_path, n=2) -> list[str]:
    """Files that pass for .sif images until something runs them (a dry run runs nothing); each
    its own bytes: one digest is one image, which a comparison would not measure twice."""
    made = []
    for i in range(n):
        path = tmp_path / f"r{i + 1}.sif"
        path.write_bytes(b"#!/usr/bin/env run-singularity\nSIF_MAGIC\n" + f"release {i + 1}\n".encode())
        made.append(str(path))
    return made


def test_every_slurm_option_has_a_value_here():
    assert set(GIVEN) == set(SLURM_PARAMS)


def _param(path: str, name: str):
    import typer

    from dnnbench.cli import app
    cmd = typer.main.get_command(app)
    for word in path.split():
        cmd = cmd.commands[word]
    return next(p for p in cmd.params if p.name == name)


@pytest.mark.parametrize("name", sorted(SLURM_PARAMS))
def test_slurm_and_the_comparisons_take_one_definition_of_each_placement_option(name):
    """Drawn from the table: `slurm` and each comparison carry the same flags and help."""
    slurm = _param("slurm", name)
    for path in COMMANDS:
        mine = _param(path, name)
        assert (mine.opts, mine.help, mine.default) == (slurm.opts, slurm.help, slurm.default), path


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name", sorted(GIVEN))
def test_a_slurm_option_without_slurm_is_refused_not_ignored(command, name, tmp_path):
    code, out, err = cli_inprocess(command, WORKLOAD, "--images", ",".join(_sifs(tmp_path)), "--runtime",
                                   "singularity", f"{_flag(name)}={GIVEN[name]}", "--results", tmp_path / "r",
                                   "--dry-run")
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and lines == [f"error: {_flag(name)} places the runs on Slurm: add --slurm"], err + out
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("args, said", [
    ([], "--slurm runs the images with Apptainer: add --runtime singularity (not docker)"),
    (["--runtime", "singularity", "--gpus", "all"], "--gpus all: under --slurm, name the GPUs"),
    (["--runtime", "singularity", "--time", "1:2:3:4"], "--time '1:2:3:4': use Slurm's forms"),
    (["--runtime", "singularity", "--sbatch-arg", "qos=high"], "--sbatch-arg 'qos=high': give a long sbatch option"),
    (["--runtime", "singularity", "--partition", "a b"], "--partition 'a b': letters, digits"),
])
def test_slurm_mistakes_get_one_line_before_any_job(args, said, tmp_path):
    """Checked as `dnnbench slurm` checks them, for every step, before the first job."""
    one_line_error(dnnbench("watch", WORKLOAD, "--images", ",".join(_sifs(tmp_path)), "--slurm", *args,
                            "--results", tmp_path / "r"), said)
    assert not (tmp_path / "r").exists()


def test_the_dry_run_shows_a_steps_one_node_job_and_writes_nothing(tmp_path):
    sifs = _sifs(tmp_path, 3)
    res = dnnbench("bisect", WORKLOAD, "--images", ",".join(sifs), "--runtime", "singularity", "--slurm",
                   "--gpus", "0,1", "--partition", "gpu", "--time", "30", "--account", "lab",
                   "--sbatch-arg=--qos=high", "--setup", "module load apptainer", "--results", tmp_path / "r",
                   "--run-id", "b", "--dry-run", *TINY, check=0)
    text = res.stdout
    assert "3 images, in order, each run a one-node Slurm job" in " ".join(text.split())
    script = text[text.index("#!/bin/bash"):]
    step = tmp_path / "r" / "b" / "00-r1.sif"
    directives = re.findall(r"^#SBATCH (.*)$", script, re.M)
    assert directives == ["--job-name=dnnbench-vae", "--nodes=1", "--ntasks-per-node=1",
                          f"--output={step}/slurm-%j.out", "--no-requeue", "--gpus-per-node=2", "--partition=gpu",
                          "--time=30", "--account=lab", "--qos=high"]
    assert "\nmodule load apptainer\n" in script and f"\ncd {step}\n" in script
    assert f"--bind {step}:/results" in script and f" {sifs[0]} " in script      # the step's folder, image
    assert "--run-id b.00-r1.sif" in script and "--nproc_per_node=2" in script
    assert not (tmp_path / "r").exists()


@pytest.fixture
def sif_releases(built_sif, tmp_path):
    """Two releases of the test .sif: the second's optimizer step ten times slower."""
    made = [sif_release(built_sif, tmp_path / "sifs", name, delays) for name, delays in (("s1", GOOD), ("s2", SLOW))]
    yield [str(p) for p in made]
    for path in made:      # gigabytes each: not left for pytest's last three runs to keep
        path.unlink()


@pytest.mark.timeout(1800)
def test_bisect_runs_each_step_as_a_slurm_job_in_the_rounds_order(slurm_cluster, sif_releases, tmp_path,
                                                                     monkeypatch):
    """Six to eight jobs, a minute each on a busy machine: the two releases judged in three or four
    alternated rounds (s1 s2, s2 s1, s1 s2, ...), each run a one-node job submitted after the one
    before it ended; then the same command reads every step back. (bisect and not watch: watch
    surveys both releases first, two jobs more, and the Slurm stream must stay short; both go
    through the same `measure`.)"""
    monkeypatch.setenv("DNNBENCH_DB", str(tmp_path / "history.db"))
    args = ["bisect", WORKLOAD, "--images", ",".join(sif_releases), "--runtime", "singularity", "--slurm",
            "--time", "10", "--results", tmp_path, "--run-id", "b", "--tolerance", "0.1", "--rounds", "4", *TINY]
    res = dnnbench(*args, timeout=1700)
    assert res.returncode == 0, res.stdout + res.stderr
    text = " ".join(res.stdout.split())
    assert f"first slower: {sif_releases[1]} (-" in text and f"last good: {sif_releases[0]}" in text, text
    results = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "b").glob("*/result.json")}
    jobs = {}
    for folder, data in results.items():    # each a Slurm job's, in the step's own folder
        host = data["host"]
        assert data["status"] == "ok" and host["runtime"] == "slurm/singularity", (folder, host)
        assert host["slurm_states"][-1] == "COMPLETED" and host["image"] in sif_releases
        log = (tmp_path / "b" / folder / f"slurm-{host['slurm_job']}.out").read_text()
        assert f"[dnnbench] job {host['slurm_job']}: 1 agents on node" in log
        jobs[folder] = int(host["slurm_job"])
    # one job at a time, in the rounds' order: round k of s1 before s2 when k is odd, after it when even
    order = [folder[:2] for _, folder in sorted((job, folder) for folder, job in jobs.items())]
    assert order == ["00", "01", "01", "00", "00", "01", "01", "00"][:len(order)] and len(order) in (6, 8), jobs
    listed = json.loads(dnnbench("history", "-f", "json", check=0).stdout)
    assert sorted(r["path"] for r in listed) == sorted(str(p) for p in (tmp_path / "b").glob("*/result.json"))
    # again: every step read back (the job's result carries the image's digest, as a local run's), no job
    logs = sorted((tmp_path / "b").glob("*/slurm-*.out"))
    again = dnnbench(*args, timeout=600)
    assert again.returncode == 0 and f"(0 run now, {len(jobs)} read back)" in " ".join(again.stdout.split()), again.stdout
    assert "submitted" not in again.stderr and sorted((tmp_path / "b").glob("*/slurm-*.out")) == logs


def test_a_failed_job_ends_the_command_in_one_line_naming_the_job_and_its_log(slurm_cluster, tmp_path):
    """The job's setup line fails on the node (a `module load` that does not exist): seconds, no
    container started."""
    args = ["bisect", WORKLOAD, "--images", ",".join(_sifs(tmp_path)), "--runtime", "singularity", "--slurm",
            "--setup", "exit 3", "--results", tmp_path / "r", "--run-id", "b", *TINY]
    jobs = []
    for _ in range(2):   # again: the step is submitted again in its slot, past the failed result there
        line = one_line_error(dnnbench(*args, timeout=300), ": Slurm job ",
                              " ended error: the run wrote no result (exit 3)")
        job = re.search(r"Slurm job (\d+) ", line).group(1)
        log = re.search(r"\(its log: (\S+)\)$", line).group(1)
        assert log == str(tmp_path / "r" / "b" / "00-r1.sif" / f"slurm-{job}.out")    # the first step's, there
        assert tmp_path.joinpath(log).is_file() and (tmp_path / "r" / "b" / "00-r1.sif" / "job.sbatch").is_file()
        jobs.append(job)
    assert jobs[0] != jobs[1]
