"""`dnnbench watch`'s logic with a stand-in for the engine (as tests/test_results_rounds.py does for
bisect): which releases it surveys, where it looks, that the verdict is the rounds', that the
history's releases are not run again, and that it resumes. The real engine: test_campaigns_watch.py."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnbench.errors import DnnbenchError
from dnnbench.campaigns import watch
from dnnbench.results import numbers
from dnnbench.campaigns import bisect as bisect_mod
from dnnbench.runs.options import RunOptions
from dnnbench.workloads import schema
from tests.test_results_rounds import Machine

RELEASES = [f"img:r{i}" for i in range(1, 9)]


def _stand_in(mp, machine: Machine, work: dict, fail_after: int | None = None, broken: str | None = None):
    """measure() as a stand-in: a result written to the step's folder like a real run's (read
    back when it is there), made by the machine; `broken` ends in error; after `fail_after`
    runs, an interrupted one."""
    def measure(step, base, template, dataset=None):
        result = step.run_dir / schema.RESULT_FILE
        if result.is_file():
            step.result, step.reused = json.loads(result.read_text()), True
        else:
            if step.image == broken:
                raise DnnbenchError(f"{broken}: the run ended error: no such release")
            if fail_after is not None and len(machine.runs) >= fail_after:
                raise DnnbenchError(f"interrupted while measuring {step.image}", exit_code=130)
            data = machine.result(work[step.image], step.run_dir.name)
            data.update(workload="vae", options={"batch_size": 1}, run_id=step.run_dir.name, status="ok",
                        started=f"2026-11-27T10:{len(machine.runs):02d}:00Z")
            step.run_dir.mkdir(parents=True)
            result.write_text(json.dumps(data))
            step.result = data
        step.headline = numbers.run_headline(step.result)
        step.load = step.result["windows"][-1]["load1"]
        return step
    mp.setattr(bisect_mod, "measure", measure)
    mp.setattr(bisect_mod, "check_first", lambda *a: True)   # no engine: nothing to plan


def _watch(tmp: Path, machine: Machine, slow_from: int, **kw) -> tuple[int, str]:
    work = {img: (1.33 if i >= slow_from else 1.0) for i, img in enumerate(RELEASES)}
    shown = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DNNBENCH_DB", str(tmp / "history.db"))
        _stand_in(mp, machine, work, kw.pop("fail_after", None))
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(shown):
            code = watch.watch_command(RunOptions(workload="vae", runtime="docker", results=tmp, run_id="w"),
                                       RELEASES, None, 0.1, **kw)
    return code, " ".join(shown.getvalue().split())


def quiet() -> Machine:
    return Machine("step", 1.0, 0.0, wobble=0.01)


def test_the_survey_is_the_newest_first_then_every_nth():
    assert watch.survey_order(8, 1) == [7, 0, 1, 2, 3, 4, 5, 6]
    assert watch.survey_order(8, 3) == [7, 0, 3, 6]
    assert watch.survey_order(2, 5) == [1, 0]


def test_a_slower_release_in_the_middle_is_found_by_change_detection_and_confirmed_in_rounds(tmp_path):
    machine = quiet()
    code, out = _watch(tmp_path, machine, 5, rounds=3)
    assert code == 1 and "slower: " in out and "from img:r6, after img:r5 (rounds; suspected by change detection)" in out, out
    # the survey (8 runs), then the two sides in 3 alternated rounds
    assert len(machine.runs) == 8 + 6, machine.runs
    assert machine.runs[8:10] == ["04-img_r5", "05-img_r6"] and machine.runs[10:12] == ["05-img_r6-round2",
                                                                                          "04-img_r5-round2"]


def test_releases_left_out_of_a_sparse_survey_are_bisected(tmp_path):
    machine = quiet()
    code, out = _watch(tmp_path, machine, 5, rounds=3, every=3)
    assert code == 1 and "from img:r6, after img:r5" in out, out
    # surveyed r8, r1, r4, r7; never measured: r2, r3 (before the change, outside the bisected range)
    assert not any(r.startswith(("01-", "02-")) for r in machine.runs), machine.runs


def test_a_slower_newest_release_is_judged_against_its_predecessors(tmp_path):
    """One slower point at the end is too few for change detection; the newest release is judged
    in rounds against the release two surveyed places before it, and bisected to its predecessor."""
    machine = quiet()
    code, out = _watch(tmp_path, machine, 7, rounds=3)
    assert code == 1 and "from img:r8, after img:r7 (rounds; suspected by newest release)" in out, out


def test_no_slowdown_no_rounds_exit_0(tmp_path):
    machine = quiet()
    code, out = _watch(tmp_path, machine, 99, rounds=3)
    assert code == 0 and "slower" not in out and len(machine.runs) == len(RELEASES), (out, machine.runs)


def test_releases_in_the_history_are_not_run_again(tmp_path):
    """A first watch over r1..r6 records nothing (the stand-in runs record nothing), so its
    results are imported; a second watch over r1..r8 runs only the two new releases in its survey."""
    from dnnbench.history.facts import row
    from dnnbench.history.store import Store
    machine = quiet()
    _watch(tmp_path, machine, 99, rounds=3)
    store = Store(str(tmp_path / "history.db"))
    made = [row(p, json.loads(p.read_text())) for p in sorted((tmp_path / "w").glob("0[0-5]-*/result.json"))]
    store.add([dict(r, image=RELEASES[int(Path(r["path"]).parent.name[:2])]) for r in made])
    store.close()
    (tmp_path / "w").rename(tmp_path / "first")
    machine = quiet()
    code, out = _watch(tmp_path, machine, 99, rounds=3)
    assert code == 0 and sorted(machine.runs) == ["06-img_r7", "07-img_r8"], machine.runs


def test_an_interrupted_watch_resumes_with_the_same_verdict(tmp_path):
    machine = quiet()
    with pytest.raises(DnnbenchError) as stopped:
        _watch(tmp_path, machine, 5, rounds=3, fail_after=10)
    assert stopped.value.exit_code == 130 and len(machine.runs) == 10
    code, out = _watch(tmp_path, machine, 5, rounds=3)
    assert code == 1 and "from img:r6, after img:r5" in out, out
    assert len(machine.runs) == 8 + 6      # the ten finished runs read back, none run twice


def test_an_unusable_store_is_refused_before_any_run(tmp_path, monkeypatch):
    machine = quiet()
    (tmp_path / "history.db").mkdir()
    with pytest.raises(DnnbenchError, match="not a database file"):
        _watch(tmp_path, machine, 5, rounds=3)
    assert machine.runs == []


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["step", "ramp"]), st.floats(1.5, 6), st.floats(0, 150), st.integers(1, 7),
       st.sampled_from([1, 3]))
def test_watch_is_right_or_says_nothing_whatever_the_load_does(kind, factor, at, slow_from, every):
    """A load step or ramp at any moment: a release named slower is the first slower one (or a
    range named holds it); a watch that names none exits 0. Never a wrong release."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        code, out = _watch(Path(tmp), Machine(kind, factor, at, span=200.0, wobble=0.01), slow_from, rounds=3,
                           every=every)
    named = [s.split(", after ")[0].split("from ")[-1] for s in out.split("slower: ")[1:] if "from img:" in s]
    for name in named:
        assert name == RELEASES[slow_from], out
    if code == 0:
        assert not named


@pytest.mark.parametrize("values,every,want", [
    ([100] * 5 + [75] * 3, 1, [(4, 5, "change detection")]),
    ([100] * 7 + [75], 1, [(5, 7, "newest release")]),         # one point after: too few to detect
    ([100] * 6 + [75] * 2, 1, [(5, 7, "newest release")]),     # two after: bisected between 5 and 7
    ([100] * 7 + [97], 1, []),                                 # within half the tolerance: not suspected
    ([100] * 8, 1, []),
])
def test_where_watch_looks(values, every, want):
    points = {i: [{"throughput": v * (1 + 0.002 * (i % 3)), "ci_low": v * 0.99, "ci_high": v * 1.01, "index": i}]
              for i, v in enumerate(values) if i in watch.survey_order(len(values), every)}
    assert watch.suspects(points, 0.1) == want


def test_a_survey_line_says_the_unit_and_the_interval():
    """`[survey] image: 59.6/s` beside `25.4/s` said neither what was counted nor how sure it was."""
    from dnnbench.campaigns.watch import figure
    one = {"throughput": 59.61, "unit": "images/s", "ci_low": 55.02, "ci_high": 64.2}
    assert figure([one]) == "59.6 images/s (95 % CI 55.0-64.2)"
    assert figure([dict(one, ci_low=None)]) == "59.6 images/s (no 95 % CI)"
    assert figure([one, dict(one, throughput=25.4)]) == "42.5 images/s (mean of 2, range 25.4-59.6)"


def test_watch_stops_at_max_runs_with_the_verdict_so_far(tmp_path):
    """The survey (8 runs) and two rounds of the suspect's ends fit in 12 runs: the watch stops
    before the third round and says what it had, without calling it slower."""
    machine = quiet()
    code, out = _watch(tmp_path, machine, 5, rounds=3, budget=bisect_mod.Budget(max_runs=12))
    assert len(machine.runs) == 12, machine.runs
    assert code == 0 and "not confirmed: img:r6 against img:r5 is inconclusive" in out, out
    assert "stopped (--max-runs 12 reached) before the ends were decided" in out, out
