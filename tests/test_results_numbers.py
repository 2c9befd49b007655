"""Honest numbers: one headline statistic (sum of items over sum of seconds) in every output,
with its 95% CI; --until-ci; trimmed statistics; baseline tolerances; the reproducibility
manifest; `dnnbench reproduce`."""
import copy
import csv
import io
import math
import os
import json
import re
import subprocess
import sys
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnbench.results import numbers
from dnnbench.workloads import manifest, schema, stats
from tests.helpers import ROOT, dnnbench, one_line_error

FIXTURES = ROOT / "tests" / "fixtures" / "results" / "cpu-suite"


def _fixture(job, run="r1"):
    return json.loads((FIXTURES / job / run / "result.json").read_text())


def _sum_rate(windows, ranks=1):
    return sum(w["items"] for w in windows) * ranks / sum(w["seconds"] for w in windows)


# --- the statistic ---------------------------------------------------------------------------

def test_recorded_run_shows_the_mean_of_rates_bias():
    """resnet18-bs2/r1 ran windows of 1.0, 5.4 and 2.1 s for 4 images each: the mean of the rates
    (what `run` printed before) reads 2.2 images/s, the run's real rate is 1.42."""
    data = _fixture("resnet18-bs2")
    assert data["schema_version"] == 1 and data["throughput"]["total"]["mean"] == pytest.approx(2.2165, abs=1e-3)
    head = numbers.run_headline(data)
    assert head["value"] == pytest.approx(_sum_rate(data["windows"])) == pytest.approx(1.4216, abs=1e-3)
    assert numbers.fmt(head["value"]) == "1.42"


def test_older_schema_is_recomputed_from_windows_never_mixed():
    old = _fixture("resnet18-ddp-bs2")
    new = schema.upgrade(old)
    assert new["recomputed_from_schema"] == 1 and old["throughput"]["total"].get("value") is None
    assert new["throughput"]["statistic"] == "sum_items/sum_seconds"
    assert new["throughput"]["total"]["value"] == pytest.approx(_sum_rate(old["windows"], 2))
    assert "mean" not in new["throughput"]["total"] and "overall" not in new["throughput"]["total"]
    assert schema.upgrade(new) is new            # current results are left as they are


def test_ratio_ci_and_t_table():
    assert stats.t975(1) == 12.706 and stats.t975(30) == 2.042
    assert stats.t975(1000) == pytest.approx(1.9623, abs=1e-3) and stats.t975(0) is None
    steady = stats.ratio([10, 10, 10], [1.0, 1.0, 1.0])
    assert steady["value"] == 10 and steady["se"] == 0 and steady["df"] == 2
    # by hand: R = 30/4 = 7.5; residuals 10-7.5, 20-22.5 -> s2 = 12.5; se = sqrt(12.5/2)/2
    est = stats.ratio([10, 20], [1.0, 3.0])
    assert est["value"] == 7.5 and est["se"] == pytest.approx(1.25)
    # two windows: too few for an interval (t = 12.7); three: on the log scale, never below zero
    assert stats.interval(est["value"], est["se"], est["df"]) == (None, None, None)
    low, high, pct = stats.interval(7.5, 1.25, 2)
    assert (low, high) == pytest.approx((7.5 / math.exp(4.303 / 6), 7.5 * math.exp(4.303 / 6)))
    assert pct == pytest.approx(100 * (high - low) / 15)
    assert stats.ratio([4], [1.0])["se"] is None and stats.interval(4.0, None, 0) == (None, None, None)
    assert [stats.fmt(v) for v in (2791.26, 15.66, 1.4216, 0.2334, None)] == ["2,791.3", "15.7", "1.42", "0.233", "-"]


def _with_windows(data, seconds):
    d = copy.deepcopy(data)
    d["windows"] = [{"items": 8, "seconds": s, "data_wait": 0.0} for s in seconds]
    return d


def test_trimmed_statistics_from_five_runs(tmp_path):
    base = _fixture("resnet18-bs4")
    runs = [_with_windows(base, [s, s]) for s in (0.5, 0.52, 0.49, 0.51, 2.0)]   # one slow outlier
    head = numbers.job_headline(runs)
    kept = [runs[i] for i in (0, 1, 3)]            # neither the fastest (0.49) nor the slowest (2.0)
    assert head["runs"] == 5 and head["trimmed_n"] == 3
    assert head["trimmed"] == pytest.approx(_sum_rate([w for r in kept for w in r["windows"]]))
    assert head["value"] == pytest.approx(_sum_rate([w for r in runs for w in r["windows"]]))
    assert numbers.job_headline(runs[:4])["trimmed"] is None          # under 5: nothing dropped
    for i, r in enumerate(runs):
        r["run_id"] = f"r{i}"
        schema.write_atomic(str(tmp_path / f"r{i}" / "result.json"), r)
    js = json.loads(dnnbench("report", tmp_path, "-f", "json", check=0).stdout)
    assert js["statistic"] == "sum_items/sum_seconds"
    assert js["jobs"][0]["trimmed"] == pytest.approx(head["trimmed"]) and js["jobs"][0]["n"] == 5
    assert "trimmed" in dnnbench("report", tmp_path, check=0).stdout


def test_job_ci_is_the_wider_of_runs_and_windows():
    """Two runs that by luck total the same rate must not claim a narrow CI when their windows
    were all over the place (the recorded resnet18-bs2 runs)."""
    runs = [_fixture("resnet18-bs2", r) for r in ("r1", "r2")]
    head = numbers.job_headline(runs)
    by_runs = stats.ratio([sum(w["items"] for w in r["windows"]) for r in runs],
                          [sum(w["seconds"] for w in r["windows"]) for r in runs])
    narrow = stats.interval(by_runs["value"], by_runs["se"], by_runs["df"], 2)[2]
    assert head["ci95_pct"] > narrow and head["df"] == 5


# --- baselines ---------------------------------------------------------------------------------

def test_baseline_tolerances_and_verdicts(tmp_path):
    # resnet18-bs4 (two runs, 15.4 and 15.9 images/s): the rule's 99 % interval over the runs
    # (never the windows) is 6.4-38.5: it passes >= 5.7 and straddles 9.5
    base = tmp_path / "targets.yaml"
    base.write_text("resnet18-bs4: {target: 6, lower: -0.05, upper: null}\n"
                    "resnet18-bs2: {floor: 30}\n"
                    "ncf-bs64: {target: 172, lower: -0.05, upper: 0.05}\n")
    res = dnnbench("report", FIXTURES, "--baseline", base, "-f", "json")
    assert res.returncode == 1, res.stderr                    # a fail
    got = {r["job"]: r for r in json.loads(res.stdout)["jobs"]}
    assert got["resnet18-bs4"]["target_verdict"] == "pass" and got["resnet18-bs4"]["bounds"] == ">= 5.70"
    assert got["resnet18-bs2"]["target_verdict"] == "fail" and got["resnet18-bs2"]["pass"] is False
    assert got["ncf-bs64"]["target_verdict"] == "inconclusive" and got["ncf-bs64"]["pass"] is None
    assert got["ncf-bs64"]["bounds"] == ">= 163.4, <= 180.6"
    # a plain number keeps --tolerance; its CI decides too
    base.write_text("resnet18-bs4: 16\n")
    res = dnnbench("report", FIXTURES, "--baseline", base, "-f", "md", check=0)
    assert "inconclusive" in res.stdout
    table = dnnbench("report", FIXTURES, "--baseline", base, check=0).stdout
    assert "vs target" in table and "inconclusive" in table


@pytest.mark.parametrize("text, fragment", [
    ("j: {target: 10, lower: 0.05}\n", "lower is a fraction <= 0"),
    ("j: {lower: -0.05}\n", "add target:"),
    ("j: {target: 10, lowr: -0.05}\n", "unknown key 'lowr'"),
    ("j: {floor: .nan}\n", "floor must be a positive number"),
    ("j: {target: 10}\n", "give lower/upper with target, or floor/ceiling"),
])
def test_bad_baseline_tolerance_is_one_error_line(tmp_path, text, fragment):
    base = tmp_path / "b.yaml"
    base.write_text(text)
    one_line_error(dnnbench("report", FIXTURES, "--baseline", base), fragment)


def test_compare_verdicts():
    # the verdict words come from results/rounds.py (tests/test_results_rounds.py, tests/test_results_load_apart.py)
    out = dnnbench("compare", FIXTURES / "resnet18-bs4" / "r1", FIXTURES / "resnet18-bs4" / "r2", check=0).stdout
    assert "verdict" in out and "15.4" in out and "15.9" in out


# --- --until-ci --------------------------------------------------------------------------------

def _harness(tmp_path, *extra):
    cmd = [sys.executable, "-m", "dnnbench.workloads", "resnet18", "--device", "cpu", "--batch-size", "2",
           "--warmup", "0", "--number", "1", "--results", str(tmp_path), "--progress", "0", *extra]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    data = json.loads((tmp_path / "result.json").read_text())
    return res, data


def test_until_ci_stops_at_the_cap_when_the_ci_stays_wide(tmp_path):
    res, data = _harness(tmp_path, "--repeat", "2", "--until-ci", "1e-9", "--max-windows", "4")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "2 to 4 windows" in res.stderr                   # the cap, said up front
    assert len(data["windows"]) == 4 and data["until_ci"] == {"pct": 1e-9, "max_windows": 4, "windows": 4,
                                                              "met": False}
    assert "still wider than" in res.stderr


def test_until_ci_stops_as_soon_as_the_ci_is_met(tmp_path):
    res, data = _harness(tmp_path, "--repeat", "3", "--until-ci", "100000", "--max-windows", "50")
    assert res.returncode == 0, res.stderr[-2000:]
    assert len(data["windows"]) == 3 and data["until_ci"]["met"] is True
    tp = data["throughput"]["total"]
    assert 0 < tp["ci95_low"] < tp["value"] < tp["ci95_high"] and tp["n"] == 3


def test_until_ci_ranks_stop_together_under_ddp(tmp_path):
    """Each rank has its own CI; they must agree on the window to stop at, or DDP hangs."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1", "--nproc_per_node=2",
           "-m", "dnnbench.workloads", "resnet18", "--device", "cpu", "--batch-size", "2", "--warmup", "0",
           "--number", "1", "--repeat", "2", "--until-ci", "1e-9", "--max-windows", "3", "--results", str(tmp_path),
           "--progress", "0"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads((tmp_path / "result.json").read_text())
    assert data["world_size"] == 2 and [len(r["windows"]) for r in data["ranks"]] == [3, 3]


@pytest.mark.parametrize("args, fragment", [
    (["--until-ci", "0"], "must be above 0"),
    (["--until-ci", "5", "--max-windows", "3", "--repeat", "5"], "--max-windows must be at least --repeat"),
    (["--until-ci", "5", "--start-iter", "1", "--stop-iter", "4"], "exclude each other"),
])
def test_until_ci_bad_values_fail_before_anything_starts(tmp_path, args, fragment):
    one_line_error(dnnbench("run", "resnet18", "--runtime", "host", "--results", tmp_path, *args), fragment)
    assert not list(tmp_path.iterdir())


def test_until_ci_reaches_the_container_argv_and_suites(tmp_path):
    from dnnbench.campaigns import suite
    from dnnbench.runs.checks import harness_args
    res = dnnbench("run", "resnet18", "--runtime", "host", "--dry-run", "--results", tmp_path,
                   "--until-ci", "2.5", "--max-windows", "40", check=0)
    assert "--until-ci 2.5 --max-windows 40" in res.stdout
    help_text = dnnbench("run", "--help", check=0).stdout
    assert re.search(r"--until-ci\s+PCT\s+After --repeat windows", help_text)
    assert "sum_items/sum_seconds" in help_text and "sum_items/sum_seconds" in dnnbench("report", "--help", check=0).stdout
    assert "--until-ci" in dnnbench("suite", "run", "--help", check=0).stdout
    path = tmp_path / "s.yaml"
    path.write_text("name: s\njobs:\n  - workload: resnet18\n    options: {until_ci: 3, max_windows: 20}\n")
    run = suite.load(path).runs[0]
    opts = suite._options(run, results=tmp_path, run_id="x", overrides={}, gpus=None)
    assert (opts.until_ci, opts.max_windows) == (3, 20)
    opts = suite._options(run, results=tmp_path, run_id="x", overrides={"until_ci": 1.5}, gpus=None)
    argv = harness_args(opts, data_in=None, results_in="/results", run_id="x", device="cpu")
    assert "--until-ci 1.5 --max-windows 20" in " ".join(argv)


# --- the manifest ------------------------------------------------------------------------------

def test_dataset_fingerprint(tmp_path):
    (tmp_path / "train" / "a").mkdir(parents=True)
    (tmp_path / "train" / "a" / "1.jpg").write_bytes(b"x" * 10)
    (tmp_path / "train" / "a" / "2.jpg").write_bytes(b"y" * 5)
    one = manifest.dataset_fingerprint(str(tmp_path))
    assert (one["files"], one["bytes"]) == (2, 15) and len(one["list_sha256"]) == 64
    (tmp_path / "train" / "a" / "2.jpg").rename(tmp_path / "train" / "a" / "3.jpg")
    two = manifest.dataset_fingerprint(str(tmp_path))
    assert (two["files"], two["bytes"]) == (2, 15) and two["list_sha256"] != one["list_sha256"]
    assert manifest.dataset_fingerprint(None) is None
    # links back up the tree (three per folder: 3**40 paths if each were walked until ELOOP)
    for i in range(3):
        (tmp_path / "train" / "a" / f"up{i}").symlink_to("..")
        (tmp_path / "train" / f"top{i}").symlink_to(tmp_path)
    looped = manifest.dataset_fingerprint(str(tmp_path))
    assert (looped["files"], looped["bytes"]) == (2, 15)


def test_gpu_state_at_start_from_nvml(monkeypatch):
    """No GPU here: a stand-in pynvml answering as NVML does (mW, (current, pending) pairs)."""
    fake = types.SimpleNamespace(
        NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2, nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}", nvmlDeviceGetUUID=lambda h: "GPU-1",
        nvmlDeviceGetClockInfo=lambda h, c: {1: 1980, 2: 2619}[c], nvmlDeviceGetMaxClockInfo=lambda h, c: 1980,
        nvmlDeviceGetApplicationsClock=lambda h, c: 1755, nvmlDeviceGetEnforcedPowerLimit=lambda h: 700000,
        nvmlDeviceGetEccMode=lambda h: (1, 1), nvmlDeviceGetMigMode=lambda h: (0, 0),
        nvmlDeviceGetPersistenceMode=lambda h: 1)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    [gpu] = manifest._nvml_state()
    assert gpu == {"index": 0, "uuid": "GPU-1", "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "max_sm_clock_mhz": 1980,
                   "applications_sm_clock_mhz": 1755, "power_limit_w": 700.0, "ecc": 1, "mig": 0, "persistence": 1}


# --- one figure everywhere, and reproduce (a real tiny CPU run on the host runtime) ---------------

TINY = ("--batch-size", "2", "--number", "1", "--repeat", "3", "--warmup", "1")


@pytest.fixture(scope="module")
def host_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("numbers")
    res = dnnbench("run", "resnet18", "--runtime", "host", "--results", root / "results", "--run-id", "one",
                   "--env", "OMP_NUM_THREADS=2", "--env", "MY_SETTING=a b", *TINY, check=0)
    data = json.loads((root / "results" / "one" / "result.json").read_text())
    return root, res, data


def _cell(text, figure):
    """The figure as a cell of its own: between column gaps or markdown bars, not inside a number."""
    return re.search(r"(^|  |[│|])\s*" + re.escape(figure) + r"\s*(  |[│|]|$)", text, flags=re.M)


def test_headline_agrees_in_every_output(host_run, tmp_path):
    root, res, data = host_run
    results = root / "results"
    figure = stats.fmt(_sum_rate(data["windows"]))
    tp = data["throughput"]
    assert data["schema_version"] == schema.SCHEMA_VERSION and tp["statistic"] == "sum_items/sum_seconds"
    # the run's CPU seconds in every window; its wait for a CPU where one thread carried it (two
    # OpenMP threads here: wall time only, said in the corrected block)
    assert all(w["cpu_s"] > 0 and 0 <= w.get("run_queue_s", 0) <= w["seconds"] for w in data["windows"])
    fixed = tp["corrected"]
    assert fixed["why"] == stats.WALL_ONLY if fixed["value"] is None else fixed["value"] >= tp["total"]["value"]
    assert stats.fmt(tp["total"]["value"]) == figure
    assert f"{figure} images/s" in res.stdout                                 # the run summary
    assert f"[resnet18] {figure} images/s (sum of items / sum of seconds" in res.stderr   # the harness log
    assert _cell(dnnbench("report", results, check=0).stdout, figure)
    assert f"| {figure} |" in dnnbench("report", results, "-f", "md", check=0).stdout
    [row] = csv.DictReader(io.StringIO(dnnbench("report", results, "-f", "csv", check=0).stdout))
    assert stats.fmt(float(row["throughput"])) == figure
    [job] = json.loads(dnnbench("report", results, "-f", "json", check=0).stdout)["jobs"]
    assert stats.fmt(job["throughput"]) == figure
    html = tmp_path / "report.html"
    dnnbench("report", results, "-f", "html", "-o", html, check=0)
    assert f"<td>{figure}</td>" in html.read_text()
    assert _cell(dnnbench("compare", results, results, check=0).stdout, figure)
    suite_table = subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; from dnnbench.campaigns.suite "
                                  "import show_table; show_table(Path(sys.argv[1]))", str(results)],
                                 capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert _cell(suite_table.stdout, figure), suite_table.stdout + suite_table.stderr


def test_manifest_in_every_result(host_run):
    _, _, data = host_run
    m = data["manifest"]
    assert m["seed"] == 0 and m["synthetic"] is True and m["dataset"] is None
    assert m["pytorch"] and m["python"] and "resnet18" in m["command_line"]
    assert m["thread_env"]["OMP_WAIT_POLICY"] == os.environ["OMP_WAIT_POLICY"]   # conftest sets it
    assert m["thread_env"]["OMP_NUM_THREADS"] == "2"          # --env reached the workload's process
    assert data["host"]["env"] == {"OMP_NUM_THREADS": "2", "MY_SETTING": "a b"}
    host = m["host"]
    assert host["runtime"] == "host" and host["image"] is None and host["dnnbench_version"]
    assert host["command_line"].startswith("dnnbench run resnet18 --runtime host")
    assert host["git"] is None or len(host["git"]["commit"]) == 40


def test_reproduce_reruns_the_same_job_and_gives_a_verdict(host_run):
    root, _, data = host_run
    res = dnnbench("reproduce", root / "results" / "one", "--results", root / "again", "--run-id", "two", "-q",
                   "--rounds", "3")
    assert res.returncode in (0, 1), res.stderr
    assert re.search(r"^verdict: (reproduced|not reproduced|inconclusive)", res.stdout, re.M), res.stdout
    # the new side in runs (3: the first look), and the verdict says it could not re-measure the old
    assert sorted(p.name for p in (root / "again").iterdir()) == ["two", "two-new2", "two-new3"]
    assert "single-sided" in " ".join(res.stdout.split())
    new = json.loads((root / "again" / "two" / "result.json").read_text())
    keys = ("batch_size", "number", "repeat", "warmup", "seed", "amp", "lr", "device")
    assert {k: new["options"][k] for k in keys} == {k: data["options"][k] for k in keys}
    assert new["workload"] == "resnet18" and new["job"] == "resnet18-bs2"
    assert new["host"]["env"] == data["host"]["env"] and new["manifest"]["thread_env"]["OMP_NUM_THREADS"] == "2"
    assert new["manifest"]["host"]["command_line"].startswith("dnnbench reproduce")
    # the compare it printed holds both figures
    assert stats.fmt(_sum_rate(new["windows"])) in res.stdout and stats.fmt(_sum_rate(data["windows"])) in res.stdout


def test_reproduce_refuses_what_it_cannot_rerun(tmp_path):
    one_line_error(dnnbench("reproduce", tmp_path / "missing.json"), "cannot read")
    bad = copy.deepcopy(_fixture("resnet18-bs4"))
    bad["status"] = "oom"
    schema.write_atomic(str(tmp_path / "oom" / "result.json"), bad)
    one_line_error(dnnbench("reproduce", tmp_path / "oom"), "ended oom")
    slurm = copy.deepcopy(_fixture("resnet18-bs4"))
    slurm["host"]["runtime"] = "slurm/host"
    schema.write_atomic(str(tmp_path / "slurm" / "result.json"), slurm)
    one_line_error(dnnbench("reproduce", tmp_path / "slurm"), "pass --runtime")
    forged = copy.deepcopy(_fixture("resnet18-bs4"))
    forged["host"]["env"] = {"LD_PRELOAD_OK": "1", "RANK": "3"}   # a name --env refuses is refused here too
    schema.write_atomic(str(tmp_path / "forged" / "result.json"), forged)
    one_line_error(dnnbench("reproduce", tmp_path / "forged", "--results", tmp_path / "out"), "env RANK", "torchrun")
    assert not (tmp_path / "out").exists()


@pytest.mark.engine
def test_docker_result_records_the_image_digest_and_reproduce_runs_it(built_image, tmp_path):
    dnnbench("run", "resnet18", "--image", built_image, "--results", tmp_path, "--run-id", "d1",
             "--env", "OMP_NUM_THREADS=1", *TINY, check=0)
    data = json.loads((tmp_path / "d1" / "result.json").read_text())
    assert data["manifest"]["thread_env"]["OMP_NUM_THREADS"] == "1"     # --env reached the container
    image_id = subprocess.run(["docker", "image", "inspect", "-f", "{{.Id}}", built_image], capture_output=True,
                              text=True, check=True).stdout.strip()
    assert data["manifest"]["host"]["image"]["id"] == image_id
    res = dnnbench("reproduce", tmp_path / "d1", "--results", tmp_path, "--run-id", "d2", "-q", "--rounds", "3")
    assert res.returncode in (0, 1), res.stderr
    plan = json.loads((tmp_path / "d2" / "plan.json").read_text())
    assert plan["image"] == image_id and plan["env"]["OMP_NUM_THREADS"] == "1"
    assert "verdict:" in res.stdout


def test_readme_explains_the_statistic():
    section = " ".join((ROOT / "docs" / "guide" / "measurement.md").read_text().split())
    for fragment in ("sum_items/sum_seconds", "mean of per-window rates", "TBD", "Lambda", "median",
                     "DeepLearningExamples", "--until-ci", "trimmed", "reproduce"):
        assert fragment in section, fragment


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**6), st.floats(1e-6, 1e4)), min_size=1, max_size=40))
def test_interval_is_never_below_zero(windows):
    """Any windows at all: the interval brackets the headline and stays above zero, or there is
    none (fewer than MIN_WINDOWS windows)."""
    head = stats.headline([{"items": x, "seconds": t} for x, t in windows])
    if len(windows) < stats.MIN_WINDOWS:
        assert head["ci95_low"] is None and head["ci95_pct"] is None
    elif head["ci95_low"] is not None:
        assert 0 < head["ci95_low"] <= head["value"] * (1 + 1e-9)
        assert head["value"] <= head["ci95_high"] * (1 + 1e-9)


def test_two_windows_print_no_interval(tmp_path):
    """A run of 2 windows once printed `95 % CI -7.01-11.7`: now it says there are too few."""
    res, data = _harness(tmp_path, "--repeat", "2")
    assert res.returncode == 0, res.stderr[-2000:]
    assert stats.TOO_FEW in res.stderr and "95% CI" not in res.stderr
    assert data["throughput"]["total"]["ci95_low"] is None
