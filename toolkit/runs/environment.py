"""The environment a run's processes get: the caller's without torchrun's rendezvous variables
(a shell left inside a job must not make a host run wait for ranks that never come), and the
user's `--env` (suites: `env:`), checked here for every command that takes it (run, suite,
slurm, reproduce): a name the run's own machinery sets is refused in one line, since the
user's value would be overwritten or, worse, believed.

A file's environment (a result's `host.env` that `reproduce` applies again, a suite's `env:`)
is data someone else may have written: it never carries a name that changes how a program
starts (STARTS_CODE: PYTHONPATH to a sitecustomize.py, LD_PRELOAD, BASH_ENV, PATH, ...); such
names are dropped with one warning, and come only from the user's own --env."""
from __future__ import annotations

import re

from dnnbench.console import unprintable
from dnnbench.errors import DnnbenchError
from dnnbench.containers.engines.apptainer import STEP_DEVICES

RENDEZVOUS = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "LOCAL_WORLD_SIZE",
              "ROLE_WORLD_SIZE", "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCH_NCCL_ASYNC_ERROR_HANDLING")
RENDEZVOUS_PREFIXES = ("TORCHELASTIC_", "PET_")
# what selects a run's GPUs (Slurm's step sets them; a container run gets them from --gpus)
GPU_SELECTION = STEP_DEVICES + ("HIP_VISIBLE_DEVICES",)
# (names, or prefixes ending in _; who sets them), for every run
_OWNED = ((("DNNBENCH_",), "dnnbench (--run-id, --results and --image say what it sets)"),
          (("APPTAINERENV_", "SINGULARITYENV_"), "dnnbench, to pass --env through --cleanenv (give the name itself)"),
          (("PYTHONNOUSERSITE",), "dnnbench, so that packages in ~/.local cannot shadow the image's"),
          (GPU_SELECTION, "dnnbench or Slurm (--gpus or --gpus-per-node choose the GPUs)"),
          (("SLURM_",), "Slurm"),
          (RENDEZVOUS_PREFIXES + tuple(n for n in RENDEZVOUS if n != "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
           "torchrun, from --gpus, --nproc or --nodes"))
# the Slurm job script's own variables (templates/slurm.sbatch.j2; a test reads them off the
# scripts it writes): a user's export of one would be changed before the tasks start
JOB_SCRIPT = ("HEAD", "HEAD_ADDR", "PORT", "TASK", "ADDR", "ROLE", "v", "RESUME", "BEFORE", "WARNED", "STEP", "CODE")
# what makes the interpreter, the loader, a shell or a library load code before the run's own:
# names, and prefixes ending in * (PYTHON* covers PYTHONPATH, PYTHONSTARTUP, PYTHONHOME, ...)
STARTS_CODE = ("PYTHON*", "LD_*", "DYLD_*", "PERL5*", "PERLLIB", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS",
               "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4",
               "PROMPT_COMMAND", "IFS", "PATH", "GLIBC_TUNABLES", "GCONV_PATH", "LOCPATH", "HOSTALIASES",
               "CUDA_INJECTION64_PATH", "CUDA_INJECTION32_PATH", "NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN",
               "NCCL_PROFILER_PLUGIN", "OPENSSL_CONF", "OPENSSL_MODULES")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_VALUE = 32 * 1024      # one variable's value: longer is a mistake (and an argv a kernel refuses)


def clean_env(environ) -> tuple[dict, list[str]]:
    """The caller's environment without rendezvous variables, and the names dropped."""
    dropped = [k for k in environ if k in RENDEZVOUS or k.startswith(RENDEZVOUS_PREFIXES)]
    return {k: v for k, v in environ.items() if k not in dropped}, dropped


def owner_of(name: str, slurm: bool = False) -> str | None:
    """Who sets the variable `name` in a run's processes (None: the user may)."""
    owned = _OWNED + (((JOB_SCRIPT, "the job script"),) if slurm else ())
    for names, who in owned:
        if any(name == n or (n.endswith("_") and name.startswith(n)) for n in names):
            return who
    return None


def check(name, value, flag: str = "--env", slurm: bool = False) -> tuple[str, str]:
    """One variable, as (name, value) text, or one line saying what is wrong with it."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise DnnbenchError(f"{flag} {str(name)[:60]!r}: a name is letters, digits and _, not first a digit")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DnnbenchError(f"{flag} {name}: the value must be text or a number, got {type(value).__name__}")
    text = str(value)
    if unprintable(text):   # a newline would end a job script's line; C1 and bidi drive a terminal
        raise DnnbenchError(f"{flag} {name}: the value must be one line of printable text (no control or bidi character)")
    if text[:1] == '"' or text[-1:] == '"':   # Apptainer's --env strips them (no quoting keeps them)
        raise DnnbenchError(f"{flag} {name}: the value may not start or end with a double quote")
    if len(text) > MAX_VALUE:
        raise DnnbenchError(f"{flag} {name}: the value is over {MAX_VALUE} characters")
    who = owner_of(name, slurm)
    if who:
        raise DnnbenchError(f"{flag} {name}: set for each process by {who}")
    return name, text


def starts_code(name: str) -> bool:
    """Whether `name` can make a program load or run other code as it starts (STARTS_CODE)."""
    return any(name.startswith(n[:-1]) if n.endswith("*") else name == n for n in STARTS_CODE)


def from_file(mapping, given=(), flag: str = "env", where: str = "the file", slurm: bool = False) -> dict[str, str]:
    """A file's `env:` mapping, checked as --env is, without the names that start code unless
    the user gave them on the command line (`given`: their --env names, whose values win)."""
    return without_code([from_mapping(mapping, flag, slurm)], given, where)[0]


def without_code(envs: list[dict], given, where: str) -> list[dict]:
    """Each of a file's checked environments without the names that start code (STARTS_CODE)
    that the user did not give on the command line; what is dropped is said in one warning."""
    dropped = sorted({n for env in envs for n in env if starts_code(n) and n not in given})
    if dropped:
        from dnnbench.console import warn
        warn(f"not applying {', '.join(dropped)} from {where}: a file may not set what starts code "
             f"(the interpreter's, the loader's or a shell's variables); give it with --env NAME=VALUE")
    return [{n: v for n, v in env.items() if n not in dropped} for env in envs]


def parse(items, flag: str = "--env", slurm: bool = False) -> dict[str, str]:
    """`KEY=VALUE` items (the CLI's repeated --env), checked; a later KEY replaces an earlier."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = str(item).partition("=")
        if not sep:
            raise DnnbenchError(f"{flag} {str(item)[:60]!r}: expected KEY=VALUE")
        out.update([check(name, value, flag, slurm)])
    return out


def from_mapping(mapping, flag: str = "env", slurm: bool = False) -> dict[str, str]:
    """A suite job's or a result's `env:` mapping, checked as --env is."""
    if not isinstance(mapping, dict):
        raise DnnbenchError(f"{flag} must be a mapping of NAME: value")
    return dict(check(name, value, flag, slurm) for name, value in mapping.items())
