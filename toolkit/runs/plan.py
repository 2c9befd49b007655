"""The RunPlan: everything a run needs, as plain data, and the command lines it amounts to.

One plan drives every runtime. `--dry-run` prints it with the equivalent `docker run` or
`apptainer exec` line, so a user can see (and reuse by hand) exactly what dnnbench will do.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path

DATA_DIR = "/data"          # the dataset, read-only, at a path workloads can rely on
RESULTS_DIR = "/results"    # the run's folder, read-write
WORKDIR = "/workspace"
RUNTIMES = ("docker", "singularity", "host")


@dataclass
class Mount:
    source: str
    target: str
    read_only: bool = False


@dataclass
class RunPlan:
    runtime: str                      # docker | singularity | host
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


def chain(plan: RunPlan) -> list[str]:
    """What runs in the container: the base's own entrypoint (it execs the rest), then argv.
    `docker run --entrypoint` and `apptainer exec` would skip it; so it is named here."""
    return list(plan.entrypoint) + list(plan.argv)


def _ulimit_flag(name: str, value) -> str:
    return f"--ulimit={name}={value}:{value}"


def container_name(plan: RunPlan) -> str:
    """Container names are global to a Docker daemon, which users and checkouts share; run ids
    are not (every suite has an `r1`): the run folder's path makes the name its own."""
    import hashlib
    return f"dnnbench-{plan.run_id}-{hashlib.sha256(plan.run_dir.encode()).hexdigest()[:8]}"


def docker_command(plan: RunPlan) -> list[str]:
    """The `docker run` line equivalent to what the SDK does for this plan."""
    cmd = ["docker", "run", "--rm", "--init", "--name", container_name(plan)]
    if plan.user:
        cmd += ["--user", plan.user]
    if plan.ipc:
        cmd += [f"--ipc={plan.ipc}"]
    if plan.shm_size:
        cmd += [f"--shm-size={plan.shm_size}"]
    cmd += [_ulimit_flag(k, v) for k, v in plan.ulimits.items()]
    cmd += [f"--cap-add={c}" for c in plan.cap_add]
    if plan.cpuset:
        cmd += [f"--cpuset-cpus={plan.cpuset}"]
    if plan.memory:
        cmd += [f"--memory={plan.memory}"]
    if plan.gpus and plan.accelerator == "nvidia":
        cmd += ["--gpus", "all" if plan.gpus == ["all"] else f'"device={",".join(plan.gpus)}"']
    if plan.accelerator == "amd" and plan.gpus:
        cmd += ["--device=/dev/kfd", "--device=/dev/dri", "--group-add=video",
                "--security-opt=seccomp=unconfined"]
    for m in plan.mounts:
        cmd += ["-v", f"{m.source}:{m.target}" + (":ro" if m.read_only else "")]
    for k, v in plan.env.items():
        cmd += ["-e", f"{k}={v}"]
    argv = chain(plan)
    cmd += ["-w", plan.workdir, "--entrypoint", argv[0], plan.image or "IMAGE"] + argv[1:]
    return cmd


def apptainer_env(plan: RunPlan) -> dict:
    """Variables passed into `apptainer exec --cleanenv` (APPTAINERENV_ reaches the container)."""
    # The home folder is mounted: packages in ~/.local must not shadow the image's.
    env = {"PYTHONNOUSERSITE": "1", **plan.env}
    if plan.gpus and plan.gpus != ["all"]:
        key = "HIP_VISIBLE_DEVICES" if plan.accelerator == "amd" else "CUDA_VISIBLE_DEVICES"
        env[key] = ",".join(plan.gpus)
    return env


def apptainer_bind(m: Mount) -> str:
    """A mount as `--bind src:dst[:ro]`. The spec has no quoting: a ',' would start another
    bind and a ':' shift the fields, so such paths are refused rather than mis-mounted."""
    for path in (m.source, m.target):
        if "," in path or ":" in path:
            from dnnbench.errors import DnnbenchError
            raise DnnbenchError(f"Apptainer cannot bind {path!r}: its --bind spec has no way to quote ',' or ':'; "
                                "use a path without them (a symlink to it works)")
    return f"{m.source}:{m.target}" + (":ro" if m.read_only else "")


def apptainer_command(plan: RunPlan, exe: str = "apptainer") -> list[str]:
    cmd = [exe, "exec", "--cleanenv", "--pwd", plan.workdir]
    if plan.gpus:
        cmd += ["--rocm"] if plan.accelerator == "amd" else ["--nv"]
    for m in plan.mounts:
        cmd += ["--bind", apptainer_bind(m)]
    for k, v in apptainer_env(plan).items():
        cmd += ["--env", env_arg(k, v)]
    return pinned(plan, cmd + [plan.image or "IMAGE.sif"] + chain(plan))


def env_arg(name: str, value) -> str:
    """One `--env` argument that Apptainer reads back as NAME=value. Its flag (a map of strings)
    keeps an argument with one '=' whole (commas too), but reads one with more as a CSV line,
    split at commas: NCCL_IB_HCA==mlx5_0,mlx5_1 would lose its second HCA. That one goes as a
    single quoted CSV field."""
    item = f"{name}={value}"
    return '"' + item.replace('"', '""') + '"' if item.count("=") > 1 else item


# --cleanenv drops the step's CUDA_VISIBLE_DEVICES (and ROCm's), so a Slurm step would see every
# GPU of the node: these pass the ones Slurm gave this step, read where the step runs.
STEP_DEVICES = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")
_STEP_SCRIPT = "".join(f'[ -z "${{{v}+x}}" ] || export APPTAINERENV_{v}="${v}"; ' for v in STEP_DEVICES) + 'exec "$@"'


def slurm_step(argv: list[str]) -> list[str]:
    """An `apptainer exec --cleanenv` line as a Slurm step that keeps the GPUs Slurm assigned it."""
    return ["sh", "-c", _STEP_SCRIPT, "dnnbench-step"] + list(argv)


def pinned(plan: RunPlan, argv: list[str]) -> list[str]:
    """Outside docker, a cpuset is applied with taskset (util-linux)."""
    return ["taskset", "-c", plan.cpuset] + argv if plan.cpuset else argv


def host_env(plan: RunPlan) -> dict:
    env = dict(plan.env)
    if plan.gpus and plan.gpus != ["all"]:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(plan.gpus)
    return env


def command_line(plan: RunPlan, exe: str | None = None) -> str:
    """The shell line a user could type to do the same by hand."""
    if plan.runtime == "docker":
        return shlex.join(docker_command(plan))
    if plan.runtime == "singularity":
        return shlex.join(apptainer_command(plan, exe or "apptainer"))
    env = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in host_env(plan).items())
    return (env + " " if env else "") + shlex.join(pinned(plan, plan.argv))


def describe(plan: RunPlan) -> str:
    """The plan as JSON, with the whole chain that runs in the container spelled out."""
    data = plan.to_dict()
    if plan.runtime != "host":
        data["runs"] = chain(plan)
    return json.dumps(data, indent=2)
