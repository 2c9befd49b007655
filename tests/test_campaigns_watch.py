"""`dnnbench watch` on real images: six releases of the test image, the fourth and later with
a slower optimizer step (as tests/test_campaigns_bisect.py builds them), watched end to end."""
from __future__ import annotations

import json

import pytest

from tests.helpers import dnnbench, one_line_error
from tests.releases import series
from tests.test_campaigns_bisect import GOOD, SLOW, TINY, WORKLOAD

pytestmark = pytest.mark.engine


# named apart from test_campaigns_bisect's `releases` (tests/conftest.py's _RELEASES): these tests run in
# the engine stream, which ends minutes before the rounds stream where the bisect tests run
@pytest.fixture(scope="module")
def watched(built_image, tmp_path_factory):
    with series(built_image, tmp_path_factory.mktemp("watched"), "w", 6, 4, GOOD, SLOW) as made:
        yield made


def test_watch_names_the_slower_release_records_each_once_and_resumes(watched, tmp_path, monkeypatch):
    monkeypatch.setenv("DNNBENCH_DB", str(tmp_path / "history.db"))
    args = ["watch", WORKLOAD, "--images", ",".join(watched), "--results", tmp_path, "--run-id", "w",
            "--tolerance", "0.1", "--rounds", "4", *TINY]
    res = dnnbench(*args, env={"COLUMNS": "80"}, timeout=1800)
    assert res.returncode == 1, res.stdout + res.stderr          # a release made it slower
    text = " ".join(res.stdout.split())     # the verdict is wrapped at the terminal's width
    # surveyed once each, the change found between w3 and w4, confirmed there in alternated rounds
    assert text.startswith("slower: -") and f"from {watched[3]}, after {watched[2]} (rounds; suspected by " \
        f"change detection) image: {watched[2]} -> {watched[3]}" in text, text
    assert max(len(line) for line in res.stdout.splitlines()) <= 80, res.stdout
    made = sorted(str(p) for p in (tmp_path / "w").rglob("result.json"))
    listed = json.loads(dnnbench("history", "-f", "json", check=0).stdout)
    assert sorted(r["path"] for r in listed) == made        # every run recorded, each once
    assert {r["image"] for r in listed} == set(watched)
    # again: every release read back or found in the history, none run, none recorded twice
    again = dnnbench(*args, env={"COLUMNS": "80"}, timeout=600)
    assert again.returncode == 1 and again.stdout == res.stdout, again.stdout + again.stderr
    said = [line for line in again.stderr.splitlines() if line.startswith(("[survey]", "[round"))]
    assert said and all("(read back)" in line or "in the history, not run" in line for line in said), said
    assert sorted(str(p) for p in (tmp_path / "w").rglob("result.json")) == made
    assert len(json.loads(dnnbench("history", "-f", "json", check=0).stdout)) == len(made)


def test_watch_refuses_an_unusable_store_before_any_run(watched, tmp_path, monkeypatch):
    monkeypatch.setenv("DNNBENCH_DB", str(tmp_path))
    one_line_error(dnnbench("watch", WORKLOAD, "--images", ",".join(watched[:2]), "--results", tmp_path / "r",
                            *TINY), "is a folder, not a database file")
    assert not (tmp_path / "r").exists()
