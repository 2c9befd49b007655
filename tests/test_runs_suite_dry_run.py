"""`suite run --dry-run` (dnnbench.runs.suite_dry_run): a header, the image of each run, how
long the runs took before, and a warning when the suite asks for GPUs this machine does not
show (this machine has none: what a user trying a GPU suite on a laptop sees)."""
from __future__ import annotations

import json
import shutil

from tests.helpers import ROOT, dnnbench

FIXTURE = ROOT / "tests" / "fixtures" / "results" / "cpu-suite"


def test_the_dry_run_has_a_header_images_an_estimate_and_warns_of_missing_gpus(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\ndefaults: {runtime: host, options: {number: 2, repeat: 2, warmup: 1, workers: 0}}\n"
                     "jobs:\n  - {workload: resnet18, batch_size: 4}\n"
                     "  - {workload: resnet18, name: on-gpus, batch_size: 8, gpus: all}\n")
    # an earlier result of the first run in the suite folder: its time is the estimate
    done = tmp_path / "out" / "s" / "resnet18-bs4" / "r1"
    done.mkdir(parents=True)
    data = json.loads((FIXTURE / "resnet18-bs4" / "r1" / "result.json").read_text())
    data.update(started="2026-11-22T10:00:00+00:00", ended="2026-11-22T10:03:00+00:00")
    (done / "result.json").write_text(json.dumps(data))
    res = dnnbench("suite", "run", suite, "--results", tmp_path / "out", "--dry-run",
                   env={"DNNBENCH_DB": str(tmp_path / "none.db")}, check=0)
    lines = res.stdout.splitlines()
    assert lines[0].startswith("suite s (") and "2 run(s) of 2 job(s)" in lines[0] and "nothing runs" in lines[0]
    assert lines[1].split("\t") == ["run", "workload", "image", "batch", "amp", "gpus", "parallel"]
    rows = [line.split("\t") for line in lines[2:]]
    assert [r[0] for r in rows] == ["resnet18-bs4/r1", "on-gpus-bs8/r1"] and all(r[2].startswith("none (host") for r in rows)
    err = " ".join(res.stderr.split())
    assert "time: about 3 min for 1 of 2 run(s)" in err and "1 never ran here" in err, err
    if shutil.which("nvidia-smi") is None:
        assert "warning: 1 run(s) ask for GPUs (all) and this machine shows none" in err, err
    assert not (tmp_path / "out" / "s" / "on-gpus-bs8").exists()
