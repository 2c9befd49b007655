"""What decides a resume is the run folder's checkpoint record (workloads/checkpoint.py), the
one `train --resume` reads: the Slurm job script asks `checkpoint.newest`, and `suite run
--resume` takes up a cut-off `train:` job from it, parallel copies included; no file name
decides what is trusted."""
from __future__ import annotations

import json

import pytest

from dnnbench.campaigns import suite
from dnnbench.workloads import checkpoint


def _record(folder, names):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / checkpoint.RECORD).write_text(json.dumps({
        "format": checkpoint.FORMAT, "workload": "resnet18", "options": {}, "identity": {}, "checkpoints": names}))


def test_newest_is_the_records_last_checkpoint(tmp_path):
    assert checkpoint.newest(str(tmp_path)) == ""                        # no record
    (tmp_path / "checkpoint-0001-0000010.pt").write_bytes(b"x")          # a file the record does not list
    assert checkpoint.newest(str(tmp_path)) == ""
    _record(tmp_path, [])
    assert checkpoint.newest(str(tmp_path)) == ""
    _record(tmp_path, ["checkpoint-0001-0000010.pt", "checkpoint-0002-0000020.pt"])
    assert checkpoint.newest(str(tmp_path)) == "checkpoint-0002-0000020.pt"
    (tmp_path / checkpoint.RECORD).write_text("{not json")
    assert checkpoint.newest(str(tmp_path)) == checkpoint.RECORD         # damaged: --resume refuses it in one line


def _run(kind: dict, parallel=None):
    spec = {"workload": "resnet18", "options": {}, **kind}
    if parallel:
        spec["parallel"] = parallel
    return suite.Run(job="j", run_id="j/r1", workload="resnet18", batch_size=None, amp="none", repeat_index=1,
                     spec=spec)


@pytest.mark.parametrize("parallel", [None, 2])
def test_a_cut_off_train_job_is_resumed_from_its_record(tmp_path, parallel):
    run_dir = tmp_path / "j" / "r1"
    folders = [run_dir / "cpu0", run_dir / "cpu1"] if parallel else [run_dir]
    for folder in folders:
        _record(folder, ["checkpoint-0001-0000010.pt"])
    train = _run({"train": {"epochs": 3}}, parallel)
    assert suite._resumable(train, run_dir)
    assert not suite._resumable(_run({}, parallel), run_dir)          # a benchmark is run again
    (folders[-1] / checkpoint.RECORD).write_text("{not json")         # one record damaged: run again
    assert not suite._resumable(train, run_dir)
    _record(folders[-1], [])                                           # one copy without a checkpoint
    assert not suite._resumable(train, run_dir)
    _record(folders[-1], ["checkpoint-0001-0000010.pt"])
    assert suite._resumable(train, run_dir)
