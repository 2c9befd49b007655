"""Against real Apptainer: the tests' .sif (built from the NGC stand-in) imports dnnbench and runs a workload."""
import json
import subprocess

import pytest

from tests.helpers import dnnbench

pytestmark = pytest.mark.engine


def test_sif_imports_dnnbench(built_sif):
    res = subprocess.run(["apptainer", "exec", "--cleanenv", str(built_sif), "python3", "-c",
                          "import dnnbench, dnnbench.workloads; print(dnnbench.__version__)"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    from dnnbench import __version__
    assert res.stdout.strip() == __version__


def test_sif_run_writes_result_and_data_is_read_only(built_sif, tmp_path, fake_imagenet):
    dnnbench("run", "resnet18", "--runtime", "apptainer", "--image", built_sif, "--data", fake_imagenet,
             "--workers", "1", "--results", tmp_path, "--run-id", "s1", "--batch-size", "4", "--number", "2",
             "--repeat", "2", "--warmup", "1", check=0)
    data = json.loads((tmp_path / "s1" / "result.json").read_text())
    assert data["status"] == "ok" and data["host"]["runtime"] == "singularity" and data["synthetic"] is False
    assert "apptainer exec --cleanenv" in data["host"]["command"]
    from dnnbench.runs.launch import RunOptions, build_plan, execute
    plan = build_plan(RunOptions(workload="resnet18", runtime="singularity", image=str(built_sif),
                                 data=fake_imagenet, results=tmp_path, run_id="ro"))
    plan.argv = ["python3", "-c", "open('/data/intruder', 'w')"]
    _, code = execute(plan, quiet=True)
    assert code != 0 and "Read-only file system" in (tmp_path / "ro" / "log.txt").read_text()


# values Apptainer's --env flag splits or mangles unless dnnbench quotes them (a map flag: an
# argument with more than one '=' is read as a CSV line)
TRICKY = {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "A1": "a,b", "A2": 'x"y,z', "A3": 'k="v",w=2', "A4": "a=b,c=d",
          "A5": "sp ace's", "A6": "", "A7": "=", "A8": ",", "A9": 'in"side'}


def test_env_values_reach_a_sif_run_whole(built_sif, tmp_path):
    from dnnbench.runs.launch import RunOptions, build_plan, execute
    plan = build_plan(RunOptions(workload="resnet18", runtime="singularity", image=str(built_sif),
                                 results=tmp_path, run_id="env", env=TRICKY))
    plan.argv = ["python3", "-c", "import json, os; json.dump({k: os.environ.get(k) for k in %r}, "
                 "open('/results/env.json', 'w'))" % sorted(TRICKY)]
    execute(plan, quiet=True)   # writes no result.json: only what it saw matters here
    assert (tmp_path / "env" / "env.json").exists(), (tmp_path / "env" / "log.txt").read_text()[-2000:]
    assert json.loads((tmp_path / "env" / "env.json").read_text()) == TRICKY


def test_sif_labels_listed(built_sif):
    res = dnnbench("images", "--sif-dir", built_sif.parent, check=0)
    assert built_sif.name[:20] in res.stdout
