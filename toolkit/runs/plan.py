"""The RunPlan: everything a run needs, as plain data, and the command lines it amounts to.

One plan drives every runtime. `--dry-run` prints it with the equivalent `docker run` or
`apptainer exec` line, so a user can see (and reuse by hand) exactly what dnnbench will do.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dnnbench.containers.engines import Engine, common, named

DATA_DIR = "/data"          # the dataset, read-only, at a path workloads can rely on
RESULTS_DIR = "/results"    # the run's folder, read-write
WORKDIR = "/workspace"


@dataclass
class Mount:
    source: str
    target: str
    read_only: bool = False


@dataclass
class RunPlan:
    runtime: str                      # an engine's name (dnnbench.containers.engines.ENGINES)
    workload: str
    run_id: str
    run_dir: str                      # on the host: results/<run-id>
    image: str | None                 # docker tag, .sif path, or None on the host runtime
    argv: list[str]                   # the command inside the container (or on the host)
    env: dict = field(default_factory=dict)
    user_env: dict = field(default_factory=dict)  # of env, what --env gave: the result keeps it for reproduce
    mounts: list[Mount] = field(default_factory=list)
    accelerator: str = "none"         # nvidia | amd | none
    gpus: list[str] | None = None     # device ids; ["all"] for every GPU; None for CPU only
    workdir: str = WORKDIR
    user: str | None = None           # "uid:gid" the container runs as
    ipc: str | None = None            # docker ipc mode (NGC: host)
    shm_size: str | None = None
    ulimits: dict = field(default_factory=dict)   # name -> value, soft and hard alike
    cap_add: list[str] = field(default_factory=list)
    timeout: float | None = None
    base: str | None = None
    job: str | None = None            # suite job name reports group by
    cpuset: str | None = None         # cores this run is pinned to ("0-3"), for parallel copies
    memory: str | None = None         # docker memory limit ("8g"), the copy's share of the host
    profile: str | None = None        # the profiler wrapping the run, whose output is summarized after
    entrypoint: list[str] = field(default_factory=list)   # the base's own (NGC's checks), run before argv
    manifest: dict = field(default_factory=dict)  # the host's reproducibility facts (image digest, commit)
    notes: list[str] = field(default_factory=list)  # what the engine would not grant, said in the result
    nproc: int = 1                    # processes (torchrun) on this node
    resume: bool = False              # `train --resume`: the folder holds an interrupted run to continue
    copy_of: str | None = None        # a suite's parallel copy: the history records the combined result instead

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "RunPlan":
        data = dict(data)
        data["mounts"] = [Mount(**m) for m in data.get("mounts", [])]
        return cls(**data)

    def save(self, path: Path) -> None:
        from dnnbench.workloads.schema import write_atomic
        write_atomic(str(path), self.to_dict())


def engine_of(plan: RunPlan) -> Engine:
    """The engine a plan runs on (one line when its runtime names none)."""
    return named(plan.runtime)


def command_line(plan: RunPlan, exe: str | None = None) -> str:
    """The shell line a user could type to do the same by hand."""
    return engine_of(plan).command_line(plan, exe)


def describe(plan: RunPlan) -> str:
    """The plan as JSON, with the whole chain that runs in the container spelled out."""
    data = plan.to_dict()
    if engine_of(plan).contained:
        data["runs"] = common.chain(plan)
    return json.dumps(data, indent=2)
