"""A user's script measured without a change: the in-container instrumentation
(dnnbench.workloads.instrument) on scripts written in the styles users write."""
import json
import subprocess
import sys

import pytest

from dnnbench.workloads import instrument, stats
from tests.helpers import ROOT

SCRIPTS = ROOT / "tests" / "fixtures" / "scripts"
FAST = ["--warmup", "2", "--number", "3", "--repeat", "3"]


def _instrument(tmp_path, script, *args, opts=FAST, launcher=(sys.executable,), timeout=240):
    out = tmp_path / "r"
    cmd = [*launcher, "-m", "dnnbench.workloads.instrument", "--results", str(out), *opts,
           str(SCRIPTS / script), *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp_path)
    data = json.loads((out / "result.json").read_text()) if (out / "result.json").exists() else None
    return res, data


def test_plain_loop_is_timed_in_windows_of_optimizer_steps(tmp_path):
    res, data = _instrument(tmp_path, "plain_loop.py", opts=FAST + ["--unit", "samples"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert data["status"] == "ok" and data["unit"] == "samples/s"
    # 3 windows of 3 steps of batch 16: items come from the DataLoader's batches
    assert [w["items"] for w in data["windows"]] == [48, 48, 48]
    assert data["throughput"]["statistic"] == stats.STATISTIC and data["throughput"]["total"]["value"] > 0
    assert "done" not in res.stdout                       # stopped after the windows, by default
    assert data["script"]["exit_code"] == 0 and len(data["script"]["sha256"]) == 64
    assert data["verdict"]["label"] and data["data_wait_fraction"] is not None


def test_amp_script_with_its_own_arguments_and_run_to_end(tmp_path):
    res, data = _instrument(tmp_path, "amp_scaler.py", "--epochs", "1", "-b", "4",
                            opts=FAST + ["--run-to-end"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert "epoch 0 loss" in res.stdout                   # left to finish its epoch
    assert data["status"] == "ok" and [w["items"] for w in data["windows"]] == [12, 12, 12]
    assert data["script"]["argv"] == ["--epochs", "1", "-b", "4"]


def test_tensor_loop_counts_items_the_script_declares(tmp_path):
    res, data = _instrument(tmp_path, "tensor_loop.py")
    assert res.returncode == 0, res.stderr[-2000:]
    assert [w["items"] for w in data["windows"]] == [96, 96, 96]


def test_tensor_loop_without_a_size_says_how_to_give_one(tmp_path):
    script = tmp_path / "bare.py"
    script.write_text((SCRIPTS / "tensor_loop.py").read_text().replace('os.environ["DNNBENCH_ITEMS_PER_STEP"] = "32"', ""))
    res = subprocess.run([sys.executable, "-m", "dnnbench.workloads.instrument", "--results", str(tmp_path / "r"),
                          *FAST, str(script)], capture_output=True, text=True, timeout=240)
    assert res.returncode == instrument.EXIT_USAGE
    assert "--items-per-step" in res.stderr and "Traceback" not in res.stderr
    res = subprocess.run([sys.executable, "-m", "dnnbench.workloads.instrument", "--results", str(tmp_path / "r2"),
                          *FAST, "--items-per-step", "32", str(script)], capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-2000:]


def test_ddp_script_under_torchrun_gathers_every_rank(tmp_path):
    launcher = (sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1", "--nproc_per_node=2")
    res, data = _instrument(tmp_path, "ddp.py", launcher=launcher)
    assert res.returncode == 0, res.stderr[-3000:]
    assert data["status"] == "ok" and data["world_size"] == 2
    assert sorted(r["rank"] for r in data["ranks"]) == [0, 1]
    per, total = data["throughput"]["per_gpu"]["value"], data["throughput"]["total"]["value"]
    assert total == pytest.approx(2 * per)


def test_a_crashing_script_is_the_runs_failure_with_a_result(tmp_path):
    res, data = _instrument(tmp_path, "crash.py")
    assert res.returncode == instrument.EXIT_ERROR
    assert data["status"] == "error" and "ran out of coffee" in data["message"]
    assert "the dataset ran out of coffee" in res.stderr   # the script's own traceback, in its log


def test_a_script_that_never_steps_says_what_was_looked_for(tmp_path):
    res, data = _instrument(tmp_path, "no_optimizer.py")
    assert res.returncode == instrument.EXIT_NO_STEPS
    assert data["status"] == "error" and "optimizer" in data["message"] and "DataLoader" in data["message"]
    assert res.stderr.count("error:") == 1


def test_too_few_steps_and_bad_counts(tmp_path):
    res, data = _instrument(tmp_path, "crash.py", opts=["--warmup", "0", "--number", "1", "--repeat", "5"])
    assert data["status"] == "error"
    res, _ = _instrument(tmp_path, "plain_loop.py", opts=["--number", "0"])
    assert res.returncode == instrument.EXIT_USAGE and "--number" in res.stderr
    res, _ = _instrument(tmp_path, "missing.py")
    assert res.returncode == instrument.EXIT_USAGE and "not a readable regular file" in res.stderr


# --- through `dnnbench run --script`, on every runtime ------------------------------------------

from tests.helpers import dnnbench  # noqa: E402

TIMING = ["--warmup", "1", "--number", "2", "--repeat", "3"]


def _run_result(tmp_path, run_id):
    return json.loads((tmp_path / run_id / "result.json").read_text())


def test_run_script_on_the_host_runtime(tmp_path):
    res = dnnbench("run", "--script", SCRIPTS / "plain_loop.py", "--runtime", "host", "--results", tmp_path,
                   "--run-id", "s1", "--unit", "samples", *TIMING)
    assert res.returncode == 0, res.stderr[-3000:]
    data = _run_result(tmp_path, "s1")
    assert data["status"] == "ok" and data["workload"] == "script-plain_loop" and data["unit"] == "samples/s"
    assert data["script"]["path"].endswith("plain_loop.py") and data["host"]["runtime"] == "host"
    assert len(data["windows"]) == 3 and "done" not in (tmp_path / "s1" / "log.txt").read_text()


def test_run_script_with_two_processes_on_the_cpu(tmp_path):
    res = dnnbench("run", "--script", SCRIPTS / "ddp.py", "--runtime", "host", "--nproc", "2",
                   "--results", tmp_path, "--run-id", "s2", *TIMING)
    assert res.returncode == 0, res.stderr[-3000:]
    data = _run_result(tmp_path, "s2")
    assert data["world_size"] == 2 and sorted(r["rank"] for r in data["ranks"]) == [0, 1]


def test_run_script_failures_are_one_line_each(tmp_path):
    res = dnnbench("run", "--script", SCRIPTS / "crash.py", "--runtime", "host", "--results", tmp_path,
                   "--run-id", "s3", *TIMING)
    assert res.returncode == 1 and _run_result(tmp_path, "s3")["status"] == "error"
    assert "ran out of coffee" in (tmp_path / "s3" / "log.txt").read_text()
    for argv, fragment in ((["--script", tmp_path / "missing.py"], "missing"),
                           (["--script", tmp_path], "main.py or train.py"),
                           (["resnet18", "--script", SCRIPTS / "crash.py"], None),
                           (["--script", SCRIPTS / "crash.py", "--amp", "bf16"], "--amp")):
        res = dnnbench("run", *argv, "--runtime", "host", "--results", tmp_path / "x", "--dry-run")
        if fragment is None:        # a positional word with --script is the script's own argument
            assert res.returncode == 0, res.stderr
            continue
        assert res.returncode == 2 and res.stderr.count("error:") == 1 and fragment in res.stderr, res.stderr
        assert "Traceback" not in res.stderr


def test_script_and_built_in_workload_agree_on_the_same_data(tmp_path, fake_imagenet):
    """The same step (resnet18, batch 4, the same fake ImageNet, 2 workers) timed by the harness
    and by the instrumentation of a script: the same kind of figure, from windows of the same
    items. (Not a ratio of the two: two windows of three steps each, measured a minute apart on
    a machine with other work, differed 5x beside two CPU hogs.)"""
    common = ["--runtime", "host", "--results", tmp_path, "--data", fake_imagenet, "--warmup", "2",
              "--number", "3", "--repeat", "2"]
    a = dnnbench("run", "resnet18", "--batch-size", "4", "--workers", "2", "--run-id", "builtin", *common)
    b = dnnbench("run", "--script", SCRIPTS / "imagenet_like.py", "--unit", "images", "--run-id", "script",
                 *common, "--", "-b", "4", "-j", "2")
    assert a.returncode == 0 and b.returncode == 0, a.stderr[-2000:] + b.stderr[-2000:]
    builtin, script = _run_result(tmp_path, "builtin"), _run_result(tmp_path, "script")
    assert [w["items"] for w in script["windows"]] == [w["items"] for w in builtin["windows"]] == [12, 12]
    for data in (builtin, script):
        total, windows = data["throughput"]["total"], data["windows"]
        assert data["throughput"]["statistic"] == "sum_items/sum_seconds" and data["unit"] == "images/s"
        assert total["value"] == pytest.approx(sum(w["items"] for w in windows) / sum(w["seconds"] for w in windows))
        assert total["n"] == 2 and total["value"] > 0


@pytest.mark.engine
def test_run_script_in_the_docker_image(built_image, tmp_path):
    res = dnnbench("run", "--script", SCRIPTS / "amp_scaler.py", "--image", built_image, "--results", tmp_path,
                   "--run-id", "d1", *TIMING, "--", "--epochs", "3", "-b", "4")
    assert res.returncode == 0, res.stderr[-3000:]
    data = _run_result(tmp_path, "d1")
    assert data["status"] == "ok" and data["script"]["path"] == "/script/amp_scaler.py"
    assert [w["items"] for w in data["windows"]] == [8, 8, 8]


@pytest.mark.engine
def test_run_script_under_apptainer(built_sif, tmp_path):
    res = dnnbench("run", "--script", SCRIPTS / "plain_loop.py", "--runtime", "singularity", "--image", built_sif,
                   "--results", tmp_path, "--run-id", "a1", *TIMING)
    assert res.returncode == 0, res.stderr[-3000:]
    assert _run_result(tmp_path, "a1")["status"] == "ok"
