"""Change detection over real store series (result files imported through the CLI), and the
detector on generated series: lasting steps found where they are, outliers and noise not."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from dnnbench.history.changes import MIN_SIZE, changes, detect
from tests.helpers import dnnbench, one_line_error
from tests.history_results import write


@pytest.fixture
def db(tmp_path, monkeypatch):
    monkeypatch.setenv("DNNBENCH_DB", str(tmp_path / "history.db"))
    return tmp_path / "history.db"


def test_a_release_that_made_a_job_slower_is_named_with_what_changed(db, tmp_path):
    # ten images in release order (their tags say it, their runs came in any order); from
    # image 6 on 8 % slower with a new PyTorch
    order = [3, 0, 7, 1, 9, 4, 2, 8, 5, 6]
    for n, i in enumerate(order):
        slow = i >= 6
        write(tmp_path / "r", n, 1000 * (0.92 if slow else 1.0), image=f"local:rel-1.{i}",
              pytorch="2.5.0" if slow else "2.4.0")
    dnnbench("history", "import", tmp_path / "r", check=0)
    res = dnnbench("history", "changes", "--format", "json")
    assert res.returncode == 1, res.stderr          # a slowdown: exit 1
    found = json.loads(res.stdout)
    assert len(found) == 1
    c = found[0]
    assert c["before"]["image"] == "local:rel-1.5" and c["after"]["image"] == "local:rel-1.6"
    assert c["ci95_low_pct"] < -8 < c["ci95_high_pct"] < 0
    assert "pytorch: 2.4.0 -> 2.5.0" in c["changed"] and "image: local:rel-1.5 -> local:rel-1.6" in c["changed"]
    text = dnnbench("history", "changes", "resnet50-bs64", check=1).stdout
    lines = text.splitlines()
    assert lines[0].startswith("resnet50-bs64 on CPU: -") and "(95 % CI -" in lines[0]
    assert lines[1].startswith("  before: local:rel-1.5 (2026-10-01 ") and lines[2].startswith("  after:  local:rel-1.6")
    assert "  pytorch: 2.4.0 -> 2.5.0" in lines
    # in time order the runs are shuffled releases: no single lasting step is where the images change
    series = json.loads(dnnbench("history", "series", "resnet50-bs64", "-f", "json", check=0).stdout)
    assert [r["image"] for r in series] == [f"local:rel-1.{i}" for i in range(10)]


def test_one_slow_outlier_is_not_a_change(db, tmp_path):
    for i in range(20):
        write(tmp_path / "r", i, 1000 * (0.7 if i == 9 else 1.0), image=f"local:rel-2.{i}")
    dnnbench("history", "import", tmp_path / "r", check=0)
    assert dnnbench("history", "changes", check=0).stdout.startswith("no lasting change in 1 series")


def test_changes_of_an_unknown_job_is_one_line(db, tmp_path):
    write(tmp_path / "r", 0, 1000)
    dnnbench("history", "import", tmp_path / "r", check=0)
    one_line_error(dnnbench("history", "changes", "nosuch"), "no ok result of job 'nosuch'")


@settings(max_examples=40, deadline=None)
@given(st.integers(12, 40), st.data())
def test_a_large_lasting_step_is_found_at_its_place(n, data):
    at = data.draw(st.integers(MIN_SIZE, n - MIN_SIZE))
    noise = data.draw(st.floats(0.002, 0.01))
    seed = data.draw(st.integers(0, 2**31))
    import numpy as np
    rng = np.random.default_rng(seed)
    values = 100 * (1 + rng.normal(0, noise, n))
    values[at:] *= 0.85
    found = detect(list(values), [1.96 * noise * 100] * n)
    places = [k for k, *_ in found]
    # the step, and at most one more: each further split is tested at the stated 5 % error rate
    assert at in places and len(places) <= 2
    ratio, low, high = next(f[1:4] for f in found if f[0] == at)
    assert low < ratio < high and abs(ratio - 0.85) < 8 * noise


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 60), st.integers(0, 2**31))
def test_a_flat_series_or_a_short_one_rarely_cries_wolf(n, seed):
    import numpy as np
    values = list(100 * (1 + np.random.default_rng(seed).normal(0, 0.02, n)))
    # at the stated 5 % per series a few alarms in 40 are possible; never more than one change
    assert len(detect(values, [3.9] * n)) <= 1
    assert detect(values[:2 * MIN_SIZE - 1]) == []


def test_points_without_a_throughput_are_left_out():
    points = [{"throughput": None}, {"throughput": 0}] + [
        {"throughput": 100.0 if i < 10 else 80.0, "ci_low": None, "ci_high": None, "image": str(i)} for i in range(20)]
    found = changes(points)
    assert len(found) == 1 and found[0].before["image"] == "9" and found[0].after["image"] == "10"
