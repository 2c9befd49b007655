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


def test_sif_labels_listed(built_sif):
    res = dnnbench("images", "--sif-dir", built_sif.parent, check=0)
    assert built_sif.name[:20] in res.stdout
