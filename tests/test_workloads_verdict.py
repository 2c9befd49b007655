"""The verdict on what limited a run: the rules on recorded CPU results (real runs), GPU evidence
derived from them in memory (no GPU here), and the verdict in the run summary, result.json and report."""
import copy
import csv
import io
import json
import re
from pathlib import Path

import pytest

from dnnbench.workloads import schema, telemetry, verdict
from tests.helpers import dnnbench

FIXTURES = Path(__file__).parent / "fixtures" / "results"
INPUT_BOUND = FIXTURES / "verdict" / "loader-cpu-w0" / "result.json"
TRAINING = FIXTURES / "verdict" / "resnet18-gpu-loader" / "result.json"


def _read(path):
    return schema.read(str(path))


def _on_gpu(data, **telemetry_fields):
    """The recorded run as if it ran on a GPU with this telemetry (what NVML would have added)."""
    d = copy.deepcopy(data)
    d["options"]["device"] = "cuda"
    d["telemetry"] = {"samples": 100, "median_utilization_pct": 99.0, "median_sm_clock_mhz": 1980.0,
                      "max_sm_clock_mhz": 1980.0, "throttle_power_share": 0.0, "throttle_thermal_share": 0.0}
    d["telemetry"].update(telemetry_fields)
    d.pop("verdict", None)
    return d


def test_recorded_runs_carry_their_verdict():
    slow = _read(INPUT_BOUND)
    assert slow["verdict"]["label"] == "input-bound" and slow["data_wait_fraction"] > 0.9
    assert "--workers" in slow["verdict"]["hint"]
    assert verdict.judge(slow) == slow["verdict"]          # recomputable from what the result holds
    train = _read(TRAINING)
    assert train["verdict"]["label"] == "compute-bound" and "--gpus" in train["verdict"]["hint"]


@pytest.mark.parametrize("path", sorted((FIXTURES / "cpu-suite").rglob("result.json")), ids=lambda p: p.parent.parent.name)
def test_older_results_without_a_verdict_are_judged(path):
    data = _read(path)
    assert "verdict" not in data
    v = verdict.judge(data)
    assert v["label"] == "compute-bound" and "synthetic data" in v["evidence"][0]


def test_input_bound_on_a_gpu_points_at_the_gpu_loader():
    d = _on_gpu(_read(INPUT_BOUND))
    assert d["loader"]["used"] == "cpu"
    v = verdict.judge(d)
    assert v["label"] == "input-bound" and v["hint"].startswith("--loader gpu")
    d["loader"]["used"] = "gpu"
    d["options"]["workers"] = 4
    assert "more --workers (4 now" in verdict.judge(d)["hint"]


def test_throttled_thermal_and_power():
    base = _read(TRAINING)
    v = verdict.judge(_on_gpu(base, throttle_thermal_share=0.4, median_sm_clock_mhz=1400.0))
    assert v["label"] == "throttled" and "--cool-down" in v["hint"]
    assert any("thermal slowdown in 40%" in e for e in v["evidence"])
    v = verdict.judge(_on_gpu(base, throttle_power_share=0.9, median_sm_clock_mhz=1500.0))
    assert v["label"] == "throttled" and "power limit" in v["hint"]
    # at the power cap but near the maximum clock: the cap costs nothing
    assert verdict.judge(_on_gpu(base, throttle_power_share=0.9, median_sm_clock_mhz=1900.0))["label"] == "compute-bound"


def test_communication_bound_needs_ranks_and_a_low_efficiency():
    d = _on_gpu(_read(TRAINING))
    d["world_size"], d["scaling"] = 4, {"efficiency": 0.62, "world_size": 4}
    v = verdict.judge(d)
    assert v["label"] == "communication-bound" and "NCCL" in v["hint"]
    assert "scaling efficiency 0.62 over 4 ranks" in v["evidence"]
    d["scaling"]["efficiency"] = 0.95
    assert verdict.judge(d)["label"] == "compute-bound"


def test_host_bound_from_utilization_or_nsys():
    d = _on_gpu(_read(TRAINING), median_utilization_pct=55.0)
    v = verdict.judge(d)
    assert v["label"] == "host-bound" and "--compile" in v["hint"]
    d["telemetry"]["median_utilization_pct"] = 100.0     # NVML's coarse figure...
    d["profile"] = {"nsys": {"busy_pct": 61.0}}          # ...and nsys's exact one wins
    v = verdict.judge(d)
    assert v["label"] == "host-bound" and "GPU busy 61% (nsys)" in v["evidence"]


def test_compute_bound_hints_follow_the_options():
    d = _on_gpu(_read(TRAINING))
    assert verdict.judge(d)["hint"].startswith("--amp")
    d["options"]["amp"] = "bf16"
    assert verdict.judge(d)["hint"].startswith("--channels-last")
    d["options"]["channels_last"] = True
    assert verdict.judge(d)["hint"].startswith("--compile")
    d["workload"] = "bert"
    d["options"]["channels_last"] = False
    assert verdict.judge(d)["hint"].startswith("--compile")       # no NHWC advice for a transformer


def test_failed_and_malformed_results_are_unknown():
    d = copy.deepcopy(_read(TRAINING))
    d["status"], d["windows"] = "oom", []
    assert verdict.judge(d)["label"] == "unknown"
    d = copy.deepcopy(_read(INPUT_BOUND))
    d["data_wait_fraction"], d["telemetry"], d["options"] = "lots", [1], None   # hostile fields: ignored
    assert verdict.judge(d)["label"] == "compute-bound"


def test_telemetry_summary_counts_throttle_reasons():
    rows = [{"time": t, "gpu": 0, "sm_clock_mhz": 1500, "max_sm_clock_mhz": 1980,
             "throttle_reasons": [0x0, 0x4, 0x4, 0x20][t % 4]} for t in range(8)]
    out = telemetry.summarize(rows, 0, 10)
    assert out["throttle_power_share"] == 0.5 and out["throttle_thermal_share"] == 0.25
    assert out["max_sm_clock_mhz"] == 1980


def test_report_has_a_verdict_column(tmp_path):
    res = dnnbench("report", str(FIXTURES / "verdict"), str(FIXTURES / "cpu-suite"), "--format", "csv", check=0)
    rows = {r["job"]: r for r in csv.DictReader(io.StringIO(res.stdout))}
    assert rows["loader-bs16"]["verdict"] == "input-bound"
    assert rows["resnet18-bs4"]["verdict"] == "compute-bound"       # recorded before verdicts existed
    # a tampered result.json: its verdict is data, checked and judged again, never printed as markup
    bad = tmp_path / "run"
    bad.mkdir()
    data = _read(INPUT_BOUND)
    data["verdict"] = {"label": "[red]fast[/red]", "evidence": "x", "hint": 3}
    (bad / "result.json").write_text(json.dumps(data))
    res = dnnbench("report", str(bad), "--format", "md", check=0)
    assert "input-bound" in res.stdout and "fast" not in res.stdout


def test_run_summary_shows_the_verdict(tmp_path):
    fake = tmp_path / "fake"
    dnnbench("data", "fake", "imagenet", "--to", fake, "--images", 24, "--classes", 2, "--size", 48, check=0)
    res = dnnbench("run", "loader", "--runtime", "host", "--data", fake, "--workers", "0", "--loader", "cpu",
                   "--batch-size", "8", "--number", "2", "--repeat", "2", "--warmup", "1", "--results", tmp_path / "r",
                   "--run-id", "slow", check=0)
    assert "input-bound: data wait" in res.stdout and "hint: --workers" in res.stdout
    data = _read(tmp_path / "r" / "slow" / "result.json")
    assert data["verdict"]["label"] == "input-bound" and data["loader"]["used"] == "cpu"


def test_the_loader_workload_is_never_told_to_use_a_gpu():
    """It trains nothing: its compute is the input pipeline, so the hint is about that."""
    from dnnbench.workloads import verdict
    hint = verdict._compute_hint({}, "cpu", "loader")
    assert "GPU" not in hint and "--workers" in hint
    assert "GPU" in verdict._compute_hint({}, "cpu", "resnet18")


def _as_script(data, **fields):
    """The recorded run as a user's script's result: the instrumentation's options, no loader."""
    d = copy.deepcopy(data)
    d.update(options={"warmup": 2, "number": 3, "repeat": 3, "items_per_step": None, "run_to_end": False},
             loader=None, script={"path": "/w/train.py", "sha256": "0" * 64, "argv": [], "exit_code": 0}, **fields)
    d.pop("verdict", None)
    return d


@pytest.mark.parametrize("label, fields", [
    ("input-bound", {}),
    ("throttled", {"data_wait_fraction": 0.0, "telemetry": {"throttle_thermal_share": 0.9}}),
    ("communication-bound", {"data_wait_fraction": 0.0, "world_size": 2, "scaling": {"efficiency": 0.5}}),
    ("compute-bound", {"data_wait_fraction": 0.0}),
])
def test_a_scripts_verdict_names_no_option_the_script_does_not_take(label, fields):
    """A script takes none of the harness options (--workers, --amp, --cool-down ...): its hint
    says what to change in the script, never `more --workers (None now)`."""
    v = verdict.judge(_as_script(_read(INPUT_BOUND), **fields))
    assert v["label"] == label
    assert "--" not in v["hint"] and "None" not in v["hint"]


def _as_training(data, **fields):
    """The recorded run as a training run's result: `train`'s options, a training block."""
    d = copy.deepcopy(data)
    d.update(options={"batch_size": 32, "workers": 0, "amp": "none", "channels_last": False, "seed": 0,
                      "device": "cpu", "epochs": 1}, training={"metric": "top1", "reached": False, "epochs": []},
             **fields)
    d.pop("verdict", None)
    return d


@pytest.mark.parametrize("fields", [
    {"loader": {"requested": "auto", "used": "cpu", "why": ""}, "options": {"device": "cuda", "workers": 4}},
    {"data_wait_fraction": 0.0, "telemetry": {"throttle_thermal_share": 0.9}},
    {"data_wait_fraction": 0.0, "options": {"device": "cuda"}, "telemetry": {"median_utilization_pct": 20.0}},
    {"data_wait_fraction": 0.0, "options": {"device": "cuda", "amp": "bf16", "channels_last": True}},
    {"data_wait_fraction": 0.0},
], ids=["input-gpu", "throttled", "host-bound", "compute-gpu", "compute-cpu"])
def test_a_training_runs_verdict_names_only_options_train_takes(fields):
    """`train` takes no --loader, --compile or --cool-down: its hints never name them."""
    d = _as_training(_read(INPUT_BOUND))
    d["options"].update(fields.pop("options", {}))
    d.update(fields)
    v = verdict.judge(d)
    assert v["hint"], v
    named = set(re.findall(r"--[a-z][a-z-]*", v["hint"]))
    assert named <= set(verdict.TRAINING_FLAGS), v["hint"]
