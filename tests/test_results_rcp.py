"""`dnnbench mlperf plan` (toolkit/results/rcp.py) against mlperf-logging's own rcp_checker:
the RCP figures it prints are the ones check_directory judges real MLLOG logs by (written here
by mlperf-logging's own mllog), the range is said, and bad input is one line."""
import json
import logging
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnbench.results import rcp
from tests.helpers import cli_inprocess, dnnbench, one_line_error

pytest.importorskip("mlperf_logging")

SAMPLES_KEYED = {"llama2_70b_lora", "flux1", "llama31_405b", "llama31_8b", "gpt_oss_20b", "deepseekv3_671b",
                 "qwen35_397b_grpo", "dlrmv4", "stable_diffusion"}


def plan(*args):
    code, out, err = cli_inprocess("mlperf", "plan", *args)
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


def _logs(folder, benchmark, batch, value, runs):
    """`runs` result_N.txt files converging at `value`, written by mlperf-logging's mllog."""
    from mlperf_logging.mllog import constants
    from mlperf_logging.mllog.mllog import MLLogger
    for i in range(runs):
        path = folder / f"result_{i}.txt"
        logger = logging.getLogger(f"rcp-test-{folder.name}-{i}")
        logger.propagate = False
        logger.setLevel(logging.INFO)
        handler = logging.FileHandler(path, mode="w")   # a fresh log each time
        logger.addHandler(handler)
        ml = MLLogger(logger=logger)
        ml.event(key=constants.SUBMISSION_BENCHMARK, value=benchmark)
        ml.event(key=constants.GLOBAL_BATCH_SIZE, value=batch)
        if benchmark == "stable_diffusion":
            ml.event(key=constants.EVAL_ACCURACY, value=80.0, metadata={"samples_count": value, "metric": "FID"})
            ml.event(key=constants.EVAL_ACCURACY, value=0.2, metadata={"samples_count": value, "metric": "CLIP"})
        elif benchmark in SAMPLES_KEYED:
            ml.event(key=constants.EVAL_ACCURACY, value=0.5, metadata={"samples_count": value})
        else:
            ml.event(key=constants.EVAL_ACCURACY, value=0.5, metadata={"epoch_num": value})
        ml.end(key=constants.RUN_STOP, metadata={"status": "success"})
        logger.removeHandler(handler)
        handler.close()


def _checker(folder, ruleset, benchmark, batch, value):
    from mlperf_logging.rcp_checker import rcp_checker
    _logs(folder, benchmark, batch, value, 9 if benchmark == "unet3d" else 3)
    return rcp_checker.check_directory(str(folder), "training", ruleset, False, False, rcp_pass="pruned_rcps")


# one case per way check_directory finds the RCP, and the benchmarks with their own rules
@pytest.mark.parametrize("ruleset, benchmark, batch, basis", [
    ("4.0.0", "resnet", 1632, "rcp"), ("4.0.0", "resnet", 2048, "interpolated"),
    ("4.0.0", "resnet", 4096, "interpolated"),      # a full RCP the pruning dropped
    ("4.0.0", "resnet", 800, "below"), ("5.1.0", "bert", 3000, "interpolated"),
    ("4.0.0", "unet3d", 60, "interpolated"), ("4.0.0", "stable_diffusion", 700, "interpolated"),
    ("5.1.0", "llama31_405b", 3000, "interpolated"), ("6.1.0", "llama2_70b_lora", 24, "interpolated"),
])
def test_the_plans_min_and_mean_are_where_the_rcp_checker_judges(tmp_path, ruleset, benchmark, batch, basis):
    """Runs at the plan's min - 0.005 fail and at min + 0.005 pass; between min and mean the
    checker scales the score by mean / the runs' mean: the plan's mean to 1e-6."""
    p = rcp.point(rcp.load(benchmark, ruleset), batch)
    assert p["basis"] == basis
    assert not _checker(tmp_path, ruleset, benchmark, batch, p["min"] - 0.005)[0]
    assert _checker(tmp_path, ruleset, benchmark, batch, p["min"] + 0.005)[0]
    v = (p["min"] + p["mean"]) / 2
    v = v if benchmark in SAMPLES_KEYED else round(v, 3)
    ok, _, norm = _checker(tmp_path, ruleset, benchmark, batch, v)
    assert ok and norm * v == pytest.approx(p["mean"], abs=1e-6)


def test_above_every_rcp_the_checker_and_the_plan_say_missing(tmp_path):
    assert rcp.point(rcp.load("resnet", "4.0.0"), 100000)["basis"] == "none"
    ok, message, _ = _checker(tmp_path, "4.0.0", "resnet", 100000, 500.0)
    assert not ok and message.startswith("Missing RCP")


def test_plan_resnet_prints_the_rcp_epochs_in_80_columns():
    res = dnnbench("mlperf", "plan", "resnet", "--ruleset", "4.0.0", "--batch-sizes", "1632,2048,100000",
                   "--throughput", "1632=2600,2048=3100+-40", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stdout + res.stderr
    rows = {ln.split()[0]: ln.split() for ln in res.stdout.splitlines() if ln.strip()[:1].isdigit()}
    assert rows["1632"][1:4] == ["RCP", "35.00", "33.80"]
    assert rows["2048"][1:3] == ["1632-3264", "35.04"]
    assert rows["2048"][-1] == "shortest" and "shortest" not in rows["1632"]
    assert "no RCP covers batch 100000" in res.stdout
    assert max(len(ln) for ln in res.stdout.splitlines()) <= 80, res.stdout


@pytest.mark.parametrize("benchmark, rate, says", [
    ("resnet", "1632=2600", "minutes = mean x 1,281,167 samples / items/s"),
    ("llama2_70b_lora", "8=1.5", "minutes = mean samples / items/s"),   # counted in samples: no "x 1"
])
def test_the_plan_says_how_its_minutes_are_made(benchmark, rate, says):
    res = plan(benchmark, "--throughput", rate)
    assert res.returncode == 0 and says in " ".join(res.stdout.split()), res.stdout
    assert "x 1 /" not in res.stdout


def test_a_dnnbench_workload_name_is_its_mlperf_benchmark():
    res = plan("resnet50", "--ruleset", "4.0.0", "--format", "json")
    assert res.returncode == 0 and json.loads(res.stdout)["benchmark"] == "resnet"
    newest = json.loads(plan("ssd300", "--format", "json").stdout)      # ssd's successor, newest ruleset
    assert newest["benchmark"] == "retinanet" and newest["ruleset"] == "training_5.1.0"


def test_json_holds_every_figure_the_table_shows():
    res = plan("resnet", "--ruleset", "4.0.0", "--batch-sizes", "1632,2048,100000", "--throughput", "2048=3100+-40",
               "--format", "json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["unit"] == "epochs" and data["samples_per_epoch"] == 1281167
    assert data["pruned_batch_sizes"] == [1632, 3264, 32768, 49152, 67840]
    by = {p["batch_size"]: p for p in data["plan"]}
    assert by[1632]["basis"] == "rcp" and by[1632]["mean"] == pytest.approx(35.0)
    assert by[2048]["between"] == [1632, 3264] and by[2048]["shortest"] is True
    assert by[2048]["time_s"] == pytest.approx(by[2048]["mean"] * 1281167 / 3100)
    low, high = by[2048]["time_band_s"]
    assert low < by[2048]["time_s"] < high
    assert by[100000]["basis"] == "none" and by[100000]["mean"] is None


def test_job_throughput_comes_from_the_history_store(tmp_path):
    """--job: the job's mean throughput and CI from the store, at its global batch size (batch
    size x world size of its result), or the one given as BS=JOB."""
    db = tmp_path / "h.db"
    assert dnnbench("history", "import", "tests/fixtures/results/cpu-suite", "--db", db).returncode == 0
    res = plan("resnet", "--ruleset", "4.0.0", "--job", "resnet18-bs4", "--job", "64=resnet18-bs2", "--db", db,
               "--format", "json")
    assert res.returncode == 0, res.stderr
    by = {p["batch_size"]: p for p in json.loads(res.stdout)["plan"]}
    assert by[4]["throughput"]["source"] == "job resnet18-bs4" and by[64]["throughput"]["n"] >= 1
    assert by[4]["basis"] == "below" and by[4]["time_s"] > 0
    # resnet18's speed is not MLPerf resnet's (a ResNet-50): planned, and said once per job
    unlike = [line for line in res.stderr.splitlines() if "does not train MLPerf's resnet (resnet50 does)" in line]
    assert len(unlike) == 2 and unlike[0].startswith("warning: --job: job resnet18-bs"), res.stderr


@pytest.mark.parametrize("args, fragments", [
    (["nosuch"], ["unknown benchmark 'nosuch'", "resnet50=resnet"]),
    (["resnet", "--ruleset", "9.9.9"], ["unknown ruleset '9.9.9'", "4.0.0"]),
    (["resnet", "--ruleset", "6.1.0"], ["unknown benchmark 'resnet'", "ruleset 6.1.0 has RCPs for"]),
    (["resnet", "--batch-sizes", "1632,abc"], ["--batch-sizes", "'abc' is not a positive whole number"]),
    (["resnet", "--batch-sizes", "0"], ["'0' is not a positive whole number"]),
    (["resnet", "--batch-sizes", "1.5"], ["'1.5' is not a positive whole number"]),
    (["resnet", "--batch-sizes", "1632,,2048"], ["--batch-sizes", "not a list of batch sizes"]),
    (["resnet", "--throughput", "1632"], ["--throughput", "'1632' is not BS=ITEMS_PER_S"]),
    (["resnet", "--throughput", "1632=fast"], ["--throughput", "'1632=fast'"]),
    (["resnet", "--throughput", "1632=-5"], ["--throughput", "'1632=-5'"]),
    (["resnet", "--throughput", "1632=100+-200"], ["a CI narrower than it"]),
    (["resnet", "--throughput", "1632=1,1632=2"], ["batch size 1632 is given twice"]),
    (["resnet", "--throughput", "x=5"], ["'x' is not a positive whole number"]),
    (["resnet", "--format", "xml"], ["unknown format 'xml'"]),
])
def test_bad_input_is_one_line_and_exit_2(args, fragments):
    one_line_error(plan(*args), *fragments)


@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(st.sampled_from(["resnet", "bert", "resnet50"]) | st.text(max_size=12),
       st.none() | st.text(max_size=20), st.none() | st.text(max_size=30))
def test_any_input_is_a_plan_or_one_line(benchmark, sizes, rates):
    """Drawn names, batch lists and throughputs: exit 0 with a plan, or 2 with one line."""
    args = [benchmark, *(["--batch-sizes", sizes] if sizes is not None else []),
            *(["--throughput", rates] if rates is not None else []), "--format", "json"]
    res = plan(*args)
    assert res.returncode in (0, 2) and "Traceback" not in res.stdout + res.stderr, res.stdout + res.stderr
    if res.returncode == 2:
        assert len([ln for ln in res.stderr.splitlines() if ln.startswith("error:")]) == 1, res.stderr
    else:
        assert json.loads(res.stdout)["plan"]


def test_the_rcp_checkers_own_log_lines_never_reach_the_screen(tmp_path):
    """mlperf-logging's rcp_checker warns through the root logger ("WARNING:root: Run incomplete
    or did not converge"); in a process of its own (no pytest handler on the root logger) a run
    that did not converge is dnnbench's one line only."""
    import subprocess
    import sys
    log = tmp_path / "mlperf_log.txt"
    events = [("POINT_IN_TIME", "submission_benchmark", "resnet", {}), ("POINT_IN_TIME", "global_batch_size", 4, {}),
              ("INTERVAL_START", "run_start", None, {}), ("POINT_IN_TIME", "eval_accuracy", 0.5, {"epoch_num": 1}),
              ("INTERVAL_END", "run_stop", None, {"status": "aborted"})]
    log.write_text("".join(":::MLLOG " + json.dumps({"namespace": "", "time_ms": 1000 + i, "event_type": kind,
                                                       "key": key, "value": value, "metadata": meta}) + "\n"
                           for i, (kind, key, value, meta) in enumerate(events)))
    code = ("import sys; from dnnbench.results import mlperf; "
            "print(mlperf.rcp_standing(open(sys.argv[1]).read())['standing'])")
    res = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "not converged", res.stderr
    assert res.stderr == ""
