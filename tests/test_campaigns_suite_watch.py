"""A suite's watch list (`watch:` beside `jobs:`): its schema checked at load with file:line
(generated), each entry run after the jobs through `dnnbench watch`'s own code (with a stand-in
engine, as tests/test_campaigns_watch_rounds.py does), and one suite over real release images
(tests/releases.py), in the rounds stream."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnbench.errors import DnnbenchError
from dnnbench.campaigns import suite as suite_mod
from dnnbench.campaigns.suite_schema import WATCH_KEYS
from tests.helpers import cli_inprocess, dnnbench, one_line_error
from tests.releases import series
from tests.test_campaigns_bisect import GOOD, SLOW
from tests.test_campaigns_watch_rounds import _stand_in as _watch_stand_in
from tests.test_results_rounds import Machine

# --- the schema: every bad key or value is one line naming the file and the key's line ---------

# per watch key, values it refuses (a wrong type, out of range, or what `watch` itself refuses)
BAD = {
    "name": [5, ["a"], "../x", "a b"],
    "workload": [5, ["vae"], "nope"],
    "images": [5, ["img:r1"], ["img:r1", 5], "img:r1,,img:r2", {"a": 1}, ["img:r1", "img:r1"]],
    "bases": [5, "ngc-24.01", "x..y", ["ngc-24.01", "ngc-24.05"]],
    "every": [0, -1, 1.5, "2", True, 10 ** 9],
    "rounds": [0, 101, 2.5, "3"],
    "tolerance": [0, 1.5, -0.1, "0.1"],
    "batch_size": [0, [1, 2], 2.5, True, "4"],
    "amp": ["fp8", 1, ["fp16"]],
    "options": [[1], {"number": 0}, {"numbr": 1}, {"lr": -1}, {"results": "/etc"}, {"seed": 1.5}],
    "data": [5, ["/data"]],
    "gpus": [[0], -1],
    "runtime": ["podman", "host", 1],
}
GOOD_ENTRY = {"workload": "vae", "images": ["img:r1", "img:r2", "img:r3"], "every": 2}


def _yaml(jobs: int, before: list[dict], entry: dict) -> tuple[str, dict[str, int]]:
    """A suite file (JSON values are YAML) with `jobs` jobs, the `before` watch entries and then
    `entry`; the line of each of entry's keys."""
    lines = ["name: s"]
    if jobs:
        lines += ["jobs:"] + [f"  - {{name: j{i}, workload: vae, image: 'img:r1'}}" for i in range(jobs)]
    lines.append("watch:")
    for i, other in enumerate(before):
        lines.append(f"  - name: w{i}")
        lines += [f"    {k}: {json.dumps(v)}" for k, v in other.items() if k != "name"]
    at = {}
    for n, (key, value) in enumerate(entry.items()):
        lines.append(("  - " if n == 0 else "    ") + f"{key}: {json.dumps(value)}")
        at[key] = len(lines)
    return "\n".join(lines) + "\n", at


def _dry_run(tmp: Path, text: str) -> tuple[int, str]:
    path = tmp / "s.yaml"
    path.write_text(text)
    code, _, err = cli_inprocess("suite", "run", path, "--results", tmp / "results", "--dry-run")
    return code, err


def _one_error(code: int, err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_every_bad_watch_key_or_value_is_one_line_at_its_line(tmp_path_factory, data):
    key = data.draw(st.sampled_from(sorted(BAD)))
    value = data.draw(st.sampled_from(BAD[key]))
    entry = dict(GOOD_ENTRY)
    if key == "bases":
        del entry["images"]
    entry[key] = value
    order = data.draw(st.permutations(list(entry)))
    entry = {k: entry[k] for k in order}
    text, at = _yaml(data.draw(st.integers(0, 2)), [GOOD_ENTRY] * data.draw(st.integers(0, 2)), entry)
    line = _one_error(*_dry_run(tmp_path_factory.mktemp("bad"), text))
    assert line.startswith(f"error: {tmp_path_factory.getbasetemp()}") and f"s.yaml:{at[key]}: " in line, (text, line)


@settings(max_examples=30, deadline=None)
@given(st.from_regex(r"[a-z][a-z_]{0,14}", fullmatch=True).filter(lambda k: k not in WATCH_KEYS),
       st.integers(0, 2))
def test_an_unknown_watch_key_is_named_at_its_line(tmp_path_factory, key, jobs):
    text, at = _yaml(jobs, [], {**GOOD_ENTRY, key: 1})
    line = _one_error(*_dry_run(tmp_path_factory.mktemp("unknown"), text))
    assert f"s.yaml:{at[key]}: unknown watch key {key!r}" in line, line


@pytest.mark.parametrize("text,fragment", [
    ("watch: []\n", ":1: a suite needs a non-empty `jobs:` list, a `watch:` list, or both"),
    ("watch: {workload: vae}\n", ":1: a suite needs a non-empty"),
    ("jobs: []\nwatch:\n  - workload: vae\n    images: [a, b]\n", ":1: a suite needs a non-empty"),
    ("watch: [vae]\n", "each watch entry is a mapping"),
    ("watch:\n  - workload: vae\n", ":2: a watch entry takes `images:` (in release order) or `bases:`"),
    ("watch:\n  - workload: vae\n    images: [a, b]\n    bases: ngc-24.01..ngc-24.05\n", ":3: a watch entry takes"),
    ("watch:\n  - images: [a, b]\n", ":2: a watch entry needs `workload:`"),
    ("watch:\n  - workload: vea\n    images: [a, b]\n", ":2: unknown workload 'vea'; did you mean vae?"),
    ("defaults:\n  batch_size: [1, 2]\nwatch:\n  - workload: vae\n    images: [a, b]\n",
     ":4: a watch runs one batch_size and the defaults give a list"),
    ("defaults:\n  runtime: host\nwatch:\n  - workload: vae\n    images: [a, b]\n", ":4: a watch compares images in"),
    ("watch:\n  - workload: vae\n    images: [a, b]\n  - workload: vae\n    images: [c, d]\n",
     ":4: watch entry 'vae' appears twice"),
    ("jobs:\n  - workload: vae\n    name: watch\nwatch:\n  - workload: vae\n    images: [a, b]\n",
     ":3: a job named 'watch' would share the watch list's folder"),
    ("defaults:\n  options: {numbr: 1}\nwatch:\n  - workload: vae\n    images: [a, b]\n",
     ":2: unknown option 'options.numbr'; did you mean number?"),
])
def test_a_wrong_watch_list_is_one_line_before_anything_runs(tmp_path, text, fragment):
    line = _one_error(*_dry_run(tmp_path, text))
    assert fragment in line, line


def test_the_dry_run_lists_the_watch_entries_and_only_selects_them_by_name(tmp_path):
    text = ("name: s\ndefaults:\n  batch_size: 2\n  options: {number: 3}\njobs:\n  - workload: vae\n"
            "    image: 'img:r1'\nwatch:\n  - workload: vae\n    images: img:r1, img:r2, img:r3\n    every: 2\n"
            "  - name: ngc\n    workload: resnet50\n    bases: ngc-24.01..ngc-24.05\n    amp: fp16\n")
    (tmp_path / "s.yaml").write_text(text)
    res = dnnbench("suite", "run", tmp_path / "s.yaml", "--results", tmp_path / "r", "--dry-run", check=0)
    assert res.stdout.splitlines()[1:] == [      # under the header line (runs/suite_dry_run.py)
        "run\tworkload\timage\tbatch\tamp\tgpus\tparallel",
        "vae-bs2/r1\tvae\timg:r1\t2\tnone\t-\t-",
        "watch\tworkload\tbatch\tamp\treleases\tevery",
        "watch/vae\tvae\t2\tdefault\t3\t2",
        "watch/ngc\tresnet50\t2\tfp16\t5\t1"], res.stdout
    only = dnnbench("suite", "run", tmp_path / "s.yaml", "--results", tmp_path / "r", "--dry-run", "--only", "ng*",
                    check=0)
    assert only.stdout.splitlines()[1:] == ["watch\tworkload\tbatch\tamp\treleases\tevery",
                                            "watch/ngc\tresnet50\t2\tfp16\t5\t1"]
    one_line_error(dnnbench("suite", "run", tmp_path / "s.yaml", "--results", tmp_path / "r", "--dry-run",
                            "--only", "x*"), "matches no job; jobs: vae-bs2; watch entries: vae, ngc")
    one_line_error(dnnbench("suite", "run", tmp_path / "s.yaml", "--results", tmp_path / "r", "--dry-run",
                            "--only", "vae", "--runtime", "host"),
                   "watch vae: runtime host: a watch compares images in containers")
    assert not (tmp_path / "r").exists()


# --- the watch list run, with a stand-in engine --------------------------------------------

RELEASES = [f"img:r{i}" for i in range(1, 9)]
BROKEN = "img:broken"


def _stand_in(mp, machine: Machine, work: dict, fail_after: int | None = None):
    """measure() as test_campaigns_watch_rounds' stand-in, BROKEN ending in error."""
    _watch_stand_in(mp, machine, work, fail_after, broken=BROKEN)


WATCHED = """\
name: nightly
watch:
  - name: broken
    workload: vae
    images: [img:r1, {broken}]
  - name: steps
    workload: vae
    images: [{releases}]
    every: 3
    rounds: 3
    tolerance: 0.1
  - name: flat
    workload: vae
    images: [img:r1, img:r2, img:r3]
    rounds: 3
    tolerance: 0.1
"""


def _suite(tmp: Path, machine: Machine, capsys, fail_after: int | None = None, **kw) -> tuple[int, str, str]:
    path = tmp / "nightly.yaml"
    path.write_text(WATCHED.format(broken=BROKEN, releases=", ".join(RELEASES)))
    work = {img: (1.33 if i >= 5 else 1.0) for i, img in enumerate(RELEASES)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DNNBENCH_DB", str(tmp / "history.db"))
        mp.setenv("COLUMNS", "80")
        _stand_in(mp, machine, work, fail_after)
        refused = ""
        try:
            code = suite_mod.suite_command(path, results=tmp / "results", overrides={}, dry_run=False,
                                           **{"only": [], "resume": False, **kw})
        except DnnbenchError as exc:      # as the command line says it: one line, its exit code
            code, refused = exc.exit_code, f"error: {exc}\n"
    shown = capsys.readouterr()
    return code, shown.out, shown.err + refused


def test_each_watch_entry_says_what_it_found_and_a_failed_one_stops_none_after_it(tmp_path, capsys):
    machine = Machine("step", 1.0, 0.0, wobble=0.01)
    code, out, err = _suite(tmp_path, machine, capsys)
    assert code == 1, err                 # a slower release found, and a watch entry failed
    assert "watch broken failed: img:broken: the run ended error: no such release (the suite goes on)" in \
        " ".join(err.split()), err
    assert "slower: " in out and "from img:r6, after img:r5 (rounds; suspected by" in " ".join(out.split()), out
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in out.splitlines()
            if line.split()[:1] and line.split()[0] in ("broken", "steps", "flat")}
    assert rows["broken"].startswith("2 failed: img:broken"), rows
    assert rows["steps"].startswith("8 slower: img:r6 (after img:r5): -"), rows
    assert rows["flat"] == "3 no slower release found", rows
    table = out.splitlines()[[line.strip() for line in out.splitlines()].index("watch list"):]
    assert max(len(line) for line in table) <= 80, out
    assert "watch: 1 found a slower release, 1 failed" in " ".join(err.split())
    # each entry's runs in its own folder, the watch's own layout
    watched = tmp_path / "results" / "nightly" / "watch"
    assert {"flat", "steps"} <= {p.name for p in watched.iterdir()}
    assert (watched / "steps" / "06-img_r7" / "result.json").is_file()
    # surveyed r8, r1, r4, r7 (every 3rd); r2 and r3 never measured (before the change)
    assert not any(p.name.startswith(("01-", "02-")) for p in (watched / "steps").rglob("*")), machine.runs
    assert any(p.name.startswith("judged-") for p in (watched / "steps").iterdir())
    # the same suite again needs --resume, and --resume reads every finished run back
    runs = len(machine.runs)
    code, _, err = _suite(tmp_path, machine, capsys)
    assert code == 2 and "watch entries' runs of this suite: pass --resume" in " ".join(err.split()), err
    code, out, _ = _suite(tmp_path, machine, capsys, resume=True, only=["st*"])
    assert code == 1 and "from img:r6, after img:r5" in out and len(machine.runs) == runs, out
    assert "broken" not in out and "flat" not in out


def test_a_watch_interrupted_stops_the_suite_and_resume_goes_on(tmp_path, capsys):
    machine = Machine("step", 1.0, 0.0, wobble=0.01)
    code, out, err = _suite(tmp_path, machine, capsys, fail_after=5, only=["steps", "flat"])
    assert code == 130 and len(machine.runs) == 5, (out, err)
    assert f"suite interrupted at watch steps: `dnnbench suite run {tmp_path / 'nightly.yaml'} --resume` goes on " \
           f"from there" in " ".join(err.split()), err
    assert not (tmp_path / "results" / "nightly" / "watch" / "flat").exists()     # not started
    code, out, err = _suite(tmp_path, machine, capsys, resume=True, only=["steps", "flat"])
    assert code == 1 and "from img:r6, after img:r5" in out, (out, err)
    whole = Machine("step", 1.0, 0.0, wobble=0.01)      # the same suite, never interrupted
    (tmp_path / "whole").mkdir()
    _suite(tmp_path / "whole", whole, capsys, only=["steps", "flat"])
    assert machine.runs == whole.runs       # the five finished runs read back, none run twice


def test_an_unusable_store_refuses_the_suite_before_its_first_run(tmp_path):
    """As `dnnbench watch` refuses it before its first run: here before the suite's first job."""
    (tmp_path / "store").mkdir()
    machine = Machine("step", 1.0, 0.0, wobble=0.01)
    path = tmp_path / "nightly.yaml"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DNNBENCH_DB", str(tmp_path / "store"))
        _stand_in(mp, machine, {})
        path.write_text(WATCHED.format(broken=BROKEN, releases=", ".join(RELEASES)))
        with pytest.raises(DnnbenchError, match="is a folder, not a database file") as refused:
            suite_mod.suite_command(path, only=[], resume=False, results=tmp_path / "results", overrides={},
                                    dry_run=False)
    assert refused.value.exit_code == 2 and machine.runs == [] and not (tmp_path / "results").exists()


# --- one suite over real release images ------------------------------------------------------

REAL = """\
name: nightly
defaults:
  batch_size: 1
  options: {{warmup: 1, number: 1, repeat: 3, max_windows: 4}}
jobs:
  - workload: vae
    image: {first}
watch:
  - name: broken
    workload: vae
    images: [{first}, dnnbench-test-bisect:not-built]
  - name: releases
    workload: vae
    images: [{releases}]
    rounds: 3
    tolerance: 0.1
"""


@pytest.fixture(scope="module")
def releases(built_image, tmp_path_factory):
    """s1 and s2 in release order, s2 slower: two, so the watch is the survey and one judgement in
    rounds (8-10 runs with the job's, ~13 min on a loaded 2-core machine with three releases).
    Named `releases`: it runs in the rounds stream."""
    with series(built_image, tmp_path_factory.mktemp("suite-watched"), "s", 2, 2, GOOD, SLOW) as made:
        yield made


def test_a_suite_runs_its_jobs_then_watches_real_releases_and_names_the_slower_one(releases, tmp_path, monkeypatch):
    monkeypatch.setenv("DNNBENCH_DB", str(tmp_path / "history.db"))
    path = tmp_path / "nightly.yaml"
    path.write_text(REAL.format(first=releases[0], releases=", ".join(releases)))
    args = ["suite", "run", path, "--results", tmp_path / "results"]
    res = dnnbench(*args, env={"COLUMNS": "80"}, timeout=1800)
    text = " ".join(res.stderr.split())
    assert res.returncode == 1, res.stdout + res.stderr
    assert "1 ok, 0 failed; watch: 1 found a slower release, 1 failed" in text, text
    suite_dir = tmp_path / "results" / "nightly"
    assert json.loads((suite_dir / "vae-bs1" / "r1" / "result.json").read_text())["status"] == "ok"
    # s1 in the history from the job (not run again by the survey), s2 judged against it in rounds
    assert f"[survey] {releases[0]}: 1 result(s) of vae-bs1 in the history, not run" in res.stderr, res.stderr
    lines = res.stdout.splitlines()
    flat = " ".join(res.stdout.split())
    assert "slower: -" in flat and f"from {releases[1]}, after {releases[0]} (rounds; suspected by newest " \
        "release)" in flat, flat
    assert "failed: image dnnbench-test-bisect:not-built is not on this machine" in flat, flat
    assert f"slower: {releases[1]} (after {releases[0]}): -" in flat, flat
    table = lines[[line.strip() for line in lines].index("watch list"):]
    assert max(len(line) for line in table) <= 80, res.stdout
    # again with --resume: every run read back or taken from the history, the same verdict
    again = dnnbench(*args, "--resume", "--only", "releases", env={"COLUMNS": "80"}, timeout=600)
    said = [line for line in again.stderr.splitlines() if line.startswith(("[survey]", "[round"))]
    assert again.returncode == 1 and said, again.stdout + again.stderr
    assert all("(read back)" in line or "in the history, not run" in line for line in said), said
