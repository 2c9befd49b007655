"""RunOptions: what one run needs from the host. Its harness fields come from the harness
option table (dnnbench.workloads.options), so a new harness option needs no edit here."""
from __future__ import annotations

from dataclasses import field, make_dataclass
from pathlib import Path
from typing import Optional

from dnnbench.workloads.options import HOST_OPTIONS

RUNTIMES = ("docker", "singularity", "apptainer", "host")
RUNTIME_ALIASES = {"docker": "docker", "singularity": "singularity", "apptainer": "singularity", "host": "host"}
PROFILERS = ("ncu", "nsys", "torch", "nvprof", "rocprof")

_HOST_FIELDS = [
    ("workload", str),
    ("data", Optional[Path], None),
    ("gpus", Optional[str], None),
    ("nproc", Optional[int], None),
    ("runtime", str, "docker"),
    ("image", Optional[str], None),
    ("base", Optional[str], None),
    ("build", Optional[bool], None),
    ("results", Path, Path("results")),
    ("run_id", Optional[str], None),
    ("timeout", Optional[float], None),
    ("dry_run", bool, False),
    ("quiet", bool, False),
    ("extra", list, field(default_factory=list)),      # after `--`: to the workload as they are
    ("profile", Optional[str], None),                   # one of PROFILERS
    ("cpuset", Optional[str], None),                    # suites: a parallel copy's cores
    ("memory", Optional[str], None),                    # suites: a parallel copy's memory share
    ("run_dir", Optional[Path], None),                  # suites: the folder, when not RESULTS/<run-id>
    ("script", Optional[Path], None),                   # run --script: the user's own training script
    ("entry", Optional[str], None),                     # its entry file, when --script is a folder
    ("items_per_step", Optional[int], None),            # what one of its steps holds, if no batch tells
    ("run_to_end", bool, False),                        # let it finish instead of stopping after the windows
    ("unit", Optional[str], None),                      # what its items are (images, samples, tokens)
]
# Harness options: None (or False for flags) means the workload's own default.
_HARNESS_FIELDS = [(o.name, bool if o.kind is bool else Optional[o.kind], False if o.kind is bool else None)
                   for o in HOST_OPTIONS]

RunOptions = make_dataclass("RunOptions", _HOST_FIELDS + _HARNESS_FIELDS)
RunOptions.__module__ = __name__
RunOptions.__doc__ = "One run's options: host fields, then one field per host harness option."


def harness_values(opts) -> dict:
    return {o.name: getattr(opts, o.name) for o in HOST_OPTIONS}
