"""The batch schedulers a job script is submitted to: one module each behind one interface
(base.Scheduler: submit, submit and wait, poll the job's state, signal, cancel, its exit code),
listed once here. A placement (runs/slurm.py: the job script, rendezvous and requeue) asks its
scheduler and never runs a scheduler's command itself; a second scheduler is one module and
its line below."""
from __future__ import annotations

from dnnbench.registry import Registry
from dnnbench.runs.schedulers import slurm
from dnnbench.runs.schedulers.base import Scheduler, Watch

SCHEDULERS: Registry[Scheduler] = Registry("scheduler", (slurm.SCHEDULER,))

__all__ = ["SCHEDULERS", "Scheduler", "Watch"]
