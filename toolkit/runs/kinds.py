"""Job kinds: what runs. A job is a workload benchmark (`run`), a training run to accuracy
(`train`) or a user's script (`run --script`); each kind is one object here that says what it
checks, the module and argv it runs in the container (`module_args`, which every placement
wraps in its own launcher), what else it mounts, where it starts, whether a placement may
requeue and resume it, and how its result is recognized. `plan` is the one block of image, run
folder, mounts and environment every placement's RunPlan comes from (`build_plan`: a local
run; runs/slurm.py: an sbatch job's steps); a new kind is one class (a JobKind: what it must
say is abstract, so a kind that lacks one fails when it is made) and one line of KINDS, which
refuses a name taken twice. Nothing outside this module decides by kind
(tests/test_project_architecture.py)."""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from dnnbench import names
from dnnbench.containers.engines import named
from dnnbench.errors import DnnbenchError
from dnnbench.registry import Registry
from dnnbench.runs import checks, gpus as gpus_mod, read_back as read_back_mod
from dnnbench.runs import plan as plan_mod
from dnnbench.runs.manifest import host_manifest
from dnnbench.runs.options import RunOptions
from dnnbench.runs.script import SCRIPT_DIR


@dataclass
class Checked:
    """What a kind's checks found: the name its results go under, the dataset folder, the GPUs,
    and the kind's own findings (a script's folder and entry)."""
    workload: str
    data: Optional[Path]
    gpu_ids: Optional[list]
    own: dict = field(default_factory=dict)


@dataclass
class Where:
    """Where the run's folders are, as its processes see them (in a container or on the host)."""
    contained: bool
    results_in: str
    data_in: Optional[str]
    run_dir: Path


def _gpus(opts: RunOptions) -> Optional[list]:
    gpu_ids = gpus_mod.parse(opts.gpus)
    if gpu_ids and opts.nproc:
        raise DnnbenchError("--nproc is for CPU runs; with --gpus one process runs per GPU")
    return gpu_ids


def where(engine, data: Optional[Path], run_dir: Path) -> Where:
    """The run's folders as its processes see them: mounted in a container, as they are on the host."""
    contained = engine.contained
    return Where(contained, plan_mod.RESULTS_DIR if contained else str(run_dir),
                 (plan_mod.DATA_DIR if contained else str(data)) if data else None, run_dir)


class JobKind(abc.ABC):
    """What every placement asks of a kind of job. `name` is what KINDS and results call it;
    `workdir` where it starts in a container; `requeues`: a placement with a time limit may
    requeue it; `resumes`: an interrupted run continues rather than runs again."""
    name: str
    workdir: str
    requeues: bool
    resumes: bool

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        missing = [a for a in ("name", "workdir", "requeues", "resumes") if not hasattr(cls, a)]
        if missing:
            raise TypeError(f"job kind {cls.__name__} does not say its {', '.join(missing)}")

    @abc.abstractmethod
    def check(self, opts: RunOptions, job: Optional[dict]) -> Checked:
        """Every check of the kind's options, before anything is written."""

    @abc.abstractmethod
    def check_spread(self, flag: str) -> None:
        """Refuse a placement's --scaling or --each-node the kind cannot take."""

    @abc.abstractmethod
    def profile(self, opts: RunOptions, gpu_ids, img) -> Optional[str]:
        """The profiler the run is launched under, or None."""

    @abc.abstractmethod
    def module_args(self, opts: RunOptions, job: Optional[dict], checked: Checked, *, run_id: str, where: Where,
                    device: str, resume_word: Optional[str] = None) -> list[str]:
        """`-m MODULE ...`: what follows the Python (or the launcher a placement puts in front)."""

    @abc.abstractmethod
    def job(self, block: Optional[dict], resume: bool) -> Optional[dict]:
        """The kind's own options (a suite job's block of them) as its plan takes them."""

    @abc.abstractmethod
    def made(self, data: dict) -> bool:
        """Whether a result was made by this kind (reproduce reads it back so)."""

    @property
    @abc.abstractmethod
    def read_back(self):
        """How reproduce reads the kind's result back into a job (a runs.reproduce.ReadBack)."""

    def env(self, where: Where) -> dict:
        return {}

    def mounts(self, opts: RunOptions, job: Optional[dict], checked: Checked) -> list:
        return []

    def manifest(self, checked: Checked) -> dict:
        """What the kind adds to the run's manifest (what reproduce needs to run it again)."""
        return {}


class Benchmark(JobKind):
    """`dnnbench run WORKLOAD`: a workload's timed windows (dnnbench.workloads)."""
    name = "run"
    workdir = plan_mod.WORKDIR
    requeues = False     # a placement with a time limit (Slurm) never requeues it: a rerun would write over
    resumes = False      # an interrupted one is run again, not continued

    def check(self, opts: RunOptions, job: Optional[dict]) -> Checked:
        for option in ("entry", "items_per_step", "unit"):
            if getattr(opts, option) is not None:
                raise DnnbenchError(f"--{option.replace('_', '-')} goes with --script")
        workload, kind = checks.check_workload(opts.workload)
        checks.check_options(opts)
        checks.check_extra(opts.extra)   # a workload's arguments (a script's are its own)
        from dnnbench.runs import workload_args
        workload_args.check(opts.workload, opts.extra)   # `train` checks with its own parser first
        gpu_ids = _gpus(opts)
        return Checked(workload, checks.check_data(opts.data, workload, kind), gpu_ids)

    def check_spread(self, flag: str) -> None:
        """A placement's --scaling (a one-process reference first) or --each-node (a run per
        node): both time benchmark windows, which this kind has."""

    def profile(self, opts: RunOptions, gpu_ids, img) -> Optional[str]:
        return checks.check_profile(opts.profile, gpu_ids, img)

    def module_args(self, opts: RunOptions, job: Optional[dict], checked: Checked, *, run_id: str, where: Where,
                    device: str, resume_word: Optional[str] = None) -> list[str]:
        """`-m MODULE ...`: what follows the Python (or the launcher a placement puts in front)."""
        return ["-m", "dnnbench.workloads", checked.workload] + checks.harness_args(
            opts, data_in=where.data_in, results_in=where.results_in, run_id=run_id, device=device)

    def job(self, block: Optional[dict], resume: bool) -> Optional[dict]:
        return None

    def made(self, data: dict) -> bool:
        return not isinstance(data.get("script"), dict) and not isinstance(data.get("training"), dict)

    @property
    def read_back(self):
        return read_back_mod.BENCHMARK_READ_BACK


class Training(Benchmark):
    """`dnnbench train WORKLOAD`: epochs to a target accuracy (dnnbench.workloads.train); the
    benchmark's checks, then its own options in place of the timed windows'. Checkpointed, so a
    placement with a time limit requeues it and each start resumes from the checkpoint record."""
    name = "train"
    requeues = True
    resumes = True

    def check(self, opts: RunOptions, job: Optional[dict]) -> Checked:
        from dnnbench.runs import training, workload_args
        train = job or {}
        training.check(opts, train)
        workload_args.check(opts.workload, opts.extra, train=True)
        if train.get("resume") and not opts.run_id:
            raise DnnbenchError("--resume continues a run folder: give its --run-id")
        if train.get("resume") and opts.run_id and not opts.dry_run:
            training.check_resumable(opts.results, opts.run_id, opts.run_dir)
        return super().check(opts, job)

    def check_spread(self, flag: str) -> None:
        raise DnnbenchError(f"{flag} times benchmark windows; --train trains epochs")

    def job(self, block: Optional[dict], resume: bool) -> Optional[dict]:
        return dict(block or {}, resume=resume)

    def profile(self, opts: RunOptions, gpu_ids, img) -> Optional[str]:
        super().profile(opts, gpu_ids, img)   # refused as for a benchmark; a training run has no window
        return None

    def module_args(self, opts: RunOptions, job: Optional[dict], checked: Checked, *, run_id: str, where: Where,
                    device: str, resume_word: Optional[str] = None) -> list[str]:
        """resume_word: what a requeueing placement's job script fills with --resume when the run
        folder records a checkpoint (Slurm: ${RESUME})."""
        from dnnbench.runs import training
        train = job or {}
        argv = training.module_args(
            checked.workload, opts, train, data_in=plan_mod.DATA_DIR if where.contained else str(checked.data),
            results_in=where.results_in, run_id=run_id, device=device)
        if train.get("eval_data"):   # the extra evaluation set: read-only beside the dataset in a container
            argv[argv.index("--eval-data") + 1] = training.EVAL_DATA_DIR if where.contained \
                else str(names.real(train["eval_data"]))
        return argv + ([resume_word] if resume_word else []) + list(opts.extra)

    def mounts(self, opts: RunOptions, job: Optional[dict], checked: Checked) -> list:
        from dnnbench.runs import training
        eval_data = (job or {}).get("eval_data")
        if not eval_data:
            return []
        return [plan_mod.Mount(str(names.real(eval_data)), training.EVAL_DATA_DIR, read_only=True)]

    def made(self, data: dict) -> bool:
        return not isinstance(data.get("script"), dict) and isinstance(data.get("training"), dict)

    @property
    def read_back(self):
        return read_back_mod.TRAINING_READ_BACK


class Script(JobKind):
    """`dnnbench run --script PATH`: the user's script under the instrumentation
    (dnnbench.workloads.instrument), in its own folder mounted read-only."""
    name = "script"
    workdir = SCRIPT_DIR   # as `python path/to/it.py` would
    requeues = False
    resumes = False

    def check(self, opts: RunOptions, job: Optional[dict]) -> Checked:
        folder, entry, data, workload = checks.script_parts(opts)
        return Checked(workload, data, _gpus(opts), {"folder": folder, "entry": entry})

    def check_spread(self, flag: str) -> None:
        raise DnnbenchError(f"{flag} is for workloads, not --script")

    def job(self, block: Optional[dict], resume: bool) -> Optional[dict]:
        return None

    def profile(self, opts: RunOptions, gpu_ids, img) -> Optional[str]:
        return None

    def module_args(self, opts: RunOptions, job: Optional[dict], checked: Checked, *, run_id: str, where: Where,
                    device: str, resume_word: Optional[str] = None) -> list[str]:
        from dnnbench.runs import script as script_mod
        folder, entry = checked.own["folder"], checked.own["entry"]
        script_in = f"{script_mod.SCRIPT_DIR}/{entry}" if where.contained else str(folder / entry)
        return script_mod.instrumented(
            results_in=where.results_in, run_id=run_id, script_in=script_in,
            args=script_mod.arguments(list(opts.extra), where.data_in),
            timing={"warmup": opts.warmup, "number": opts.number, "repeat": opts.repeat,
                    "items_per_step": opts.items_per_step, "unit": opts.unit, "run_to_end": opts.run_to_end})

    def env(self, where: Where) -> dict:
        return {"DNNBENCH_DATA": where.data_in} if where.data_in else {}

    def mounts(self, opts: RunOptions, job: Optional[dict], checked: Checked) -> list:
        from dnnbench.runs import script as script_mod
        return [plan_mod.Mount(str(checked.own["folder"]), script_mod.SCRIPT_DIR, read_only=True)]

    def manifest(self, checked: Checked) -> dict:
        return {"script": str(checked.own["folder"] / checked.own["entry"])}   # what reproduce runs again

    def made(self, data: dict) -> bool:
        return isinstance(data.get("script"), dict)

    @property
    def read_back(self):
        return read_back_mod.SCRIPT_READ_BACK


KINDS: Registry[JobKind] = Registry("job kind", (Benchmark(), Training(), Script()))


def of_job(script, train: Optional[dict] = None):
    """The kind of a job: a script with a script, a training run with a train block, else a
    benchmark."""
    if script is not None:
        if train is not None:
            raise DnnbenchError("--train trains a workload, not a --script")
        return KINDS["script"]
    return KINDS["train"] if train is not None else KINDS["run"]


def kind_of(opts: RunOptions, train: Optional[dict] = None):
    """The kind of a run's job (of_job): its --script, and the train block it was given."""
    return of_job(opts.script, train)


def of_result(data: dict):
    """The kind that made a result (reproduce runs it again as that kind)."""
    return next(k for k in KINDS.values() if k.made(data))


def plan(kind, opts: RunOptions, job: Optional[dict], checked: Checked, *, engine, img, run_id: str, where: Where,
         argv: list[str], env: dict, **more) -> plan_mod.RunPlan:
    """The one RunPlan block of every placement: the image, the run folder, the kind's mounts
    (checked by the engine now, before anything is written) and where it starts; `more` is what
    the placement adds (GPUs, limits, manifest)."""
    contained = where.contained
    mounts = checks.run_mounts(checked.data, where.run_dir) + kind.mounts(opts, job, checked) if contained else []
    engine.check_mounts(mounts)
    return plan_mod.RunPlan(
        runtime=engine.name, workload=checked.workload, run_id=run_id, run_dir=str(where.run_dir), image=img.ref,
        argv=argv, env=env, mounts=mounts, accelerator=img.accelerator, base=img.base,
        workdir=kind.workdir if contained else str(Path.cwd()), **more)


def build_plan(kind, opts: RunOptions, job: Optional[dict] = None, resume: bool = False) -> plan_mod.RunPlan:
    """Every check, then the plan of a local run. Raises DnnbenchError before anything has started."""
    runtime = named(opts.runtime).name
    checked = kind.check(opts, job)
    run_id = opts.run_id or names.new_run_id(checked.workload)
    run_dir = checks.run_folder(opts.results, run_id, opts.dry_run, opts.run_dir, resume)
    img = checks.resolve_image(opts, runtime)
    profile = kind.profile(opts, checked.gpu_ids, img)
    gpu_ids, data = checked.gpu_ids, checked.data
    granted = gpus_mod.check(gpu_ids, img.accelerator) if not opts.dry_run else []
    nproc = opts.nproc or (len(granted) if gpu_ids == ["all"] else len(gpu_ids or [])) or 1
    engine = named(runtime)
    facts = checks.base_run_facts(img.base)
    at = where(engine, data, run_dir)
    argv = checks.profiled(checks.launcher(img.python, nproc) + kind.module_args(
        opts, job, checked, run_id=run_id, where=at, device="cuda" if gpu_ids else "cpu"),
        profile, img.python, at.results_in)
    env = checks.run_env(opts, run_id, img.ref, runtime, kind.env(at))
    return plan(kind, opts, job, checked, engine=engine, img=img, run_id=run_id, where=at, argv=argv, env=env,
                user_env=dict(opts.env), gpus=gpu_ids, shm_size=facts.get("shm_size"),
                **engine.settings(facts, counters=profile in ("ncu", "nvprof"), memory=opts.memory), profile=profile,
                timeout=opts.timeout, cpuset=opts.cpuset, entrypoint=list(img.entrypoint) if at.contained else [],
                manifest={} if opts.dry_run else {**host_manifest(runtime, img.ref, img.base, data),
                                                   **kind.manifest(checked)},
                nproc=nproc, resume=resume)
