"""How a result is read back into a job to run again (`dnnbench reproduce`), one ReadBack per
job kind (runs/kinds.py: each kind's `read_back`): what in its options may be wrong, where its
dataset is here, the run's own options, and its kind's block of options for the plan. A result
is a file anyone may have written: nothing of it reaches a child process unchecked."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from dnnbench.containers.engines import lookup
from dnnbench.errors import DnnbenchError
from dnnbench.workloads.options import BY_NAME, HOST_OPTIONS
from dnnbench.workloads.options import argv as harness_argv


def text_or_none(value) -> bool:
    return value is None or isinstance(value, str)

# result options that are not flags to pass again (set by the host, or derived by the harness)
NOT_PASSED = {"data", "synthetic", "timed_iterations", "weight_decay"}   # weight_decay: the workload's own


# a training result's options that the host sets, not the user (or facts the run derived)
TRAIN_SET_BY_HOST = {"data", "results", "run_id", "device", "resume", "help"}


# a script result's options: the instrumentation's, each with what it must be
SCRIPT_OPTIONS = {"warmup": "a whole number", "number": "a whole number", "repeat": "a whole number",
                  "items_per_step": "a whole number or null", "run_to_end": "true or false"}


def _script_option_ok(name: str, value: Any) -> bool:
    if name == "run_to_end":
        return isinstance(value, bool)
    whole = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**31
    return whole or (value is None and name == "items_per_step")


def _script_problems(data: dict, opts: dict) -> list[str]:
    """A script result: its timing options, the script's path, SHA-256 and arguments."""
    out = [f"options.{k} {opts[k]!r:.40}: must be {what}" for k, what in SCRIPT_OPTIONS.items()
           if k in opts and not _script_option_ok(k, opts[k])]
    unknown = sorted(k for k in opts if k not in SCRIPT_OPTIONS)
    if unknown:
        out.append(f"options {', '.join(map(repr, unknown))}: not an option of a script run")
    script = data["script"]
    if not isinstance(script.get("path"), str) or not script["path"]:
        out.append("script.path must be the script's path as text")
    args = script.get("argv")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        out.append("script.argv must be a list of text")
    digest = _recorded_sha256(data)
    if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
        out.append("the result records no SHA-256 of its script (manifest.script.sha256)")
    mhost = (data.get("manifest") or {}).get("host") or {}
    if not text_or_none(mhost.get("script")):
        out.append(f"manifest.host.script must be text, not {mhost.get('script')!r:.40}")
    return out


def _recorded_sha256(data: dict) -> Any:
    manifest = data.get("manifest")
    script = manifest.get("script") if isinstance(manifest, dict) else None
    return (script.get("sha256") if isinstance(script, dict) else None) or data["script"].get("sha256")


def _training_problems(workload: str, opts: dict) -> list[str]:
    """A training result's options as `train`'s own parser reads them (the workload's included)."""
    from dnnbench.workloads import load
    from dnnbench.workloads.train import parser_for
    parser = parser_for(load(workload))
    parser.allow_abbrev = False

    def refuse(message):
        raise DnnbenchError(message)
    parser.error = refuse
    try:
        parser.parse_args(["--data", "."] + train_argv(workload, opts))
    except DnnbenchError as exc:
        return [f"options: {exc}"]
    return []


def _train_dests(workload: str) -> set:
    from dnnbench.workloads import load
    from dnnbench.workloads.train import parser_for
    return {a.dest for a in parser_for(load(workload))._actions} - TRAIN_SET_BY_HOST


def train_argv(workload: str, opts: dict) -> list[str]:
    """The options `train` took (its own, the shared harness ones, the workload's), as flags; what
    the run derived and recorded beside them (the task's facts) is not passed."""
    known = _train_dests(workload)
    return workload_args({k: v for k, v in opts.items() if k in known}, passed_harness=True)


def train_options(workload: str, opts: dict) -> tuple[dict, list[str]]:
    """(the training options `train_plan` takes, the workload's own flags after them)."""
    from dnnbench.workloads.train import SHARED, TRAIN_OPTIONS
    own = {o.name for o in TRAIN_OPTIONS}
    known = _train_dests(workload) - own - set(SHARED)
    return ({name: opts.get(name) for name in own if name != "resume"},
            workload_args({k: v for k, v in opts.items() if k in known}))


def _workload_problems(workload: str, opts: dict) -> list[str]:
    """The options as the workload's own argparse parser reads them (the container's, built
    here from the same code): an unknown name or a bad value, as words rather than its exit."""
    from dnnbench.workloads import load
    from dnnbench.workloads.harness import parser_for
    parser = parser_for(load(workload))
    parser.allow_abbrev = False         # `batch` is not --batch-size: a name is known exactly or not
    known = {a.dest for a in parser._actions} | set(BY_NAME) | NOT_PASSED
    unknown = sorted(k for k in opts if k not in known)
    if unknown:
        return [f"options {', '.join(map(repr, unknown))}: not an option of {workload} or the harness"]

    def refuse(message):
        raise DnnbenchError(message)
    parser.error = refuse
    harness = {o.name: opts.get(o.name) for o in HOST_OPTIONS}
    try:
        parser.parse_args(harness_argv(harness) + workload_args(opts))
    except DnnbenchError as exc:
        return [f"options: {exc}"]
    return []


def workload_args(options: dict, passed_harness: bool = False) -> list[str]:
    """The workload's own options (after `--`), from what the result recorded (with the harness's
    too when `passed_harness`)."""
    out = []
    for key, value in sorted(options.items()):
        if (key in BY_NAME and not passed_harness) or key in NOT_PASSED or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        out += [flag] if value is True else [flag, str(value)]
    return out


def _script_file(data: dict, allow_changed: bool) -> Path:
    """The script to run again: where the host found it (the result's own path on the host
    runtime), refused when its SHA-256 is no longer the recorded one unless `allow_changed`."""
    import hashlib

    from dnnbench.workloads import fileio
    path = ((data.get("manifest") or {}).get("host") or {}).get("script") or data["script"]["path"]
    if not fileio.is_regular(path):
        raise DnnbenchError(f"the result's script {path} is not here: {fileio.kind_at(path)}")
    now = hashlib.sha256(fileio.read_bytes(path, max_bytes=64 * 2**20)).hexdigest()
    if now != _recorded_sha256(data) and not allow_changed:
        raise DnnbenchError(f"{path} changed since the result was made (its SHA-256 differs): pass "
                            f"--allow-changed-script to run it anyway")
    return Path(path)


def _script_args(data: dict, manifest_host: dict) -> list[str]:
    """The script's arguments as it got them, the dataset's path in them put back as `{data}`
    (the new run puts its own there)."""
    from dnnbench.runs import plan as plan_mod, script as script_mod
    args = list(data["script"].get("argv") or [])
    if not manifest_host.get("data"):
        return args
    ran_on = lookup((data.get("host") or {}).get("runtime"))
    was = manifest_host["data"] if ran_on is not None and not ran_on.contained else plan_mod.DATA_DIR
    return [script_mod.DATA_TOKEN if a == was else a for a in args]


def _workload_problems_of(check):
    """A workload's or training's options, checked by its parser when the workload is known and
    nothing else was found wrong first."""
    from dnnbench.workloads import WORKLOADS

    def problems(data: dict, opts: dict, found: list) -> list[str]:
        return [] if found or data.get("workload") not in WORKLOADS else check(data["workload"], opts)
    return problems


def _dataset(data: dict, opts: dict, here, ran_on) -> str | None:
    """Where a workload's or training's dataset is here (None: synthetic)."""
    if data.get("synthetic", opts.get("data") is None):
        return None
    dataset = here or (opts.get("data") if ran_on and not ran_on.contained else None)
    if dataset is None:
        raise DnnbenchError("the result does not say where its dataset was on this host: pass --data")
    return dataset


def _script_own(data: dict, opts: dict, manifest_host: dict, allow_changed: bool) -> tuple[list[str], dict]:
    return _script_args(data, manifest_host), dict(
        workload=None, script=_script_file(data, allow_changed), items_per_step=opts.get("items_per_step"),
        run_to_end=bool(opts.get("run_to_end")), unit=str(data.get("unit") or "items/s").rsplit("/s", 1)[0] or None)


@dataclass(frozen=True)
class ReadBack:
    """How a result of one job kind is read back to run again: what in its options may be wrong,
    where its dataset is here, its run's own options (the arguments after `--`, and the fields
    beside the harness ones), and its kind's block of options for the plan."""
    problems: Callable[[dict, dict, list], list[str]]
    dataset: Callable[[dict, dict, Any, Any], Any]
    own: Callable[[dict, dict, dict, bool], tuple[list[str], dict]]
    job: Callable[[dict], dict | None] = lambda data: None


# each job kind's (runs/kinds.py: its `read_back`)
BENCHMARK_READ_BACK = ReadBack(_workload_problems_of(lambda workload, opts: _workload_problems(workload, opts)),
                               _dataset, lambda data, opts, mhost, allow: (workload_args(opts), {}))


TRAINING_READ_BACK = ReadBack(_workload_problems_of(lambda workload, opts: _training_problems(workload, opts)),
                              _dataset, lambda data, opts, mhost, allow: (train_options(data["workload"], opts)[1], {}),
                              lambda data: train_options(data["workload"], data["options"])[0])


# a script reads the dataset it was given, if any
SCRIPT_READ_BACK = ReadBack(lambda data, opts, found: _script_problems(data, opts),
                            lambda data, opts, here, ran_on: here, _script_own)
