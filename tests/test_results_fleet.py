"""Finding the slow node: the fleet check over per-node results (`slurm --each-node` + `report`)
and the straggler rule over a multi-node result's ranks, on drawn figures (the real cluster runs
are in test_runs_slurm.py)."""
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
    """Three rounds (each host's r-th run is round r): the slow node named, over its rounds."""
    runs = [_run(h, [s * (5 if h.startswith("node2") else 1) * (1 + 0.01 * r) for s in STEADY])
            for r in range(3) for h in ("node1", "node2.cluster", "node3")]
    (slow,) = fleet.slow_hosts(runs)
    assert slow["host"] == "node2" and 75 < slow["below_median_pct"] < 85 and slow["rounds"] == 3
    assert fleet.describe("r", "images/s", slow).startswith("slow host node2: r 1.58 images/s, 95 % CI 1.54-1.62")
    assert fleet.describe("r", "images/s", slow).endswith("80 % below the median host (7.89) over 3 rounds")


def test_one_round_names_no_slow_host_and_says_inconclusive():
    """One run per host (what main named a slow host from): a busy moment on one node looks the
    same, so no host is named; the line says which host is below and why it is not named."""
    runs = [_run("node1", STEADY), _run("node2", [s * 5 for s in STEADY]), _run("node3", STEADY)]
    assert fleet.slow_hosts(runs) == []
    (line,) = fleet.undecided(runs)
    assert line.startswith("host node2: -80.0 % against the median host after 1 round: inconclusive")


def test_a_node_slow_in_one_round_only_is_not_named():
    """A load that hit one node in one round of three: not a slow node."""
    runs = [_run(h, [s * (5 if (h, r) == ("b", 1) else 1) for s in STEADY]) for r in range(3) for h in "abc"]
    assert fleet.slow_hosts(runs) == []


def test_one_host_or_unnamed_hosts_are_no_fleet():
    assert fleet.slow_hosts([_run("a", STEADY), _run("a", [s * 3 for s in STEADY])]) == []
    assert fleet.slow_hosts([_run(None, STEADY), _run("b", [s * 3 for s in STEADY])]) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(0.01, 100), min_size=2, max_size=6), min_size=4, max_size=12),
       st.integers(2, 4))
def test_never_the_median_host_nor_one_faster(window_sets, hosts):
    runs = [_run(f"n{i % hosts}", seconds) for i, seconds in enumerate(window_sets)]
    slow = fleet.slow_hosts(runs)
    for s in slow:
        assert s["below_median_pct"] > 5 and s["ratio_high"] < 0.95
    assert len(slow) < hosts / 2 + 1     # below the median: at most half the hosts


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
