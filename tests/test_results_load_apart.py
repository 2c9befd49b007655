"""Verdicts between sides measured apart: `compare` of two result sets, `report --baseline`
(a targets file or a results folder) and `reproduce` without a second image. The unit is a run,
never a window, and a verdict turns inconclusive when the sides' recorded load differed by
results/load.APART or more, or a side has too few runs: right or inconclusive, never wrong.

The results are synthetic (a recorded result with its windows replaced): each run's windows
carry the load average a busy machine would record, and the figure that load made. The image is
the same on both sides; only the load differs, so any faster/slower/pass/fail is wrong."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnbench.results import load, numbers, rounds
from tests.helpers import ROOT, dnnbench

TEMPLATE = ROOT / "tests" / "fixtures" / "results" / "cpu-suite" / "resnet18-bs4" / "r1" / "result.json"
TOL = 0.05


def _run(folder: Path, name: str, rate: float, load1: float | None, windows: int = 6, wobble: float = 0.005,
         job: str = "resnet18-bs4") -> dict:
    """A run of `rate` items/s whose windows are steady (a narrow CI over windows) and recorded
    `load1`; written as FOLDER/NAME/result.json."""
    data = json.loads(TEMPLATE.read_text())
    data["run_id"] = f"{folder.name}.{name}"
    data["started"] = f"2026-01-01T00:{len(list(folder.glob('*'))) if folder.exists() else 0:02d}:00"
    data["job"] = job
    data["windows"] = [{"items": 8, "seconds": 8 / rate * (1 + wobble * ((k % 3) - 1)), "data_wait": 0.0,
                        **({"load1": load1} if load1 is not None else {})} for k in range(windows)]
    (folder / name).mkdir(parents=True)
    (folder / name / "result.json").write_text(json.dumps(data))
    return data


def _side(folder: Path, rates: list[float], load1: float | None) -> None:
    for k, rate in enumerate(rates):
        _run(folder, f"r{k + 1}", rate, load1)


QUIET = [10.0, 10.1, 9.95]
BUSY = [5.0, 5.04, 4.97]       # the same image, half as fast beside a load six times as high


# --- compare --------------------------------------------------------------------------------

def _compare(a: Path, b: Path) -> tuple[str, str]:
    res = dnnbench("compare", str(a), str(b), "--wide")
    row = [line for line in res.stdout.splitlines() if line.lstrip().startswith("resnet18-bs4")]
    return row[0].split()[-1], " ".join(res.stdout.split())


def test_compare_a_load_that_differed_between_the_sides_is_not_the_verdict(tmp_path):
    """Main called B `slower` here: three tight runs a side, Welch's interval far below 1. The
    load recorded on B's side was 6x A's: inconclusive, and it says why."""
    _side(tmp_path / "a", QUIET, 1.0)
    _side(tmp_path / "b", BUSY, 6.0)
    verdict, text = _compare(tmp_path / "a", tmp_path / "b")
    assert verdict == "inconclusive", text
    assert "load differed 6.0x between the sides" in text and "not alternated" in text


def test_compare_at_the_same_load_still_decides(tmp_path):
    _side(tmp_path / "a", QUIET, 2.0)
    _side(tmp_path / "b", BUSY, 2.5)
    assert _compare(tmp_path / "a", tmp_path / "b")[0] == "slower"


def test_compare_one_run_a_side_is_inconclusive_however_narrow_its_windows(tmp_path):
    _run(tmp_path / "a", "r1", 10.0, 1.0, windows=30, wobble=0.001)
    _run(tmp_path / "b", "r1", 5.0, 1.0, windows=30, wobble=0.001)
    verdict, text = _compare(tmp_path / "a", tmp_path / "b")
    assert verdict == "inconclusive" and "1 run(s) of A, 1 of B" in text, text


# --- report --baseline ------------------------------------------------------------------------

def _report(results: Path, baseline: Path) -> tuple[dict, int, str]:
    res = dnnbench("report", str(results), "--baseline", str(baseline), "-f", "json")
    rows = {r["job"]: r for r in json.loads(res.stdout)["jobs"]}
    table = dnnbench("report", str(results), "--baseline", str(baseline), env={"COLUMNS": "80"}).stdout
    return rows["resnet18-bs4"], res.returncode, " ".join(table.split())


def test_a_baseline_folder_measured_at_another_load_is_inconclusive_not_fail(tmp_path):
    """Main turned the folder into one number and judged this week's runs' CI against it: a
    fail (exit 1) where only the load had changed. Runs against runs, the loads compared."""
    _side(tmp_path / "last-week", QUIET, 1.0)
    _side(tmp_path / "now", BUSY, 6.0)
    row, code, table = _report(tmp_path / "now", tmp_path / "last-week")
    assert row["target_verdict"] == "inconclusive" and code == 0, row
    assert "load differed 6.0x" in row["target_why"] and "vs target inconclusive" in table, table


def test_a_baseline_folder_at_the_same_load_fails_a_slower_job(tmp_path):
    _side(tmp_path / "last-week", QUIET, 1.0)
    _side(tmp_path / "now", BUSY, 1.5)
    row, code, _ = _report(tmp_path / "now", tmp_path / "last-week")
    assert row["target_verdict"] == "fail" and code == 1, row
    _side(tmp_path / "again", QUIET[::-1], 1.0)
    row, code, _ = _report(tmp_path / "again", tmp_path / "last-week")
    assert row["target_verdict"] == "pass" and code == 0, row


def test_one_run_against_a_target_decides_only_beyond_the_spread_between_runs(tmp_path):
    """Main judged one run by its windows' CI (+-0.2 % here): fail against 9.5. One run cannot
    tell the job from the load of its moment, within the largest spread between runs measured
    (rounds.RUN_SPREAD); a target far beyond that is decided by one run."""
    _run(tmp_path / "now", "r1", 5.0, 6.0, windows=30, wobble=0.001)
    (tmp_path / "targets.yaml").write_text("resnet18-bs4: 10\n")
    row, code, table = _report(tmp_path / "now", tmp_path / "targets.yaml")
    assert row["target_verdict"] == "inconclusive" and code == 0, row
    assert "1 run: its interval widened 4.6x" in row["target_why"], row
    (tmp_path / "far.yaml").write_text("resnet18-bs4: 1000000\n")
    row, code, _ = _report(tmp_path / "now", tmp_path / "far.yaml")
    assert row["target_verdict"] == "fail" and code == 1, row
    (tmp_path / "low.yaml").write_text("resnet18-bs4: 0.01\n")
    row, code, _ = _report(tmp_path / "now", tmp_path / "low.yaml")
    assert row["target_verdict"] == "pass" and code == 0, row
    _side(tmp_path / "more", BUSY, 6.0)
    row, code, _ = _report(tmp_path / "more", tmp_path / "targets.yaml")
    assert row["target_verdict"] == "fail" and code == 1, row


# --- the rule itself, drawn --------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(0.9, 1.1), min_size=1, max_size=6), st.lists(st.floats(0.9, 1.1), min_size=1, max_size=6),
       st.floats(0.1, 2.0), st.floats(3.0, 30.0), st.floats(0.2, 1.0))
def test_a_load_apart_by_the_factor_is_never_a_verdict(noise_a, noise_b, quiet, factor, effect):
    """Whatever the runs' figures, a side whose load was `factor` (>= APART) times the other's
    gives no verdict (the slowdown the load made can be any size)."""
    a = [10.0 * x for x in noise_a]
    b = [10.0 * effect * x for x in noise_b]
    busy = max(quiet, load.FLOOR) * factor
    for j in (rounds.apart(a, b, TOL, loads_a=[quiet] * len(a), loads_b=[busy] * len(b)),
              rounds.apart_gate(a, b, TOL, loads_base=[quiet] * len(a), loads_runs=[busy] * len(b)),
              rounds.single_sided(b, a[0], TOL, 8, loads_new=[busy] * len(b), load_recorded=quiet)):
        assert j.verdict == "inconclusive" and "load differed" in j.why and not j.alternated


def test_a_smaller_load_difference_widens_the_interval_by_its_factor():
    """Loads 1.5x apart can make a figure 1.5x lower: a 30 % drop is not beyond what they made,
    a 60 % drop is (the interval, widened 1.5x each way, still clears the band)."""
    a, la, lb = [10.0, 10.1, 9.9], [1.0] * 3, [1.5] * 3
    j = rounds.apart(a, [7.0, 7.05, 6.95], TOL, loads_a=la, loads_b=lb)
    assert j.verdict == "inconclusive" and "the load differed 1.5x" in j.why and j.low < 0.7 / 1.4
    assert rounds.apart(a, [7.0, 7.05, 6.95], TOL, loads_a=la, loads_b=la).verdict == "slower"
    assert rounds.apart(a, [4.0, 4.02, 3.98], TOL, loads_a=la, loads_b=lb).verdict == "slower"


def test_the_loads_of_the_sides():
    assert load.apart([1.0, 1.2], [6.0]) == pytest.approx(6.0 / 1.1)
    assert load.apart([0.1], [0.5]) == 1.0            # both below one process: a quiet machine
    assert load.apart([], [4.0]) is None              # a side from before the load was recorded


def test_single_sided_counts_the_recorded_run_as_one_draw():
    """The recorded figure is one run with the new runs' spread (a prediction interval), not an
    exact number: new runs 1 % apart cannot call a 3 % difference 'slower' at 5 % tolerance."""
    new = [9.7 * (1 + 0.01 * e) for e in (1, -1, 0.5, -0.5, 0, 1, -1, 0)]
    j = rounds.single_sided(new, 10.0, TOL, 8)
    assert j.verdict in ("same", "inconclusive") and j.low is not None and j.low < 0.97 < j.high
    clear = rounds.single_sided([5.0, 5.02, 4.98], 10.0, TOL, 8, loads_new=[1.1] * 3, load_recorded=1.0)
    assert clear.verdict == "slower" and clear.ratio == pytest.approx(0.5, rel=0.01)


# --- reproduce, its runs made by a stand-in ----------------------------------------------------

def test_reproduce_single_sided_under_another_load_is_inconclusive(tmp_path, monkeypatch, capsys):
    """The recorded run was quiet (load 1); every new run is half as fast beside a load of 6.
    Main: 'not reproduced: slower' (exit 1), the recorded figure taken as exact. Now: the load
    that differed is the reason, inconclusive (exit 0)."""
    from dnnbench.runs import launch
    from dnnbench.campaigns.reproduce import reproduce_command
    recorded = tmp_path / "recorded"
    _run(recorded, "r1", 10.0, 1.0)
    made = iter(range(100))

    def execute(plan, quiet=False):
        data = _run(tmp_path / "new", f"n{next(made)}", 5.0 * (1 + 0.004 * (len(list((tmp_path / 'new').glob('*'))) % 3)),
                    6.0)
        return data, 0
    monkeypatch.setattr(launch, "execute", execute)
    code = reproduce_command(recorded / "r1", runtime="host", image=None, results=tmp_path / "out", run_id="again",
                             tolerance=TOL, quiet=True)
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0 and "verdict: inconclusive" in text and "load differed 6.0x" in text, text
    assert "single-sided, not alternated" in text


def test_the_one_explanation_of_a_wide_interval():
    windows = [{"items": 8, "seconds": 1.0, "load1": x} for x in (1.0, 1.0, 9.0)]
    assert load.why_wide(9.9, 1, windows) is None and load.why_wide(load.WIDE_PCT, 3, windows) is None
    assert load.why_wide(30.0, 1, windows[:2]) == "too few windows (2): add --repeat or --until-ci"
    assert "too few runs (2 runs, 3 timed windows)" in load.why_wide(30.0, 2, windows)
    assert "load changed 9x during the runs" in load.why_wide(30.0, 2, windows)
    assert load.why_wide(30.0, 4, windows, sd_pct=25.0).startswith("the runs disagree (sd 25 % over 4 runs)")
    assert load.why_wide(None, 0, []) is None         # no run finished: nothing to explain
    steady = [{"items": 8, "seconds": 1.0, "load1": 1.0}] * 5
    assert "the windows disagree" in load.why_wide(12.0, 5, steady)
    head = numbers.job_headline([{"windows": windows, "world_size": 1}])
    assert load.explain(head, windows) == load.why_wide(head["ci95_pct"], 1, windows, head["sd_pct"])
    assert math.isfinite(head["value"])


# --- scaling efficiency: the reference run and the N-rank run are measured apart ---------------

def test_a_scaling_efficiency_made_by_a_load_that_differed_is_not_communication_bound():
    """Main called a run `communication-bound` from its efficiency against a reference run made
    at another moment; when the reference ran at load 1 and the ranks beside a load of 6, the
    efficiency is the load's: said, not judged."""
    from dnnbench.workloads import schema, verdict
    reference = _run_data(10.0, 1.0, world_size=1)
    ranks = _run_data(5.0, 6.0, world_size=2)             # two ranks, no faster than one: 0.5
    ranks["scaling"] = schema.scaling(ranks, reference)
    assert ranks["scaling"]["efficiency"] == pytest.approx(0.5, rel=0.01)
    assert ranks["scaling"]["load1"] == 6.0 and ranks["scaling"]["reference_load1"] == 1.0
    v = verdict.judge(ranks)
    assert v["label"] != "communication-bound", v
    assert any("efficiency not judged: the reference ran at load 1.0, this run at 6.0" in e for e in v["evidence"])
    ranks["scaling"] = schema.scaling(ranks, _run_data(10.0, 4.0, world_size=1))    # 1.5x apart: judged
    assert verdict.judge(ranks)["label"] == "communication-bound"


def _run_data(rate: float, load1: float, world_size: int) -> dict:
    data = json.loads(TEMPLATE.read_text())
    data.update(world_size=world_size, data_wait_fraction=0.0, run_id=f"r{world_size}")
    data["windows"] = [{"items": 8, "seconds": 8 / rate, "data_wait": 0.0, "load1": load1} for _ in range(6)]
    return data
