"""The runtimes `--runtime` offers: one module each (its names, whether it runs here, the run's
image and its digest, the job, the line a user can paste), listed once here. The CLI's choices,
the plan, the run, the manifest, reproduce, suites and Slurm all read this table; nothing
outside this package compares runtime names."""
from __future__ import annotations

from dnnbench.containers.engines import apptainer_engine, docker_engine, host_engine
from dnnbench.containers.engines.common import Engine
from dnnbench.registry import Registry

ENGINES: Registry[Engine] = Registry("engine", (docker_engine.ENGINE, apptainer_engine.ENGINE, host_engine.ENGINE),
                                     names=lambda e: e.names)
DEFAULT = "docker"


def register(engine: Engine) -> Engine:
    """Add an engine (a module's ENGINE); refused when its name or an alias is taken already."""
    return ENGINES.register(engine)


def lookup(name: str | None) -> Engine | None:
    """The engine `name` (or one of its aliases) is, or None."""
    return ENGINES.lookup(name)


def named(name: str) -> Engine:
    """The engine `--runtime NAME` means (an alias too), or one line naming the choices."""
    engine = lookup(name)
    if engine is None:
        from dnnbench.errors import DnnbenchError
        raise DnnbenchError(f"--runtime {name!r}: choose {spoken()}")
    return engine


def choices(slurm: bool = False) -> tuple[str, ...]:
    """Every name `--runtime` takes (aliases after their engine); slurm: those a Slurm job can run."""
    return tuple(n for e in ENGINES.values() if e.slurm or not slurm for n in e.names)


def spoken(aliases: bool = True, where=lambda e: True) -> str:
    """The engines in words, for an error line: "docker, singularity (apptainer) or host"."""
    words = [e.name + (f" ({', '.join(e.aliases)})" if aliases and e.aliases else "")
             for e in ENGINES.values() if where(e)]
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else "".join(words)
