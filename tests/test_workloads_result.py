"""The one result object of the container side (workloads/result.py): every kind of job (a
workload benchmark, a training run, a user's script), ended well or not, writes a result that
validates against the published JSON Schema, reproducibility manifest included."""
import hashlib
import json
import subprocess
import sys
from importlib.resources import files

import pytest

from dnnbench.workloads import harness, schema
from tests.helpers import ROOT
from tests.test_workloads_harness import _Tiny

SCRIPTS = ROOT / "tests" / "fixtures" / "scripts"


def _validator():
    import jsonschema
    return jsonschema.Draft202012Validator(json.loads(files("dnnbench.workloads").joinpath(schema.SCHEMA_FILE).read_text()))


def _workload(out, ok):
    code = harness.run(_Tiny(), ["--device", "cpu", "--warmup", "1", "--number", "2", "--repeat", "2",
                                 "--results", str(out), "--progress", "0"] + ([] if ok else ["--start-iter", "3"]))
    return code


def _training(out, ok, tmp_path):
    if not ok:   # a workload training mode does not cover: refused before any model is built
        cmd = [sys.executable, "-m", "dnnbench.workloads.train", "ssd300", "--data", str(tmp_path), "--results", str(out)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300).returncode
    pytest.importorskip("sklearn")
    from dnnbench.datasets.digits import write_digits
    digits = write_digits(tmp_path / "digits")
    cmd = [sys.executable, "-m", "dnnbench.workloads.train", "resnet18", "--data", str(digits), "--results", str(out),
           "--image-size", "16", "--batch-size", "32", "--workers", "0", "--epochs", "1"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600).returncode


def _script(out, ok):
    cmd = [sys.executable, "-m", "dnnbench.workloads.instrument", "--results", str(out), "--warmup", "2",
           "--number", "3", "--repeat", "3", str(SCRIPTS / ("plain_loop.py" if ok else "crash.py"))]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300).returncode


@pytest.mark.parametrize("ok", [True, False], ids=["ok", "failed"])
@pytest.mark.parametrize("kind", ["workload", "training", "script"])
def test_every_kind_writes_a_valid_result_with_its_manifest(kind, ok, tmp_path):
    out = tmp_path / "r"
    code = {"workload": lambda: _workload(out, ok), "training": lambda: _training(out, ok, tmp_path),
            "script": lambda: _script(out, ok)}[kind]()
    data = json.loads((out / schema.RESULT_FILE).read_text())
    assert (code == 0) == ok and (data["status"] == "ok") == ok, data["message"]
    errors = sorted(str(e.message) for e in _validator().iter_errors(data))
    assert errors == [] and schema.problems(data) == []
    manifest = data["manifest"]
    assert manifest["manifest_version"] >= 1 and manifest["command_line"]
    assert data["verdict"]["label"] and data["ended"] >= data["started"]
    if kind == "script":   # what `reproduce` checks before it runs the script again
        script = data["script"]["path"]
        with open(script, "rb") as fh:
            assert manifest["script"] == {"path": script, "sha256": hashlib.sha256(fh.read()).hexdigest()}


def test_only_the_result_object_writes_and_judges_a_result():
    """The class, not the cases: no entry point of the container side builds, judges or writes
    a result of its own (each did, and they drifted: script results had no manifest)."""
    import ast
    found = []
    for path in sorted((ROOT / "workloads").rglob("*.py")):
        if path.name in ("result.py", "schema.py", "verdict.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("write_atomic", "judge", "SCHEMA_VERSION"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}")
    assert found == [], "use workloads/result.py's Result: " + ", ".join(found)
