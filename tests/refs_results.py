"""A resnet50 result on chosen GPUs, precision and batch, for the reference tests: history's
recorded fixture with its workload, options, GPUs and windows replaced."""
from __future__ import annotations

import json
from pathlib import Path

from tests import history_results


def write(folder: Path, rate: float, *, gpu: str = "NVIDIA H100 80GB HBM3", count: int = 1, amp: str = "fp16",
          batch: int = 256, workload: str = "resnet50", name: str = "r") -> Path:
    path = history_results.write(folder, 1, rate, job=f"{workload}-bs{batch}", noise=0.0)
    data = json.loads(path.read_text())
    data["workload"] = workload
    data["options"] = {**data["options"], "amp": amp, "batch_size": batch}
    data["system"] = {**data["system"], "gpus": [{"name": gpu} for _ in range(count)]}
    data["world_size"] = count
    data["run_id"] = f"{data['run_id']}-{name}"       # its own identity in the store
    out = folder / name / "result.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data))
    return out
