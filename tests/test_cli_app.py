"""The command line: help that explains, and one clear line for every user mistake."""

import pytest

from tests.helpers import ROOT, dnnbench, one_line_error


def test_help_lists_commands():
    res = dnnbench("--help", check=0)
    for cmd in ("bases", "render", "build", "pull", "images", "doctor", "run", "data", "workloads"):
        assert cmd in res.stdout
    run_help = dnnbench("run", "--help", check=0).stdout
    assert "--gpus" in run_help and "read-only" in run_help


def _groups():
    import typer

    from dnnbench.cli import app

    def walk(cmd, path):       # typer vendors click: a group is what has commands
        if hasattr(cmd, "commands"):
            if getattr(cmd, "no_args_is_help", False):      # `history` alone lists the history
                yield path
            for name, sub in cmd.commands.items():
                yield from walk(sub, [*path, name])
    return list(walk(typer.main.get_command(app), []))


@pytest.mark.parametrize("group", _groups(), ids=lambda g: " ".join(["dnnbench", *g]))
def test_a_group_called_bare_prints_its_help_as_help(group):
    """`dnnbench` or `dnnbench refs` alone: the help, line by line (click 8.2 hands it over as an
    error, which came out as one `error:` line full of \\n)."""
    from tests.helpers import cli_inprocess
    code, out, err = cli_inprocess(*group)
    text = out + err
    assert code == 2 and "\\n" not in text and not text.startswith("error:"), text[:300]
    assert text.startswith(f"Usage: {' '.join(['dnnbench', *group])} ") and "\nCommands:\n" in text, text[:300]


def test_bases_table():
    res = dnnbench("bases", check=0)
    assert "ngc-21.07" in res.stdout and "rocm-6.0.2" in res.stdout and "powerai-1.6.2" in res.stdout


@pytest.mark.parametrize("args,fragments", [
    (["render", "--base", "ngc-99.99"], ["malformed NGC base"]),
    (["render", "--base", "rocm-6.0.3"], ["unknown base", "rocm-6.0.2"]),
    (["render", "--base", "cpu", "--format", "podman"], ["unknown format"]),
    (["build", "--base", "cpu", "--build-arg", "NOEQUALS"], ["KEY=VALUE"]),
    (["build", "--base", "cpu", "--tag", "Bad Tag"], ["not a valid image tag"]),
    (["run", "resnt50", "--dry-run"], ["unknown workload", "resnet50"]),
    (["run", "resnet50", "--gpus", "0,,1", "--dry-run"], ["member 2 of 3 is empty"]),
    (["run", "resnet50", "--gpus", "0,0", "--dry-run"], ["twice"]),
    (["run", "resnet50", "--runtime", "podman", "--dry-run"], ["--runtime"]),
    (["run", "resnet50", "--batch-size", "0", "--dry-run"], ["--batch-size"]),
    (["run", "resnet50", "--start-iter", "5", "--dry-run"], ["go together"]),
    (["run", "resnet50", "--data", "/no/such/dir", "--dry-run"], ["/no/such/dir does not exist"]),
    (["run", "bert", "--data", "/tmp", "--dry-run"], ["no real-data path"]),
    (["run", "resnet50", "--run-id", "../escape", "--dry-run"], ["--run-id"]),
    (["run", "resnet50", "--runtime", "singularity", "--image", "/no/such.sif"], ["no such .sif"]),
    (["data", "fake", "mnist", "--to", "/tmp/x"], ["unknown dataset kind"]),
    # --env: one check (dnnbench.runs.environment) for run, train, slurm, suites and reproduce
    (["run", "resnet18", "--env", "NOVALUE", "--dry-run"], ["--env 'NOVALUE'", "KEY=VALUE"]),
    (["run", "resnet18", "--env", "1A=x", "--dry-run"], ["--env '1A'", "letters, digits"]),
    (["run", "resnet18", "--env", "A=b\x1b[2J", "--dry-run"], ["--env A", "printable"]),
    (["run", "resnet18", "--env", 'A="x"', "--dry-run"], ["--env A", "double quote"]),
    (["run", "resnet18", "--env", "DNNBENCH_RUN_ID=x", "--dry-run"], ["--env DNNBENCH_RUN_ID", "by dnnbench"]),
    (["run", "resnet18", "--env", "RANK=1", "--dry-run"], ["--env RANK", "by torchrun"]),
    (["run", "resnet18", "--env", "CUDA_VISIBLE_DEVICES=1", "--dry-run"], ["--env CUDA_VISIBLE_DEVICES", "--gpus"]),
    (["run", "resnet18", "-e", "SLURM_PROCID=1", "--dry-run"], ["--env SLURM_PROCID", "by Slurm"]),
    (["train", "resnet18", "--data", "/tmp", "--env", "MASTER_PORT=1", "--dry-run"], ["--env MASTER_PORT", "torchrun"]),
])
def test_user_mistakes_get_one_line(args, fragments, tmp_path):
    res = dnnbench(*args, cwd=tmp_path)
    one_line_error(res, *fragments)
    assert res.returncode == 2 and not list(tmp_path.iterdir())    # refused before anything is written


def test_not_a_dataset(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "a.jpg").write_bytes(b"x")
    res = dnnbench("run", "resnet50", "--data", tmp_path, "--dry-run")
    one_line_error(res, "not a valid imagenet dataset", "no class folders")


def test_unwritable_output_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    one_line_error(dnnbench("render", "--base", "cpu", "--output", blocker / "sub"), "cannot write to")
    one_line_error(dnnbench("run", "resnet18", "--results", blocker / "sub", "--runtime", "host"),
                   "not writable")


def test_gpu_request_without_gpus(tmp_path):
    """This machine has no NVIDIA GPU: asking for one is refused before anything starts."""
    res = dnnbench("run", "resnet18", "--runtime", "host", "--gpus", "0", "--results", tmp_path)
    one_line_error(res, "no NVIDIA GPU", "drop --gpus")


def test_docker_daemon_unreachable(tmp_path):
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    one_line_error(dnnbench("build", "--base", "cpu", "--log-dir", tmp_path, env=env), "cannot reach the Docker engine")
    one_line_error(dnnbench("run", "resnet18", "--results", tmp_path, env=env), "cannot reach the Docker engine")


def test_dry_run_prints_plan_and_docker_line(tmp_path, fake_imagenet):
    res = dnnbench("run", "inception_v3", "--data", fake_imagenet, "--image", "dnnbench:x", "--amp", "fp16",
                   "--results", tmp_path, "--run-id", "dry", "--dry-run", "--", "--lr", "0.2", check=0)
    assert '"workload": "inception_v3"' in res.stdout
    line = res.stdout.strip().splitlines()[-1]
    assert line.startswith("docker run --rm --init")
    assert f"-v {fake_imagenet}:/data:ro" in line
    assert "--data /data" in line and "--amp fp16" in line and line.endswith("--lr 0.2")
    assert not (tmp_path / "dry").exists()   # a dry run writes nothing


def test_workloads_list():
    res = dnnbench("workloads", check=0)
    for name in ("inception_v3", "maskrcnn", "ncf", "loader"):
        assert name in res.stdout


def test_an_uncatalogued_ngc_tag_is_planned_as_render_makes_it(tmp_path):
    """The dry run of a tag not in the catalog takes the nearest release's facts, as `render` does
    (its entrypoint and NGC's ulimits), with the same warning."""
    res = dnnbench("run", "resnet18", "--base", "ngc-24.11", "--results", tmp_path, "--dry-run", check=0)
    line = res.stdout.strip().splitlines()[-1]
    assert "--ulimit=memlock=-1:-1" in line and "--ulimit=stack=67108864:67108864" in line
    assert "--entrypoint /opt/nvidia/nvidia_entrypoint.sh dnnbench:ngc-24.11 python " in line
    rendered = dnnbench("render", "--base", "ngc-24.11", "--format", "docker", "--output", tmp_path / "r", check=0)
    assert "not in the catalog" in res.stderr and "not in the catalog" in rendered.stderr
    dockerfile = next((tmp_path / "r").rglob("Dockerfile*")).read_text()
    assert '"/opt/nvidia/nvidia_entrypoint.sh"' in dockerfile


def test_a_scripts_own_flags_after_the_double_dash_are_its_own(tmp_path):
    """`--data` after `--` is the script's own flag (word_language_model's main.py takes one), not
    an attempt to override dnnbench's: passed through unchanged; for a workload it is refused."""
    script = ROOT / "tests" / "fixtures" / "scripts" / "plain_loop.py"
    res = dnnbench("run", "--script", script, "--runtime", "host", "--results", tmp_path, "--dry-run",
                   "--", "--data", "/corpus", "--epochs", "1", check=0)
    assert res.stdout.strip().splitlines()[-1].endswith("plain_loop.py --data /corpus --epochs 1")
    one_line_error(dnnbench("run", "resnet18", "--runtime", "host", "--results", tmp_path, "--dry-run",
                            "--", "--data", "/x"), "would override")
