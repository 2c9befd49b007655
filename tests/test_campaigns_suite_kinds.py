"""A suite's three kinds of job: a built-in workload timed, a user's script timed (`script:`,
as `dnnbench run --script`), a workload trained to accuracy (`train:`, as `dnnbench train`);
and the report's time to target, MLPerf's olympic mean."""
import json

import pytest

from dnnbench.results.report import time_to_target
from tests.helpers import ROOT, dnnbench, one_line_error

SCRIPT = ROOT / "tests" / "fixtures" / "scripts" / "plain_loop.py"


def _suite(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("job,fragment", [
    ("{script: x.py, workload: resnet18}", "not both"),
    ("{workload: resnet18, entry: main.py}", "`entry:` goes with `script:`"),
    ("{workload: resnet18, train: {epoch: 3}}", "did you mean epochs"),
    ("{workload: resnet18, train: {target_accuracy: 101}}", "target_accuracy"),
    ("{script: x.py, items_per_step: 0}", "items_per_step"),
    ("{script: x.py, train: {epochs: 1}}", "not both"),
])
def test_a_wrong_job_kind_is_one_line_before_anything_runs(tmp_path, job, fragment):
    path = _suite(tmp_path, f"name: k\njobs:\n  - {job}\n")
    one_line_error(dnnbench("suite", "run", path, "--results", tmp_path / "r"), fragment)
    assert not (tmp_path / "r").exists()


def test_script_and_train_jobs_run_and_report(tmp_path):
    data = tmp_path / "data"
    dnnbench("data", "fake", "imagenet", "--to", data, "--images", 16, "--classes", 2, "--size", 32, check=0)
    path = _suite(tmp_path, f"""\
name: kinds
defaults: {{runtime: host, env: {{MY_SETTING: a, OMP_NUM_THREADS: 1}}}}
jobs:
  - script: {SCRIPT}
    options: {{warmup: 1, number: 2, repeat: 3}}
    env: {{MY_SETTING: b}}
  - workload: resnet18
    data: {data}
    batch_size: 4
    train: {{epochs: 1, image_size: 16, target_accuracy: 99}}
""")
    summary = tmp_path / "summary.md"
    dnnbench("suite", "run", path, "--results", tmp_path / "r", "--junit", tmp_path / "junit.xml", timeout=900,
             check=0, env={"GITHUB_STEP_SUMMARY": str(summary)})
    folder = tmp_path / "r" / "kinds"
    script = json.loads((folder / "script-plain_loop" / "r1" / "result.json").read_text())
    assert script["status"] == "ok" and script["script"]["sha256"] and len(script["windows"]) == 3
    trained = json.loads((folder / "resnet18-bs4" / "r1" / "result.json").read_text())
    assert trained["status"] == "ok" and len(trained["training"]["epochs"]) == 1
    # a job's env: over the defaults' env:, kept in each result and seen by the run's process
    assert script["host"]["env"] == {"MY_SETTING": "b", "OMP_NUM_THREADS": "1"}
    assert trained["host"]["env"] == {"MY_SETTING": "a", "OMP_NUM_THREADS": "1"}
    assert trained["manifest"]["thread_env"]["OMP_NUM_THREADS"] == "1" and trained["manifest"]["seed"] == 0
    report = json.loads(dnnbench("report", folder, "-f", "json", check=0).stdout)
    rows = {r["job"]: r for r in report["jobs"]}
    assert rows["resnet18-bs4"]["reached"] == "0/1" and rows["resnet18-bs4"]["best"] is not None
    assert "reached" not in rows["script-plain_loop"]
    # the accuracy curve: a plot of the trained job only, in the folder and in the HTML page
    dnnbench("report", folder, "--plots", tmp_path / "plots", check=0)
    curves = sorted(p.name for p in (tmp_path / "plots").glob("accuracy-*.png"))
    assert len(curves) == 1 and "resnet18-bs4" in curves[0]
    assert (tmp_path / "plots" / curves[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = dnnbench("report", folder, "-f", "html", check=0).stdout
    assert curves[0] in page
    # CI's view (dnnbench.exports): one testsuite, a passing testcase per job; the summary's table
    import junitparser
    suites = list(junitparser.JUnitXml.fromfile(str(tmp_path / "junit.xml")))
    assert [s.name for s in suites] == ["kinds"]
    assert sorted((c.name, c.is_passed) for c in suites[0]) == [("resnet18-bs4", True), ("script-plain_loop", True)]
    assert "### dnnbench suite kinds" in summary.read_text() and "| script-plain_loop |" in summary.read_text()


def _run(seconds, reached=True):
    return {"training": {"reached": reached, "time_to_target_s": seconds if reached else None, "best": 76.0}}


def test_time_to_target_is_the_olympic_mean_from_five_runs():
    five = [_run(s) for s in (100, 10, 20, 30, 1000)]
    got = time_to_target(five)
    assert got["tta_s"] == pytest.approx(50.0) and got["tta_olympic"] and got["reached"] == "5/5"
    four = time_to_target(five[:4])
    assert four["tta_s"] == pytest.approx(40.0) and not four["tta_olympic"]
    none = time_to_target([_run(0, reached=False)])
    assert none["tta_s"] is None and none["reached"] == "0/1" and none["best"] == 76.0 and none["metric"] == "top-1"
    assert time_to_target([{"windows": []}]) == {}
