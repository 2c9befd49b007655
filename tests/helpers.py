"""What tests share: the real command line as a subprocess, and the shape of a one-line error."""
from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the CA of this machine's TLS-inspecting proxy: image builds give it to pip (--ca-cert)
CA = Path(os.environ.get("DNNBENCH_TEST_CA", "/etc/ssl/certs/ca-certificates.crt"))


def dnnbench(*args, cwd=None, env=None, timeout=600, check=None):
    """Run the real `dnnbench` command line (a subprocess, as a user would)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    res = subprocess.run([sys.executable, "-m", "dnnbench", *map(str, args)], cwd=cwd, env=full_env,
                         capture_output=True, text=True, timeout=timeout)
    if check is not None:
        assert res.returncode == check, f"exit {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    return res


@contextmanager
def one_builder(name):
    """One test stream at a time (scripts/test.sh) makes a shared artifact (the base, an image,
    the .sif); the others wait, then find it in the cache that every such fixture keeps."""
    with open(f"/var/tmp/dnnbench-test-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# the line a training prints before each step of an epoch when DNNBENCH_PROGRESS_S is tiny
# (workloads/progress.py): `[resnet18 train] epoch 2/2: 3/45 steps (6%) ...`
EVERY_STEP = {"DNNBENCH_PROGRESS_S": "0.000001"}
_STEP_LINE = re.compile(r"\bepoch (\d+)/\d+: (\d+)/\d+ steps")


def at_step(epoch: int, step: int):
    """A line test for `until_line`: the training has done `step` steps of epoch `epoch` (1-based,
    as the lines count), or more of it."""
    def reached(line: str) -> bool:
        m = _STEP_LINE.search(line)
        return m is not None and int(m.group(1)) == epoch and int(m.group(2)) >= step
    return reached


def until_line(proc: subprocess.Popen, match) -> str:
    """Read the process's stderr (its stdout when stderr goes there; a text pipe) until a line
    for which `match` is true: the step the run has reached, to act on (a signal) then, never
    after a time. Fails with what was read when the process ends first; pytest's timeout bounds
    the wait."""
    import pytest
    stream = proc.stderr if proc.stderr is not None else proc.stdout
    assert stream is not None
    seen: list[str] = []
    for line in iter(stream.readline, ""):
        if match(line):
            return line
        seen = (seen + [line])[-40:]
    proc.wait()
    pytest.fail(f"the run ended (exit {proc.returncode}) before the line waited for:\n{''.join(seen)}")


def one_line_error(res, *fragments):
    """A user mistake: exit 2, one `error:` line, no traceback, naming what is wrong."""
    assert res.returncode == 2, f"exit {res.returncode}: {res.stdout}{res.stderr}"
    assert "Traceback" not in res.stderr + res.stdout
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, res.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


_COMMANDS: dict = {}


def _built_once(app, build):
    if id(app) not in _COMMANDS:      # the app kept beside it: its id is never another's
        _COMMANDS[id(app)] = (app, build(app))
    return _COMMANDS[id(app)][1]


def cli_inprocess(*args, env=None):
    """The `dnnbench` entry point in this process (fast enough for thousands of generated cases):
    (exit code, stdout, stderr). Only for commands that start no engine and never block."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    import typer.main

    from dnnbench.cli import main
    import signal
    # main() builds the click command from the typer app on every call, 0.15 s of a case's 0.2
    # (tests/test_cli_generated.py draws 1,200 cases): built once here, then parsed and run afresh
    # each time as main() does (click keeps no state of a call in the command)
    build = typer.main.get_command
    typer.main.get_command = lambda app: _built_once(app, build)
    saved_argv, saved_env = sys.argv, dict(os.environ)
    saved_signals = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    sys.argv = ["dnnbench", *map(str, args)]
    os.environ.update({"COLUMNS": "200", **(env or {})})
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        with redirect_stdout(out), redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        typer.main.get_command = build
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
    return code, out.getvalue(), err.getvalue()
