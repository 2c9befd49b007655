"""A campaign's CPU steps on one thread: the setting where contention can be taken out.

bisect, compare-images and watch compare images with each other, every image under the same
settings, so the thread count is theirs to choose. On one thread a run's wait for a CPU is the
time it lost (workloads/contention.py): beside other busy processes the corrected figure holds
and a preempted thread stalls nobody else. On PyTorch's default (one OpenMP thread per core) a
preempted thread stalls the others at every parallel region, the waits tell nothing (wall time
only) and runs beside two CPU hogs spread from a few to 77 %: the rounds then rarely decide.

Kept as the caller has them: a GPU job (`--gpus`: its CPU thread feeds the device; torchrun,
too, starts one thread a process), and a thread count the caller chose (OMP_NUM_THREADS or
MKL_NUM_THREADS in the environment or in --env). The setting is part of each step's identity,
so a step measured on other threads is measured again, not read back.
"""
from __future__ import annotations

import dataclasses
import os

from dnnbench.runs import gpus
from dnnbench.runs.options import RunOptions

ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def one_thread(opts: RunOptions) -> RunOptions:
    """`opts` with its CPU steps on one thread, unless it runs on GPUs or the caller chose."""
    if gpus.parse(opts.gpus) is not None or any(k in os.environ or k in (opts.env or {}) for k in ONE_THREAD):
        return opts
    return dataclasses.replace(opts, env={**ONE_THREAD, **(opts.env or {})})


def said(opts: RunOptions) -> str | None:
    """The line a campaign says before its first run when it chose the threads; None otherwise."""
    if gpus.parse(opts.gpus) is not None or any((opts.env or {}).get(k) != v for k, v in ONE_THREAD.items()):
        return None
    return ("each image's CPU steps run on one thread (OMP_NUM_THREADS=1; set it to choose):\n"
            "on a busy machine, a run's wait for a CPU is then taken out of its time")
