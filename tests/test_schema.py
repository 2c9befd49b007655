"""The one result schema: statistics, atomic writes, validation."""
import json
import os

import pytest

from dnnbench.workloads import schema


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
