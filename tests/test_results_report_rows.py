"""Report rows that do not mislead: a job's identity includes its image (a bisect's and a
compare-images' steps are one row per image, never pooled), hosts are machines (never docker
container ids), the unit comes from ok runs, a wide CI says why (results/load.why_wide)."""
from __future__ import annotations

import json

from tests.helpers import ROOT, dnnbench

FIXTURE = ROOT / "tests" / "fixtures" / "results" / "cpu-suite"
RUNS = [FIXTURE / "resnet18-bs4" / "r1", FIXTURE / "resnet18-bs4" / "r2"]


def _result(src, dst, **change):
    """A copy of a recorded result with its host block and fields changed (a run on another
    image or machine), under a run id of its own."""
    data = json.loads((src / "result.json").read_text())
    data["run_id"] = f"{dst.parent.name}.{dst.name}"
    data["started"] = f"2026-01-01T00:00:{len(list(dst.parent.glob('*'))):02d}"
    data.pop("job", None)       # as `run`, compare-images and bisect leave it: named from the options
    for key, value in change.items():
        section, _, field = key.partition("__")
        if field:
            data[section][field] = value
        else:
            data[section] = value
    dst.mkdir(parents=True)
    (dst / "result.json").write_text(json.dumps(data))


def _steps(folder, images, *, machine=None, runtime="docker", slow=False):
    """Two runs per image, as `compare-images --images` or `bisect --bases` leave them: the same
    job, the image in the host block, each docker container's own id as its hostname."""
    k = 0
    for image, base in images:
        for src in RUNS:
            k += 1
            host = {"runtime": runtime, "image": image, "base": base, "exit_code": 0, "ended": "exited",
                    "seconds": 1.0, "command": "x", "gpus": None, **({"machine": machine} if machine else {})}
            _result(src, folder / f"step{k}", host=host, system__host=f"{k:012x}")
            if k == 1 and slow:       # one container's run 3x slower: its "host" would look slow
                path = folder / "step1" / "result.json"
                data = json.loads(path.read_text())
                data["windows"] = [{**w, "seconds": w["seconds"] * 3} for w in data["windows"]]
                path.write_text(json.dumps(data))


def _report(*paths):
    res = dnnbench("report", *map(str, paths), "--format", "json", check=0)
    return json.loads(res.stdout)["jobs"]


def test_a_bisects_and_a_compare_images_results_are_one_row_per_image(tmp_path):
    bisect = [("dnnbench:ngc-24.01", "ngc-24.01"), ("dnnbench:ngc-24.05", "ngc-24.05"),
              ("dnnbench:ngc-24.10", "ngc-24.10")]
    compare = [("registry.example/team/pytorch:a", None), ("registry.example/team/pytorch:b", None)]
    _steps(tmp_path / "bisect", bisect)
    _steps(tmp_path / "compare", compare)
    jobs = _report(tmp_path / "bisect", tmp_path / "compare")
    assert sorted(j["image"] for j in jobs) == sorted(i for i, _ in bisect + compare)
    assert all(j["n"] == 2 and j["job"] == "resnet18-bs4" for j in jobs)
    assert {j["base"] for j in jobs} == {b for _, b in bisect + compare}
    # the table names the image of each row, whole, at 80 columns
    table = dnnbench("report", str(tmp_path / "bisect"), env={"COLUMNS": "80"}, check=0).stdout
    for image, _ in bisect:
        assert sum(line.startswith(image + " ") for line in table.splitlines()) == 1, table


def test_container_ids_are_never_named_as_slow_hosts(tmp_path):
    """Every run on one machine under docker: each container's hostname differs (its id), but
    there is one host and no slow one; the machine the host side recorded is what counts."""
    _steps(tmp_path / "old", [("dnnbench:cpu", "cpu")] * 3, slow=True)            # results from before `host.machine`
    _steps(tmp_path / "new", [("dnnbench:gpu", "cpu")] * 3, machine="node1", slow=True)
    jobs = _report(tmp_path)
    assert len(jobs) == 2 and all(not j["slow_hosts"] for j in jobs), jobs


def test_a_failed_runs_unit_is_not_the_jobs(tmp_path):
    _steps(tmp_path, [("dnnbench:cpu", "cpu")])
    failed = json.loads((tmp_path / "step1" / "result.json").read_text())
    failed.update(run_id="failed", status="error", unit="items/s", windows=[], message="boom",
                  started="2026-01-02T00:00:00")
    (tmp_path / "failed").mkdir()
    (tmp_path / "failed" / "result.json").write_text(json.dumps(failed))
    (job,) = _report(tmp_path)
    assert job["unit"] == "images/s" and job["failed"] == 1


def test_a_wide_ci_says_why(tmp_path):
    jobs = {j["job"]: j for j in _report(FIXTURE)}
    assert jobs["ncf-bs64"]["ci95_pct"] > 100 and "too few runs (2 runs" in jobs["ncf-bs64"]["ci_note"]
    # one threshold (load.WIDE_PCT, +-10 %): 18 % is wide too, and says why
    assert jobs["resnet18-bs4"]["ci95_pct"] > 10 and "too few runs" in jobs["resnet18-bs4"]["ci_note"]
    text = dnnbench("report", str(FIXTURE), env={"COLUMNS": "80"}, check=0).stdout
    assert "wide: too few runs" in text.replace("\n", " ")
