"""`dnnbench reproduce` runs every kind of job again on the host runtime, from its result alone:
a workload benchmark with its options, a training run with its training options, a user's
script by path, refused in one line when the script changed since (unless allowed)."""
import json
import shutil

import pytest

from tests.helpers import ROOT, dnnbench, one_line_error

SCRIPT = ROOT / "tests" / "fixtures" / "scripts" / "plain_loop.py"
TIMING = ["--warmup", "1", "--number", "2", "--repeat", "3"]


def _again(old, new, *extra):
    # --rounds 3: the fewest the verdict rule looks at; what is checked here is what ran, not the verdict
    res = dnnbench("reproduce", old, "--results", new.parent, "--run-id", new.name, "-q", "--rounds", "3", *extra,
                   timeout=900)
    assert res.returncode in (0, 1), res.stderr[-3000:]      # 1: a busy machine moved the figure
    assert "verdict:" in res.stdout
    return json.loads((new / "result.json").read_text())


def _options(data):
    return {k: v for k, v in data["options"].items() if k not in ("results", "run_id")}


def test_a_workload_result_runs_again(tmp_path):
    dnnbench("run", "resnet18", "--runtime", "host", "--results", tmp_path / "r", "--run-id", "one", "--batch-size", "2",
             "--synthetic", *TIMING, check=0)
    old = json.loads((tmp_path / "r" / "one" / "result.json").read_text())
    assert old["status"] == "ok", old["message"]
    new = _again(tmp_path / "r" / "one", tmp_path / "again" / "two")
    assert new["status"] == "ok" and new["workload"] == "resnet18" and _options(new) == _options(old)


def test_a_training_result_runs_train_again_with_its_options(tmp_path):
    pytest.importorskip("sklearn")
    from dnnbench.datasets.digits import write_digits
    digits = write_digits(tmp_path / "digits", size=8)
    res = dnnbench("train", "resnet18", "--data", digits, "--runtime", "host", "--epochs", "1", "--batch-size", "64",
                   "--workers", "0", "--image-size", "8", "--results", tmp_path / "r", "--run-id", "one", "-q",
                   check=0, timeout=900)
    old = json.loads((tmp_path / "r" / "one" / "result.json").read_text())
    assert old["status"] == "ok", res.stderr[-3000:]
    new = _again(tmp_path / "r" / "one", tmp_path / "again" / "two")
    assert new["status"] == "ok" and new["training"]["epochs"] and _options(new) == _options(old)


def test_a_script_result_runs_its_script_again_unless_it_changed(tmp_path):
    script = tmp_path / "train.py"
    shutil.copy(SCRIPT, script)
    dnnbench("run", "--script", script, "--runtime", "host", "--results", tmp_path / "r", "--run-id", "one", "-q",
             *TIMING, check=0)
    old = json.loads((tmp_path / "r" / "one" / "result.json").read_text())
    assert old["status"] == "ok", old["message"]
    new = _again(tmp_path / "r" / "one", tmp_path / "again" / "two")
    assert new["status"] == "ok" and new["script"]["path"] == str(script)
    assert new["manifest"]["script"] == old["manifest"]["script"] and new["options"] == old["options"]
    script.write_text(script.read_text() + "# changed\n")
    one_line_error(dnnbench("reproduce", tmp_path / "r" / "one", "--results", tmp_path / "again"),
                   str(script), "SHA-256", "--allow-changed-script")
    changed = _again(tmp_path / "r" / "one", tmp_path / "again" / "three", "--allow-changed-script")
    assert changed["status"] == "ok" and changed["manifest"]["script"]["sha256"] != old["manifest"]["script"]["sha256"]


FIXTURE = ROOT / "tests" / "fixtures" / "results" / "cpu-suite" / "resnet18-bs4" / "r1" / "result.json"
SCRIPT_FORGERIES = {
    "option-type": (lambda d: d["options"].update(warmup="two"), "options.warmup"),
    "flag-type": (lambda d: d["options"].update(run_to_end=1), "options.run_to_end"),
    "unknown-option": (lambda d: d["options"].update(workers=4), "'workers'"),
    "no-sha256": (lambda d: (d["manifest"].pop("script"), d["script"].pop("sha256")), "SHA-256"),
    "argv-type": (lambda d: d["script"].update(argv=[1]), "script.argv"),
    "path-type": (lambda d: d["manifest"]["host"].update(script=["/x"]), "manifest.host.script"),
}


@pytest.mark.parametrize("case", sorted(SCRIPT_FORGERIES))
def test_a_forged_script_result_is_refused_up_front(tmp_path, case):
    """A script result is checked whole, like any other, before its script runs."""
    from dnnbench.workloads import schema
    data = json.loads(FIXTURE.read_text())
    data.update(workload="script-train", host={"runtime": "host"},
                options={"warmup": 1, "number": 2, "repeat": 3, "items_per_step": None, "run_to_end": False},
                script={"path": str(SCRIPT), "sha256": "0" * 64, "argv": [], "exit_code": 0},
                manifest={"manifest_version": 1, "command_line": ["python"], "host": {"script": str(SCRIPT)},
                          "script": {"path": str(SCRIPT), "sha256": "0" * 64}})
    change, fragment = SCRIPT_FORGERIES[case]
    change(data)
    schema.write_atomic(str(tmp_path / "forged" / "result.json"), data)
    one_line_error(dnnbench("reproduce", tmp_path / "forged", "--results", tmp_path / "out"),
                   "cannot be run again", fragment)
    assert not (tmp_path / "out").exists()
