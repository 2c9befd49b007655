"""What a run reads or starts is not trusted: a file's environment never starts code, a result is
checked whole before it is run again, every process a run starts ends with it (daemons
included), a script's failures are the run's, and every value printed goes through one escape."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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


@pytest.mark.parametrize("children_files", [True, False], ids=["proc-children", "whole-table"])
def test_descendants_end_a_setsid_grandchild_on_either_way_of_reading_proc(tmp_path, monkeypatch, children_files):
    from dnnbench.containers.engines import reaper
    monkeypatch.setattr(reaper, "_CHILDREN_FILES", children_files and reaper._CHILDREN_FILES)
    pidfile = tmp_path / "daemon.pid"
    code = DAEMON.format(pidfile=str(pidfile), clear="os.environ.clear()", tail="time.sleep(600)")
    root = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, preexec_fn=reaper.own_orphans)
    tree = reaper.Descendants(root.pid)
    try:
        assert _wait_file(pidfile)
        pid = int(pidfile.read_text())
        tree.scan()
        root.kill()
        root.wait()
        assert _alive(pid)                  # the group's end did not reach it: it left the session
        assert pid in tree.end() and not _alive(pid)
    finally:
        if pidfile.exists() and _alive(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


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
    # --rounds 3 (the fewest the verdict rule takes): what is checked is the environment, not the verdict
    res = dnnbench("reproduce", forged, "--results", tmp_path / "out", "--run-id", "again", "-q", "--rounds", "3",
                   timeout=300)
    assert res.returncode in (0, 1), res.stderr[-3000:]
    assert not canary.exists(), "a result's PYTHONPATH ran its sitecustomize.py"
    [line] = [x for x in res.stderr.splitlines() if "not applying" in x]
    assert "LD_PRELOAD, PYTHONPATH" in line and "--env NAME=VALUE" in line
    assert "evil.so" not in res.stderr                       # the loader never saw it
    new = json.loads((tmp_path / "out" / "again" / "result.json").read_text())
    assert new["host"]["env"] == {"MY_SETTING": "kept"}
    # the user's own --env does give it: the same file then runs (the test above could fail)
    res = dnnbench("reproduce", forged, "--results", tmp_path / "out", "--run-id", "mine", "-q", "--rounds", "3",
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
    "env-type": (lambda d: d["host"].update(env={"A": [1]}), "host.env A"),
    "env-owned": (lambda d: d["host"].update(env={"RANK": "3"}), "torchrun"),
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


# --- one rule for printed text, one reader for lists --------------------------------------------

# what a terminal acts on rather than shows: ESC and other C0, DEL, C1 (0x9b: a one-byte CSI),
# and the bidi controls that reorder a line as it is displayed
HOSTILE = ["\x1b", "\x07", "\r", "\x7f", "\x85", "\x9b", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",
           "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c"]
hostile_text = st.tuples(st.text(st.sampled_from(list("ab:/._- 7")), max_size=6), st.sampled_from(HOSTILE),
                         st.text(st.sampled_from(list("cd[]x ") + HOSTILE), max_size=6)).map("".join)


def _raw(text: str) -> list[str]:
    return [c for c in HOSTILE if c in text]


def test_the_escape_shows_every_control_and_bidi_character():
    from dnnbench.console import unprintable, visible
    for c in HOSTILE:
        shown = visible(f"a{c}b")
        assert c not in shown and shown.startswith("a\\") and unprintable(c)
    assert visible("a\tb\nc") == "a\tb\nc" and visible("a\nb", one_line=True) == "a\\nb"
    assert not unprintable("plain text, with ü and 漢字")


def _result_with(tmp_path, text):
    data = json.loads(RESULT.read_text())
    data.update(workload=f"w{text}", job=f"j{text}", system_label=f"s{text}")
    folder = tmp_path / "res" / "one"
    schema.write_atomic(str(folder / "result.json"), data)
    return folder.parent


@settings(max_examples=int(os.environ.get("DNNBENCH_HYPOTHESIS_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True)
@given(text=hostile_text, place=st.sampled_from(["workload", "gpus", "images", "env", "data", "report-table",
                                                  "report-md", "report-csv", "report-json", "report-html", "slurm",
                                                  "results"]))
def test_no_printed_value_drives_the_terminal(tmp_path, text, place):
    from tests.helpers import cli_inprocess
    import tempfile
    box = Path(tempfile.mkdtemp(dir=tmp_path))
    argv = {"workload": ["run", f"resnet{text}", "--dry-run", "--results", box],
            "gpus": ["run", "resnet18", "--gpus", f"0{text}", "--dry-run", "--results", box],
            "images": ["compare-images", "resnet18", "--images", f"a{text},b", "--dry-run", "--results", box],
            "env": ["run", "resnet18", "--env", f"A=1{text}", "--dry-run", "--results", box],
            "data": ["data", "verify", str(box / f"d{text}"), "--kind", "imagenet"],
            "slurm": ["slurm", "resnet18", "--runtime", "host", "--results", str(box / f"r{text}"), "--dry-run"],
            "results": ["run", "resnet18", "--runtime", "host", "--results", str(box / f"r{text}"), "--dry-run"],
            }.get(place)
    if argv is None:
        argv = ["report", _result_with(box, text), "-f", place.split("-")[1]]
    code, stdout, stderr = cli_inprocess(*argv)
    # (CSV ends its lines with \r\n, as RFC 4180 says: that is the format, not a value)
    assert not _raw((stdout + stderr).replace("\r\n", "\n")), (place, text, stdout, stderr)
    assert "Traceback" not in stderr


@pytest.mark.parametrize("argv,fragment", [
    (["compare-images", "resnet18", "--images", "a:1,,b:1", "--dry-run"], "member 2 of 3 is empty"),
    (["compare-images", "resnet18", "--images", "a:1,b:1,", "--dry-run"], "member 3 of 3 is empty"),
    (["compare-images", "resnet18", "--images", ",a:1,b:1", "--dry-run"], "member 1 of 3 is empty"),
    (["bisect", "resnet18", "--images", "a:1,,b:1", "--dry-run"], "is empty"),
    (["run", "resnet18", "--gpus", "0,,1", "--dry-run"], "member 2 of 3 is empty"),
    (["run", "resnet18", "--gpus", "0,", "--dry-run"], "is empty"),
    (["run", "resnet18", "--gpus", "\u0661", "--dry-run"], "ASCII digits"),
    (["run", "resnet18", "--gpus", "0,\u06f2", "--dry-run"], "ASCII digits"),
])
def test_lists_refuse_empty_members_and_gpus_take_ascii_digits(tmp_path, argv, fragment):
    from dnnbench import lists
    one_line_error(dnnbench(*argv, "--results", tmp_path), fragment)
    assert lists.members(" a , b", "--x") == ["a", "b"]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(parts=st.lists(st.text(st.sampled_from(list("ab1 ")), max_size=3), min_size=1, max_size=5))
def test_the_list_reader_never_returns_an_empty_member(parts):
    from dnnbench import lists
    from dnnbench.errors import DnnbenchError
    text = ",".join(parts)
    try:
        got = lists.members(text, "--x")
    except DnnbenchError as exc:
        assert any(not p.strip() for p in parts) and "is empty" in str(exc)
    else:
        assert got == [p.strip() for p in parts] and all(got)


# --- smaller ones: a file where a folder belongs, a full stdout, fake data, a missing .sif ----------

@pytest.mark.parametrize("planted", ["train", "val", "train/n01440764"])
def test_data_prepare_with_a_file_where_a_folder_belongs_is_one_line(tmp_path, planted):
    from tests import ilsvrc
    src, dst = tmp_path / "tars", tmp_path / "imagenet"
    ilsvrc.make(src)
    (dst / planted).parent.mkdir(parents=True, exist_ok=True)
    (dst / planted).write_text("mine")
    one_line_error(dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dst), planted, "regular file")
    assert (dst / planted).read_text() == "mine"


@pytest.mark.parametrize("fmt", ["table", "md", "csv", "json"])
def test_report_to_a_full_stdout_is_one_line(fmt):
    with open("/dev/full", "w") as full:
        res = subprocess.run([sys.executable, "-m", "dnnbench", "report", str(RESULT.parent.parent.parent), "-f", fmt],
                             stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.splitlines() == ["error: cannot write the output: No space left on device"]


def test_data_fake_refuses_more_classes_than_images(tmp_path):
    one_line_error(dnnbench("data", "fake", "imagenet", "--to", tmp_path / "d", "--images", "4", "--classes", "10",
                            "--size", "16"), "--classes 10", "--images 4")
    assert not (tmp_path / "d").exists()
    dnnbench("data", "fake", "imagenet", "--to", tmp_path / "e", "--images", "4", "--classes", "4", "--size", "16",
             check=0)
    dnnbench("data", "verify", tmp_path / "e", "--kind", "imagenet", check=0)


def test_a_dry_run_refuses_a_missing_sif_as_the_run_would(tmp_path):
    (tmp_path / "a.sif").write_bytes(b"")
    one_line_error(dnnbench("compare-images", "resnet18", "--runtime", "singularity", "--images",
                            f"{tmp_path / 'a.sif'},{tmp_path / 'b.sif'}", "--dry-run", "--results", tmp_path / "r"),
                   "no such .sif", "b.sif")
    one_line_error(dnnbench("run", "resnet18", "--runtime", "singularity", "--image", tmp_path / "b.sif",
                            "--dry-run", "--results", tmp_path / "r"), "no such .sif")


def test_a_rank_that_fails_in_its_step_fails_the_run(tmp_path):
    res = dnnbench("run", "--script", SCRIPTS / "ddp_rank_fails.py", "--runtime", "host", "--nproc", "2",
                   "--results", tmp_path, "--run-id", "rf", *TIMING, timeout=300)
    assert res.returncode != 0
    data = json.loads((tmp_path / "rf" / "result.json").read_text())
    assert data["status"] == "error" and "rank 1 failed" in data["message"] and "exploded" in data["message"]
