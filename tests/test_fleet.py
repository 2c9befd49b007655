"""Finding the slow node: the fleet check over per-node results (`slurm --each-node` + `report`)
and the straggler rule over a multi-node result's ranks, on drawn figures (the real cluster runs
are in test_slurm.py)."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from dnnbench.results import fleet
from dnnbench.workloads import verdict


def _run(host, seconds):
    """One node's result as the report keeps it: 5 windows of 8 items."""
    return {"world_size": 1, "host": host, "copies": [],
            "windows": [{"items": 8, "seconds": s, "data_wait": 0.0} for s in seconds]}


STEADY = [1.0, 1.01, 0.99, 1.0, 1.02]


def test_the_node_at_a_fifth_of_the_speed_is_named_and_no_other():
    runs = [_run("node1", STEADY), _run("node2.cluster", [s * 5 for s in STEADY]), _run("node3", STEADY)]
    (slow,) = fleet.slow_hosts(runs)
    assert slow["host"] == "node2" and 75 < slow["below_median_pct"] < 85
    assert "slow host node2: r 1.59 images/s, 95 % CI 1.57-1.62, 80 % below the median host (7.97)" == fleet.describe("r", "images/s", slow)


def test_a_node_within_its_own_noise_is_not_named():
    noisy = [0.6, 1.6, 0.9, 1.5, 1.2]          # mean rate below the others, but a wide CI
    assert fleet.slow_hosts([_run("a", STEADY), _run("b", noisy), _run("c", STEADY)]) == []


def test_one_host_or_unnamed_hosts_are_no_fleet():
    assert fleet.slow_hosts([_run("a", STEADY), _run("a", [s * 3 for s in STEADY])]) == []
    assert fleet.slow_hosts([_run(None, STEADY), _run("b", [s * 3 for s in STEADY])]) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(0.01, 100), min_size=2, max_size=6), min_size=2, max_size=8))
def test_never_the_median_host_nor_one_faster(window_sets):
    runs = [_run(f"n{i}", seconds) for i, seconds in enumerate(window_sets)]
    figures = fleet.per_host(runs)
    slow = fleet.slow_hosts(runs)
    for s in slow:
        assert figures[s["host"]]["value"] < s["median_host"]
        assert s["ci95_high"] is None or s["ci95_high"] < s["median_host"]
    assert len(slow) < len(runs) / 2 + 1     # below the median: at most half the hosts


def _ranks(steps):
    return [{"rank": i, "host": f"node{i + 1}", "local_step_s": s} for i, s in enumerate(steps)]


def test_the_straggler_is_the_rank_whose_own_step_is_slow():
    (s,) = verdict.stragglers(_ranks([0.10, 0.52, 0.11]))
    assert s["rank"] == 1 and s["host"] == "node2" and round(s["times_median"], 1) == 4.7
    assert verdict.stragglers(_ranks([0.10, 0.12])) == []          # within 1.3x
    assert verdict.stragglers(_ranks([0.10])) == [] and verdict.stragglers([{"rank": 0}, "x"]) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(1e-4, 10), min_size=2, max_size=16))
def test_a_straggler_is_never_faster_than_the_median(steps):
    ordered = sorted(steps)
    for s in verdict.stragglers(_ranks(steps)):
        assert s["times_median"] >= verdict.STRAGGLER and s["local_step_s"] > ordered[0]
