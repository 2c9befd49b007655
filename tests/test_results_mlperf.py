"""MLPerf Training logs judged by the real checker (mlperf-logging's compliance_checker, ruleset
4.0.0), never by a copy of its rules: digits runs (`dnnbench data digits`) log what the open and closed
divisions require, broken closed logs fail and dnnbench says so plainly, a resumed run's log is
judged as the README documents, and the olympic score equals mlperf-logging's own scoring."""
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dnnbench.results import mlperf
from dnnbench.datasets.digits import write_digits
from tests.helpers import EVERY_STEP, at_step, cli_inprocess, dnnbench, one_line_error, until_line

pytest.importorskip("sklearn")
pytest.importorskip("mlperf_logging")
pytestmark = pytest.mark.training

FAST = ["--image-size", "32", "--batch-size", "32", "--workers", "0"]
TINY = ["--image-size", "16", "--batch-size", "32", "--workers", "0"]
# a closed-division run on the digits: the reference schedule (warmup, polynomial decay to
# 0.0001), an lr that is a multiple of 0.001, to MLPerf ResNet's 75.9 % (digits get there in a few
# epochs; the pre-start rules that need ImageNet and resnet50 are the host's, not the checker's)
CLOSED = ["--lr-schedule", "poly", "--lr", "0.025", "--mlperf", "closed", "--target-accuracy", "76",
          "--epochs", "10", "--seed", "1"]


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    return write_digits(tmp_path_factory.mktemp("digits"))


def _train(out, digits, *args, wait=True):
    cmd = [sys.executable, "-m", "dnnbench.workloads.train", "resnet18", "--data", str(digits),
           "--results", str(out), *args]
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **EVERY_STEP})   # a line per step, to signal at one
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


@pytest.fixture(scope="module")
def closed_run(tmp_path_factory, digits):
    """A closed-division log the checker passes (the run reaches the target)."""
    out = tmp_path_factory.mktemp("closed") / "closed"
    _train(out, digits, *FAST, *CLOSED)
    return out


def _records(path):
    return [json.loads(line.split(":::MLLOG ", 1)[1]) for line in Path(path).read_text().splitlines()
            if ":::MLLOG " in line]


def _lines(path):
    return [line for line in Path(path).read_text().splitlines() if ":::MLLOG " in line]


def _key(line):
    return json.loads(line.split(":::MLLOG ", 1)[1])["key"]


def test_an_open_digits_run_passes_the_checker_and_records_its_verdict(tmp_path, digits):
    """`dnnbench train --mlperf open` (host runtime): the checker runs after the run, its verdict
    is printed and kept in result.json."""
    res = dnnbench("train", "resnet18", "--data", digits, "--runtime", "host", "--results", tmp_path, "--run-id",
                   "o", *TINY, "--epochs", "1", "--mlperf", "open")
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "open resnet: PASSED the compliance checker" in res.stdout
    data = json.loads((tmp_path / "o" / "result.json").read_text())
    block = data["mlperf"]
    assert block["verdict"] == "pass" and block["ruleset"] == "training_4.0.0" and block["division"] == "open"
    assert block["segments"] == 1 and block["status"] == "aborted"   # no target: the epochs ran out
    keys = [r["key"] for r in _records(tmp_path / "o" / "mlperf_log.txt")]
    for key in ("cache_clear", "init_start", "init_stop", "run_start", "run_stop", "seed", "global_batch_size",
                "opt_name", "sgd_opt_base_learning_rate", "sgd_opt_momentum", "sgd_opt_weight_decay", "epoch_start",
                "epoch_stop", "block_start", "block_stop", "eval_start", "eval_stop", "eval_accuracy",
                "train_samples", "eval_samples", "submission_org", "submission_division"):
        assert key in keys, key


def test_a_closed_digits_run_passes_and_stops_its_clock_where_dnnbench_does(closed_run):
    res = dnnbench("mlperf", "check", closed_run)
    assert res.returncode == 0 and "closed resnet: PASSED" in res.stdout, res.stdout + res.stderr
    data = json.loads((closed_run / "result.json").read_text())
    block, training = data["mlperf"], data["training"]
    assert block["verdict"] == "pass" and block["status"] == "success" and training["reached"] is True
    assert block["epochs_to_converge"] == training["reached_at_epoch"]
    records = {r["key"]: r for r in _records(closed_run / "mlperf_log.txt")}
    assert records["sgd_opt_end_learning_rate"]["value"] == 0.0001
    assert records["opt_name"]["value"] == "sgd" and records["submission_division"]["value"] == "closed"


def _broken(lines, how):
    if how == "a missing key":
        return [ln for ln in lines if _key(ln) != "sgd_opt_momentum"]
    if how == "a wrong optimizer key":
        return [ln.replace('"sgd_opt_weight_decay"', '"opt_weight_decay"') for ln in lines]
    if how == "an optimizer the rules do not know":
        return [ln.replace('"value": "sgd"', '"value": "adam"') if _key(ln) == "opt_name" else ln for ln in lines]
    if how == "an eval not tied to its epoch":
        out = []
        for ln in lines:
            if _key(ln) == "eval_accuracy":
                rec = json.loads(ln.split(":::MLLOG ", 1)[1])
                del rec["metadata"]["epoch_num"]
                ln = ":::MLLOG " + json.dumps(rec)
            out.append(ln)
        return out
    if how == "an init after the run started":
        first = next(i for i, ln in enumerate(lines) if _key(ln) == "init_start")
        start = next(i for i, ln in enumerate(lines) if _key(ln) == "run_start")
        moved = lines[:first] + lines[first + 1:start + 1] + [lines[first]] + lines[start + 1:]
        return moved
    raise AssertionError(how)


@pytest.mark.parametrize("how, says", [
    ("a missing key", "'sgd_opt_momentum' but found 0"),
    ("a wrong optimizer key", "'sgd_opt_weight_decay' but found 0"),
    ("an optimizer the rules do not know", "the checker stopped on this log"),
    ("an eval not tied to its epoch", "CHECK for 'eval_accuracy' failed"),
    ("an init after the run started", "CHECK for 'init_start' failed"),
])
def test_a_closed_log_that_breaks_a_rule_fails_and_dnnbench_says_so(tmp_path, closed_run, how, says):
    run = tmp_path / "run"
    shutil.copytree(closed_run, run, ignore=shutil.ignore_patterns("checkpoint-*"))
    (run / "mlperf_log.txt").write_text("\n".join(_broken(_lines(closed_run / "mlperf_log.txt"), how)) + "\n")
    res = dnnbench("mlperf", "check", run)
    assert res.returncode == 1 and "Traceback" not in res.stdout + res.stderr, res.stdout + res.stderr
    assert "closed resnet: FAILED the compliance checker" in res.stdout and says in res.stdout, res.stdout
    assert json.loads((run / "result.json").read_text())["mlperf"]["verdict"] == "fail"


def test_the_checker_does_not_judge_an_eval_before_its_epoch(tmp_path, closed_run):
    """What the 4.0.0 rules leave alone (the README says so): an evaluation logged before the
    epoch it evaluates still passes; dnnbench reports the checker's verdict, not its own."""
    lines = _lines(closed_run / "mlperf_log.txt")
    ev = next(i for i, ln in enumerate(lines) if _key(ln) == "eval_start")
    ep = next(i for i, ln in enumerate(lines) if _key(ln) == "epoch_start")
    lines.insert(ep, lines.pop(ev))
    run = tmp_path / "run"
    run.mkdir()
    (run / "mlperf_log.txt").write_text("\n".join(lines) + "\n")
    assert mlperf.check(run)["verdict"] == "pass"


def test_a_resumed_run_logs_its_segments_and_fails_the_checker_as_documented(tmp_path, digits):
    out = tmp_path / "cut"
    p = _train(out, digits, *TINY, "--epochs", "2", wait=False)
    until_line(p, at_step(2, 1))      # stopped in epoch 2: a first segment with an epoch in it
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=300)
    _train(out, digits, *TINY, "--epochs", "2", "--resume")
    records = _records(out / "mlperf_log.txt")
    stops = [r for r in records if r["key"] == "run_stop"]
    assert [r["key"] for r in records].count("run_start") == 2 and len(stops) == 2
    assert stops[0]["metadata"]["status"] == "aborted" and "resumable" in stops[0]["metadata"]["dnnbench_reason"]
    res = dnnbench("mlperf", "check", out)
    assert res.returncode == 1 and "Required EXACTLY_ONE occurrence of 'run_start' but found 2" in res.stdout
    assert "2 segments (the run was resumed)" in res.stdout
    assert json.loads((out / "result.json").read_text())["mlperf"]["segments"] == 2


def test_closed_rules_known_before_a_run_are_refused_in_one_line(tmp_path, digits):
    res = dnnbench("train", "resnet18", "--data", digits, "--runtime", "host", "--results", tmp_path,
                   "--mlperf", "closed", "--batch-size", "32", "--target-accuracy", "50")
    one_line_error(res, "--mlperf closed", "resnet50", "75.9", "--lr-schedule poly", "multiple of 0.001",
                   "not ImageNet's 1000")
    assert not any(tmp_path.iterdir())


def test_check_without_a_log_is_one_line(tmp_path):
    """A folder with no training run in it: said so, not "install mlperf-logging" (it is here)."""
    line = one_line_error(dnnbench("mlperf", "check", tmp_path), "holds no training run", "no mlperf_log.txt")
    assert "pip install" not in line


def test_check_refuses_a_folder_without_a_run_before_checking_any(tmp_path):
    """`mlperf check A B` where B holds no run: one line, exit 2, and A neither checked nor
    recorded (not half of the command done)."""
    run = tmp_path / "a"
    run.mkdir()
    (run / "mlperf_log.txt").write_text(':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", '
                                        '"key": "submission_benchmark", "value": "resnet", "metadata": {}}\n')
    (tmp_path / "b").mkdir()
    code, out, err = cli_inprocess("mlperf", "check", run, tmp_path / "b")
    assert code == 2 and err.startswith("error: ") and "b holds no training run" in err and len(err.splitlines()) == 1
    assert out == "" and sorted(p.name for p in run.iterdir()) == ["mlperf_log.txt"]


# ---- scores: dnnbench's olympic mean against mlperf-logging's result_summarizer ----

def _with_stop_at(lines, minutes):
    """The log with run_stop moved to `minutes` after run_start (a run that took that long)."""
    start = next(json.loads(ln.split(":::MLLOG ", 1)[1])["time_ms"] for ln in lines if _key(ln) == "run_start")
    out = []
    for ln in lines:
        if _key(ln) == "run_stop":
            rec = json.loads(ln.split(":::MLLOG ", 1)[1])
            rec["time_ms"] = start + int(round(minutes * 60000))
            ln = ":::MLLOG " + json.dumps(rec)
        out.append(ln)
    return out


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(min_value=1, max_value=10**6), min_size=5, max_size=5, unique=True))
def test_the_olympic_score_equals_mlperf_loggings_own(tmp_path_factory, closed_run, millis):
    from mlperf_logging.result_summarizer import result_summarizer
    base = tmp_path_factory.mktemp("runs")
    lines = _lines(closed_run / "mlperf_log.txt")
    summarizer = base / "summarizer"
    summarizer.mkdir()
    dirs = []
    for i, ms in enumerate(millis):
        text = "\n".join(_with_stop_at(lines, ms / 60000.0)) + "\n"
        (summarizer / f"result_{i}.txt").write_text(text)
        d = base / f"run{i}"
        d.mkdir()
        (d / "mlperf_log.txt").write_text(text)
        dirs.append(d)
    ours = mlperf.job_score(dirs)
    theirs, _, _ = result_summarizer._compute_strong_score_standalone(
        "resnet", None, False, str(summarizer), "training", "4.0.0")
    assert ours["required"] == 5 and ours["scored"] == 5
    assert ours["score_min"] == pytest.approx(theirs, rel=1e-12)


def test_the_mlperf_suite_is_valid_up_to_its_dataset(tmp_path):
    """suites/mlperf-resnet50.yaml passes every check but the dataset's (ImageNet is not here)."""
    res = dnnbench("suite", "run", "suites/mlperf-resnet50.yaml", "--dry-run", "--results", tmp_path)
    one_line_error(res, "/imagenet does not exist")


def test_eval_data_is_evaluated_beside_the_main_set(tmp_path, digits):
    """--eval-data (ImageNetV2's role): the same model evaluated on a second set, in the same
    class order; here the digits' own val/, so the two figures must agree exactly."""
    res = _train(tmp_path / "e", digits, *TINY, "--epochs", "1", "--eval-data", str(digits))
    ev = json.loads((tmp_path / "e" / "result.json").read_text())["training"]["epochs"][0]["eval"]
    assert ev["extra"]["top1"] == ev["top1"] and ev["extra"]["samples"] == ev["samples"]
    assert "(--eval-data top-1" in res.stderr


def test_eval_data_of_other_classes_is_refused(tmp_path, digits):
    other = tmp_path / "other" / "val" / "n00000001"
    other.mkdir(parents=True)
    shutil.copy(next((digits / "val" / "digit0").iterdir()), other / "a.png")
    res = dnnbench("train", "resnet18", "--data", digits, "--runtime", "host", "--results", tmp_path, *TINY,
                   "--epochs", "1", "--eval-data", tmp_path / "other")
    assert res.returncode == 2 and "its classes are not the training set's" in res.stderr, res.stderr[-2000:]


@pytest.mark.parametrize("plant, fragment", [
    (lambda p: os.mkfifo(p), "mlperf_log.txt"),
    (lambda p: os.symlink("/etc/passwd", p), "mlperf_log.txt"),
    (lambda p: p.mkdir(), "mlperf_log.txt"),
])
def test_a_log_that_is_not_a_file_is_one_line_and_never_read(tmp_path, plant, fragment):
    """The checker reads a copy made through the file layer: a FIFO is not blocked on, a link
    not followed, a folder not taken for the log."""
    plant(tmp_path / "mlperf_log.txt")
    one_line_error(dnnbench("mlperf", "check", tmp_path, timeout=60), fragment)


def test_without_mlperf_logging_the_run_trains_and_says_so_in_one_line(tmp_path, digits):
    """An image without mlperf-logging (the container side imports it lazily): no log, one line."""
    code = ("import sys; sys.modules['mlperf_logging'] = None; sys.modules['mlperf_logging.mllog'] = None; "
            "from dnnbench.workloads import train; sys.exit(train.main(sys.argv[1:]))")
    res = subprocess.run([sys.executable, "-c", code, "resnet18", "--data", str(digits), "--results",
                          str(tmp_path), *TINY, "--epochs", "1"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stderr.count("mlperf-logging is not installed here") == 1
    assert not (tmp_path / "mlperf_log.txt").exists() and (tmp_path / "result.json").exists()


# ---- where a run's epochs stand against the RCP (mlperf-logging's rcp_checker decides) ----

def _converging_at(lines, epochs, batch):
    """The log with its last evaluation at `epochs` and its global batch size `batch`."""
    last = max(i for i, ln in enumerate(lines) if _key(ln) == "eval_accuracy")
    out = []
    for i, ln in enumerate(lines):
        rec = json.loads(ln.split(":::MLLOG ", 1)[1])
        if i == last:
            rec["metadata"]["epoch_num"] = epochs
        if rec["key"] == "global_batch_size":
            rec["value"] = batch
        out.append(":::MLLOG " + json.dumps(rec))
    return "\n".join(out) + "\n"


def test_check_says_where_the_runs_epochs_stand_against_the_rcp(closed_run):
    """The digits run converges in a few epochs at batch 32, below every ResNet RCP: judged
    against batch 1632's (35 epochs), it is too fast, and `mlperf check` says so."""
    res = dnnbench("mlperf", "check", closed_run)
    block = json.loads((closed_run / "result.json").read_text())["mlperf"]["rcp"]
    assert block["standing"] == "too fast" and block["batch_size"] == 32 and block["judged_at"] == 1632
    assert block["epochs"] == json.loads((closed_run / "result.json").read_text())["training"]["reached_at_epoch"]
    assert f"RCP at batch 32: {block['epochs']:.2f} epochs to converge, TOO FAST" in res.stdout, res.stdout


@pytest.mark.parametrize("batch, epochs", [(32, 33.5), (32, 34.5), (32, 36.0), (2048, 33.8), (2048, 34.0),
                                           (2048, 35.1), (3264, 34.9), (100000, 90.0)])
def test_the_rcp_standing_agrees_with_mlperf_loggings_rcp_checker(tmp_path, closed_run, batch, epochs):
    """The real log converging at `epochs` with global batch `batch`: dnnbench's standing
    against rcp_checker.check_directory on five such logs (the package checker's pruned RCPs):
    too fast fails, within passes scaled up, slower passes as it is, no RCP is 'Missing RCP'."""
    from mlperf_logging.rcp_checker import rcp_checker
    text = _converging_at(_lines(closed_run / "mlperf_log.txt"), epochs, batch)
    ours = mlperf.rcp_standing(text)
    for i in range(5):
        (tmp_path / f"result_{i}.txt").write_text(text)
    passed, message, norm = rcp_checker.check_directory(str(tmp_path), "training", "4.0.0", False, False,
                                                        rcp_pass="pruned_rcps")
    expected = ("no RCP" if message.startswith("Missing RCP") and batch > 67840 else
                "too fast" if not passed else "within" if norm > 1 else "slower")
    assert ours["standing"] == expected, (ours, passed, message, norm)
    if ours["standing"] == "within":
        assert norm * epochs == pytest.approx(ours["mean"], abs=1e-9)


BLOCKED = "import sys; sys.modules['mlperf_logging'] = None; sys.modules['mlperf_logging.mllog'] = None; "


def test_train_mlperf_without_mlperf_logging_on_the_host_is_refused_before_anything(tmp_path, digits):
    """This Python lacks it: refused with the line that installs it into this Python."""
    code = BLOCKED + "from dnnbench.cli import main; sys.argv = ['dnnbench', *sys.argv[1:]]; main()"
    res = subprocess.run([sys.executable, "-c", code, "train", "resnet18", "--data", str(digits), "--runtime", "host",
                          "--results", str(tmp_path), "--mlperf", "open", *TINY, "--epochs", "1"],
                         capture_output=True, text=True, timeout=300)
    line = one_line_error(res, "--mlperf", f"{sys.executable} -m pip install mlperf-logging")
    assert "--runtime host" not in line
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("where", ["host", "container"])
def test_a_run_asked_for_the_log_without_mlperf_logging_stops_before_its_first_step(tmp_path, digits, where):
    """The container side's own refusal (an image's packages are known only inside it): exit 2,
    the result says why, no epoch trained; the way to get it fits where the run is."""
    env = dict(os.environ)
    env.pop("DNNBENCH_IMAGE", None)
    if where == "container":     # the host names the image of every container run
        env.update(DNNBENCH_IMAGE="/images/old.sif")
    code = BLOCKED + "from dnnbench.workloads import train; sys.exit(train.main(sys.argv[1:]))"
    res = subprocess.run([sys.executable, "-c", code, "resnet18", "--data", str(digits), "--results", str(tmp_path),
                          "--mlperf", "open", *TINY, "--epochs", "1"], capture_output=True, text=True, timeout=300,
                         env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-2000:]
    data = json.loads((tmp_path / "result.json").read_text())
    assert data["status"] == "error" and not (data.get("training") or {}).get("epochs")
    if where == "container":
        assert "image /images/old.sif lacks mlperf-logging" in data["message"] and "Dockerfile FROM it" in data["message"]
    else:
        assert f"{sys.executable} -m pip install mlperf-logging" in data["message"]
        assert "--runtime host" not in data["message"]
    assert not (tmp_path / "mlperf_log.txt").exists()
