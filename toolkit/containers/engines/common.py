"""What every engine module shares: the registry entry (Engine), what it reads of a run's plan
(Plan) and the job it hands the supervisor (Job). An engine owns everything about its runtime:
its names, whether it can run here, the run's image and its digest, the job, the line a user
can paste. Nothing outside this package compares runtime names."""
from __future__ import annotations

import abc
import hashlib
import re
from typing import Iterator, Mapping, Protocol, Sequence


class RunImage(Protocol):
    """The facts of the image a run takes (dnnbench.containers.resolve.RunImage is one)."""
    @property
    def ref(self) -> str | None: ...        # docker tag or .sif path; None on the host
    @property
    def base(self) -> str | None: ...
    @property
    def python(self) -> str: ...
    @property
    def accelerator(self) -> str: ...
    @property
    def entrypoint(self) -> list: ...


class Mounted(Protocol):
    @property
    def source(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def read_only(self) -> bool: ...


class Plan(Protocol):
    """What an engine reads of a run's plan (dnnbench.runs.plan.RunPlan is one); ulimits and
    notes it may change (what the engine could not grant)."""
    @property
    def runtime(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def run_dir(self) -> str: ...
    @property
    def image(self) -> str | None: ...
    @property
    def argv(self) -> list[str]: ...
    @property
    def env(self) -> dict: ...
    @property
    def mounts(self) -> Sequence[Mounted]: ...
    @property
    def accelerator(self) -> str: ...
    @property
    def gpus(self) -> list[str] | None: ...
    @property
    def workdir(self) -> str: ...
    @property
    def user(self) -> str | None: ...
    @property
    def ipc(self) -> str | None: ...
    @property
    def shm_size(self) -> str | None: ...
    @property
    def ulimits(self) -> dict: ...
    @property
    def cap_add(self) -> list[str]: ...
    @property
    def cpuset(self) -> str | None: ...
    @property
    def memory(self) -> str | None: ...
    @property
    def entrypoint(self) -> list[str]: ...
    @property
    def notes(self) -> list[str]: ...


class Job(Protocol):
    """A plan started on an engine, as the supervisor drives it (dnnbench.runs.supervise)."""
    output_goes_with_cleanup: bool   # its lines are read from what cleanup removes

    @property
    def identity(self) -> dict | None:
        """What names it for whoever finds it orphaned (owner.json)."""
    def carry(self, name: str, value: str) -> None:
        """Set a variable in what the job starts, where the engine passes the caller's
        environment on (a process); a container is proven the run's by its owner label."""
    def started_as(self) -> dict | None:
        """What owner.json gets once the job has started (a process group), or None when the
        record made at the claim already names it (a container)."""
    def create(self) -> object: ...
    def start(self) -> None: ...
    def lines(self) -> Iterator[str]: ...
    def wait(self, timeout: float) -> int | None: ...
    def interrupt(self) -> None: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...
    def cleanup(self) -> None: ...


# How the one image rule picked a run's image, in words for its header
ONLY_IMAGE = "the only dnnbench image on this machine"
ONLY_SIF = "the only dnnbench_*.sif here"
HOST_WHY = "--runtime host: this Python"


def why_chosen(image: str | None, base: str | None, only: str) -> str:
    """`only`: the engine's words for the one image it takes when none is named."""
    if image:
        return "named by --image"
    if base:
        return f"the image of --base {base}"
    return only


_RUNTIME_WORD = re.compile(r"[a-z0-9][a-z0-9._-]*")


class Engine(abc.ABC):
    """One runtime: a module in this package defines one (`ENGINE = ...`) and ENGINES lists it.
    The defaults are a container engine's that runs a .sif-like file with no settings of its own.
    What every engine must say is abstract (an engine lacking one cannot be made); what a Slurm
    engine must add is checked when its class is defined."""
    name: str = ""                    # what plans and results record (`--runtime NAME`)
    aliases: tuple[str, ...] = ()     # other names `--runtime` takes for it
    contained = True                  # runs in an image: /data, /results mounted, the base's entrypoint first
    slurm = False                     # can run as a Slurm step (no daemon on the nodes)
    inherits_env = False              # the run's processes get the caller's environment
    env_defaults: Mapping[str, str] = {}   # what the run's environment gets unless given
    sees_machine = True               # the run's hostname is the machine's (under docker: the container's id)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not isinstance(cls.name, str) or not cls.name:
            raise TypeError(f"engine {cls.__name__}: `name` must be its --runtime name")
        # a bare string would be taken letter by letter ("pod" -> p, o, d); a name a user cannot
        # type after --runtime (a space, a leading dash, "Docker" beside "docker") is no name
        if not isinstance(cls.aliases, tuple):
            raise TypeError(f"engine {cls.name!r}: `aliases` must be a tuple of names, not {cls.aliases!r}")
        for word in (cls.name, *cls.aliases):
            if not isinstance(word, str) or not _RUNTIME_WORD.fullmatch(word):
                raise TypeError(f"engine {cls.__name__}: {word!r} is no --runtime name (lowercase letters, "
                                "digits, '.', '_' and '-', starting with a letter or digit)")
        if cls.slurm:
            missing = [m for m in ("slurm_image", "slurm_step") if getattr(cls, m) is getattr(Engine, m)]
            if missing:
                raise TypeError(f"engine {cls.name!r} says slurm = True but defines no {' or '.join(missing)}")

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @abc.abstractmethod
    def available(self) -> str | None:
        """The engine's version, or None when it cannot run here."""

    def preflight(self) -> None:
        """Raise EngineUnavailable (one line, the hint to act on) when it cannot run here now."""

    def check_ref(self, image: str) -> None:
        """Refuse an --image this engine could never take, before anything else is looked up."""

    @abc.abstractmethod
    def resolve(self, image: str | None, base: str | None, build: bool | None) -> RunImage:
        """The run's image and its facts (its labels), built first when missing and allowed."""

    @abc.abstractmethod
    def planned(self, image: str | None, base: str | None) -> RunImage:
        """For --dry-run: the image a run would take, without building or running anything."""

    def why(self, image: str | None, base: str | None) -> str:
        """How the one image rule picked the run's image, in words for its header."""
        return why_chosen(image, base, ONLY_SIF)

    def slurm_image(self, image: str | None, base: str | None, dry_run: bool) -> RunImage:
        """The image a Slurm job's nodes run (a file on the shared filesystem); an engine with
        `slurm = True` defines it (checked when its class is defined)."""
        raise NotImplementedError(f"{self.name} runs no Slurm step")

    def has_image(self, ref: str) -> bool | None:
        """Whether the image is here now (None: this engine cannot tell, or needs none)."""
        return None

    def digest(self, ref: str) -> dict | None:
        """What names the image exactly (a tag moves, a digest does not), for the manifest."""
        return None

    def rerun_image(self, ran: str | None, recorded: dict) -> str | None:
        """The image to reproduce a result with: `ran` (the result's image), by its recorded
        digest where there is one; one line when the image is no longer the result's."""
        return ran

    def settings(self, facts: dict, *, counters: bool, memory: str | None) -> dict:
        """The plan fields only this engine applies: the user, ipc, ulimits, capabilities (GPU
        performance counters need some) and the memory limit."""
        return {"user": None, "ipc": None, "ulimits": {}, "cap_add": [], "memory": None}

    def check_mounts(self, mounts: Sequence[Mounted]) -> None:
        """Refuse now a mount the engine cannot make, before anything is written."""

    @abc.abstractmethod
    def job(self, plan: Plan, environ: dict | None = None) -> tuple[Job, str]:
        """The job that runs the plan, and the line that does the same by hand. environ: the
        caller's environment, for an engine that inherits_env."""

    @abc.abstractmethod
    def command_line(self, plan: Plan, exe: str | None = None) -> str:
        """The shell line a user could paste to do the same by hand."""

    def slurm_step(self, plan: Plan) -> list[str]:
        """The plan's argv as what srun starts on each node (an engine with `slurm = True`)."""
        raise NotImplementedError(f"{self.name} runs no Slurm step")


def chain(plan: Plan) -> list[str]:
    """What runs in the container: the base's own entrypoint (it execs the rest), then argv.
    `docker run --entrypoint` and `apptainer exec` would skip it; so it is named here."""
    return list(plan.entrypoint) + list(plan.argv)


def pinned(plan: Plan, argv: list[str]) -> list[str]:
    """Outside docker, a cpuset is applied with taskset (util-linux)."""
    return ["taskset", "-c", plan.cpuset] + argv if plan.cpuset else argv


def container_name(plan: Plan) -> str:
    """Container names are global to a Docker daemon, which users and checkouts share; run ids
    are not (every suite has an `r1`): the run folder's path makes the name its own."""
    return f"dnnbench-{plan.run_id}-{hashlib.sha256(plan.run_dir.encode()).hexdigest()[:8]}"
