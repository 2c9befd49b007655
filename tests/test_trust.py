"""What a run reads or starts is not trusted: a file's environment never starts code, a result is
checked whole before it is run again, every process a run starts ends with it (daemons
included), a script's failures are the run's, and every value printed goes through one escape."""
from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dnnbench.workloads import schema
from tests.helpers import ROOT, dnnbench, one_line_error

SCRIPTS = ROOT / "tests" / "fixtures" / "scripts"
RESULT = ROOT / "tests" / "fixtures" / "results" / "cpu-suite" / "resnet18-bs4" / "r1" / "result.json"
TIMING = ["--warmup", "1", "--number", "2", "--repeat", "3"]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _wait_file(path, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not path.exists():
        time.sleep(0.1)
    return path.exists()


# --- every process a run starts ends with it ---------------------------------------------------

DAEMON = """
import os, sys, time
# a double fork and setsid: the daemon leaves the run's process group and session
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        {clear}
        with open({pidfile!r} + ".tmp", "w") as fh:
            fh.write(str(os.getpid()))
        os.rename({pidfile!r} + ".tmp", {pidfile!r})
        while True:
            time.sleep(1)
    os._exit(0)
os.wait()
while not os.path.exists({pidfile!r}):
    time.sleep(0.05)
{tail}
"""


@pytest.mark.parametrize("clear", ["", "os.environ.clear()"], ids=["daemon", "daemon-without-env"])
def test_a_scripts_daemon_does_not_outlive_a_host_run(tmp_path, clear):
    pidfile = tmp_path / "daemon.pid"
    script = tmp_path / "daemonize.py"
    script.write_text(DAEMON.format(pidfile=str(pidfile), clear=clear,
                                    tail=(SCRIPTS / "plain_loop.py").read_text()))
    res = dnnbench("run", "--script", script, "--runtime", "host", "--results", tmp_path / "r", "--run-id", "d",
                   *TIMING, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    pid = int(pidfile.read_text())
    try:
        assert not _alive(pid), f"the script's daemon {pid} outlived the run"
        assert "process the run left running" in (tmp_path / "r" / "d" / "log.txt").read_text()
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


# --- a file's environment never starts code -----------------------------------------------------

def _forged(tmp_path, name, change) -> object:
    data = json.loads(RESULT.read_text())
    change(data)
    schema.write_atomic(str(tmp_path / name / "result.json"), data)
    return tmp_path / name


SITE = "import pathlib; pathlib.Path({canary!r}).write_text('ran')\n"


def test_a_results_env_cannot_run_code_unless_the_user_gives_it(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    canary = tmp_path / "canary"
    (site / "sitecustomize.py").write_text(SITE.format(canary=str(canary)))
    forged = _forged(tmp_path, "forged", lambda d: d["host"].update(env={
        "PYTHONPATH": str(site), "LD_PRELOAD": str(tmp_path / "evil.so"), "MY_SETTING": "kept"}))
    res = dnnbench("reproduce", forged, "--results", tmp_path / "out", "--run-id", "again", "-q", timeout=300)
    assert res.returncode in (0, 1), res.stderr[-3000:]
    assert not canary.exists(), "a result's PYTHONPATH ran its sitecustomize.py"
    [line] = [x for x in res.stderr.splitlines() if "not applying" in x]
    assert "LD_PRELOAD, PYTHONPATH" in line and "--env NAME=VALUE" in line
    assert "evil.so" not in res.stderr                       # the loader never saw it
    new = json.loads((tmp_path / "out" / "again" / "result.json").read_text())
    assert new["host"]["env"] == {"MY_SETTING": "kept"}
    # the user's own --env does give it: the same file then runs (the test above could fail)
    res = dnnbench("reproduce", forged, "--results", tmp_path / "out", "--run-id", "mine", "-q",
                   "--env", f"PYTHONPATH={site}", timeout=300)
    assert res.returncode in (0, 1), res.stderr[-3000:]
    assert canary.exists() and "PYTHONPATH" not in "".join(x for x in res.stderr.splitlines() if "not applying" in x)


def test_a_suites_env_cannot_run_code(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    canary = tmp_path / "canary"
    (site / "sitecustomize.py").write_text(SITE.format(canary=str(canary)))
    suite = tmp_path / "s.yaml"
    suite.write_text(f"name: s\njobs:\n  - script: {SCRIPTS / 'plain_loop.py'}\n    runtime: host\n"
                     f"    env: {{PYTHONPATH: {site}, BASH_ENV: /x, MINE: '1'}}\n"
                     f"    options: {{warmup: 1, number: 2, repeat: 3}}\n")
    res = dnnbench("suite", "run", suite, "--results", tmp_path / "r", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert not canary.exists(), "a suite's PYTHONPATH ran its sitecustomize.py"
    assert sum("not applying BASH_ENV, PYTHONPATH" in x for x in res.stderr.splitlines()) == 1


@pytest.mark.parametrize("name", ["PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "LD_PRELOAD", "LD_LIBRARY_PATH",
                                  "LD_AUDIT", "BASH_ENV", "ENV", "PERL5OPT", "PATH", "NODE_OPTIONS",
                                  "CUDA_INJECTION64_PATH", "GLIBC_TUNABLES"])
def test_what_starts_code_is_one_list(name):
    from dnnbench.runs import environment
    assert environment.starts_code(name)
    assert environment.from_file({name: "/x", "NCCL_DEBUG": "INFO"}) == {"NCCL_DEBUG": "INFO"}
    assert environment.from_file({name: "/x"}, given={name: "/y"}) == {name: "/x"}
    assert not environment.starts_code("NCCL_DEBUG") and not environment.starts_code("OMP_NUM_THREADS")


# --- a result is checked whole before it is run again -------------------------------------------

FORGERIES = {
    "gpus-numbers": (lambda d: d["host"].update(gpus=[0, 1]), "host.gpus"),
    "gpus-arabic-digits": (lambda d: d["host"].update(gpus=["\u0661"]), "ASCII digits"),
    "gpus-empty-member": (lambda d: d["host"].update(gpus=["0", ""]), "empty"),
    "unknown-option": (lambda d: d["options"].update(frobnicate=3), "'frobnicate'"),
    "option-prefix": (lambda d: d["options"].update(batch=3), "'batch'"),
    "option-type": (lambda d: d["options"].update(workers="four"), "options.workers"),
    "flag-type": (lambda d: d["options"].update(channels_last="yes"), "true or false"),
    "choice": (lambda d: d["options"].update(amp="fp64"), "options.amp"),
    "runtime-type": (lambda d: d["host"].update(runtime=["host"]), "host.runtime"),
    "image-digest-type": (lambda d: d.update(manifest={"host": {"image": {"id": 5}}}), "manifest.host.image"),
    "synthetic-type": (lambda d: d.update(synthetic="yes"), "synthetic"),
}


@pytest.mark.parametrize("case", sorted(FORGERIES))
def test_reproduce_refuses_a_forged_result_up_front(tmp_path, case):
    change, fragment = FORGERIES[case]
    forged = _forged(tmp_path, case, change)
    one_line_error(dnnbench("reproduce", forged, "--results", tmp_path / "out"), "cannot be run again", fragment)
    assert not (tmp_path / "out").exists()


# --- a script's failures are the run's ----------------------------------------------------------

def _instrument(tmp_path, script, *args, opts=TIMING):
    out = tmp_path / "r"
    res = subprocess.run([sys.executable, "-m", "dnnbench.workloads.instrument", "--results", str(out), *opts,
                          str(script), *args], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    data = json.loads((out / "result.json").read_text()) if (out / "result.json").exists() else None
    return res, data


def test_a_script_stepping_from_a_thread_is_stopped_without_a_traceback(tmp_path):
    res, data = _instrument(tmp_path, SCRIPTS / "thread_step.py")
    assert res.returncode == 0, res.stderr[-3000:]
    assert data["status"] == "ok" and len(data["windows"]) == 3
    assert "Traceback" not in res.stderr and "Stop" not in res.stderr and "main done" in res.stdout


def test_a_thread_that_fails_in_its_step_fails_the_run(tmp_path):
    # with --run-to-end the windows are complete before the thread dies: still the run's failure
    res, data = _instrument(tmp_path, SCRIPTS / "thread_step.py", "--fail", opts=TIMING + ["--run-to-end"])
    assert res.returncode == 1, res.stderr[-3000:]
    assert data["status"] == "error" and "thread step exploded" in data["message"]
    assert data["script"]["exit_code"] == 1


def test_a_script_path_that_is_not_utf8_is_one_line(tmp_path):
    script = os.path.join(os.fsencode(tmp_path), b"bad\xff.py")
    with open(script, "wb") as fh:
        fh.write((SCRIPTS / "plain_loop.py").read_bytes())
    name = os.fsdecode(script)
    one_line_error(dnnbench("run", "--script", name, "--runtime", "host", "--results", tmp_path / "r", *TIMING),
                   "not UTF-8")
    res = subprocess.run([sys.executable, "-m", "dnnbench.workloads.instrument", "--results", str(tmp_path / "i"),
                          name], capture_output=True, text=True, timeout=240)
    assert res.returncode == 2 and "not UTF-8" in res.stderr and "Traceback" not in res.stderr


def test_copies_that_never_form_a_process_group_are_not_a_result(tmp_path):
    res = dnnbench("run", "--script", SCRIPTS / "plain_loop.py", "--runtime", "host", "--nproc", "2",
                   "--results", tmp_path, "--run-id", "n2", *TIMING, timeout=300)
    assert res.returncode != 0
    data = json.loads((tmp_path / "n2" / "result.json").read_text())
    assert data["status"] == "error" and "never formed a process group" in data["message"]
    assert "never formed a process group" in res.stderr     # (torchrun adds its own report of the exit)
