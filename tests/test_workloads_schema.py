"""The one result schema: statistics, atomic writes, validation."""
import json
import os

import pytest

from dnnbench.workloads import schema
from tests.helpers import ROOT


def test_summarize():
    s = schema.summarize([10, 20, 30])
    assert (s["n"], s["mean"], s["median"], s["min"], s["max"]) == (3, 20, 20, 10, 30)
    assert s["sd"] == pytest.approx(10.0)
    assert schema.summarize([5])["sd"] == 0.0
    assert schema.summarize([])["mean"] is None


def test_throughput_counts_ranks_and_uneven_windows():
    windows = [{"items": 100, "seconds": 1.0}, {"items": 50, "seconds": 3.0}]
    tp = schema.throughput(windows, world_size=4)
    assert tp["statistic"] == "sum_items/sum_seconds"
    assert tp["per_gpu"]["value"] == pytest.approx(150 / 4.0) and tp["total"]["value"] == pytest.approx(150.0)
    # the old statistic, kept under its own name only: the mean of rates reads high
    assert tp["per_gpu"]["mean_of_rates"] == pytest.approx((100 + 50 / 3.0) / 2)
    assert tp["per_gpu"]["mean_of_rates"] > tp["per_gpu"]["value"]
    assert "mean" not in tp["total"]


def test_write_atomic_leaves_no_temp_and_cleans_nan(tmp_path):
    path = tmp_path / "sub" / "result.json"
    schema.write_atomic(str(path), {"a": float("nan"), "b": [float("inf")]})
    assert json.loads(path.read_text()) == {"a": "nan", "b": ["inf"]}
    assert os.listdir(path.parent) == ["result.json"]


def test_write_atomic_keeps_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "result.json"
    schema.write_atomic(str(path), {"v": 1})
    with pytest.raises(TypeError):
        schema.write_atomic(str(path), {"v": object()})
    assert json.loads(path.read_text()) == {"v": 1}
    assert os.listdir(tmp_path) == ["result.json"]


def test_problems_and_read(tmp_path):
    assert "not a JSON object" in schema.problems([])[0]
    found = schema.problems({"schema_version": 99, "status": "weird"})
    assert any("newer" in p for p in found) and any("status" in p for p in found)
    assert any("missing field 'workload'" in p for p in found)
    bad = tmp_path / "r.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        schema.read(str(bad))


# --- the published JSON Schema (workloads/result.schema.json, in the package) ---

def _published():
    from importlib.resources import files
    return json.loads(files("dnnbench.workloads").joinpath(schema.SCHEMA_FILE).read_text())


def test_the_published_json_schema_is_the_one_the_schema_module_makes():
    assert _published() == schema.json_schema(), \
        "regenerate it: python -m dnnbench.workloads.schema > workloads/result.schema.json"


def test_every_recorded_result_validates_against_the_json_schema():
    import jsonschema
    jsonschema.Draft202012Validator.check_schema(_published())
    validator = jsonschema.Draft202012Validator(_published())
    found = sorted((ROOT / "tests" / "fixtures").rglob("result.json"))
    assert len(found) >= 9
    for path in found:
        errors = [e.message for e in validator.iter_errors(json.loads(path.read_text()))]
        assert errors == [], (path, errors)


BROKEN = [   # (what is changed, how): each refused by validate() and by the JSON Schema alike
    ("status", lambda d: d.update(status="finished")),
    ("world_size", lambda d: d.update(world_size=0)),
    ("schema_version", lambda d: d.update(schema_version=schema.SCHEMA_VERSION + 1)),
    ("run_id", lambda d: d.pop("run_id")),
    ("windows seconds", lambda d: d["windows"][0].update(seconds=0)),
    ("windows items", lambda d: d["windows"][0].update(items=-1)),
    ("batch_size", lambda d: d["options"].update(batch_size=0)),
    ("throughput value", lambda d: d["throughput"]["total"].update(value="fast")),
    ("copies nested", lambda d: d.update(copies=[dict(d, copies=[])])),
    ("scaling", lambda d: d.update(scaling={"efficiency": -1.0})),
]


@pytest.mark.parametrize("what, change", BROKEN, ids=[b[0] for b in BROKEN])
def test_the_json_schema_refuses_what_validate_refuses(what, change):
    import copy

    import jsonschema
    good = json.loads(sorted((ROOT / "tests" / "fixtures" / "results" / "cpu-suite").rglob("result.json"))[0]
                      .read_text())
    bad = copy.deepcopy(good)
    change(bad)
    assert schema.validate(good) == [] and schema.validate(bad) != []
    assert list(jsonschema.Draft202012Validator(_published()).iter_errors(bad)), what
