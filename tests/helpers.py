"""What tests share: the real command line as a subprocess, and the shape of a one-line error."""
from __future__ import annotations

import fcntl
import os
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


def one_line_error(res, *fragments):
    """A user mistake: exit 2, one `error:` line, no traceback, naming what is wrong."""
    assert res.returncode == 2, f"exit {res.returncode}: {res.stdout}{res.stderr}"
    assert "Traceback" not in res.stderr + res.stdout
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, res.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def cli_inprocess(*args, env=None):
    """The `dnnbench` entry point in this process (fast enough for thousands of generated cases):
    (exit code, stdout, stderr). Only for commands that start no engine and never block."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from dnnbench.cli import main
    import signal
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
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
    return code, out.getvalue(), err.getvalue()
