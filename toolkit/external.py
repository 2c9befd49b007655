"""Every external command dnnbench waits on has a time limit, and ends in one `error:` line
naming what did not answer: apptainer inspect, nvidia-smi, sbatch/squeue/scancel, git. A wedged
tool (a FIFO handed to `apptainer inspect`, a hung driver, a stuck slurmctld) never hangs a
command. The Docker API has its own limits (containers/engines/docker.py)."""
from __future__ import annotations

import subprocess

from dnnbench.errors import DnnbenchError


def call(argv: list[str], *, what: str, timeout: float = 60, check: bool = False,
         **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run with text output captured and a time limit; DnnbenchError (exit 1) when
    the command is missing, cannot start, or does not answer in time."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                             **kwargs)
    except subprocess.TimeoutExpired:
        raise DnnbenchError(f"{what} did not answer in {timeout:.0f} s", exit_code=1) from None
    except FileNotFoundError:
        raise DnnbenchError(f"{what}: {argv[0]} is not installed (not on PATH)", exit_code=1) from None
    except OSError as exc:
        raise DnnbenchError(f"{what}: cannot start {argv[0]}: {exc.strerror or exc}", exit_code=1) from None
    if check and res.returncode != 0:
        last = (res.stderr or res.stdout).strip().splitlines()[-1:] or [f"exit {res.returncode}"]
        raise DnnbenchError(f"{what} failed: {last[0]}", exit_code=1)
    return res
