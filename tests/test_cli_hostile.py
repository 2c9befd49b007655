"""Hostile input: a table of bad names, paths, numbers, suite files and result files given to
every command, and injected faults (FIFOs, link loops, unreadable files and folders, full and
read-only filesystems, an unreachable or forbidden Docker socket, a missing Pillow).

Each answer must be clean: the documented exit code (2 for bad input), exactly one `error:`
line, no traceback, no rich MarkupError, user text shown as typed; and nothing outside the
test's own folder written or removed (a victim folder beside --results must survive)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import dnnbench

TINY = ["--runtime", "host", "--batch-size", "2", "--warmup", "0", "--number", "1", "--repeat", "1", "-q"]
NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]   # root, but bound by file modes


def clean(res, code=2, *fragments):
    """The documented exit code, no traceback or markup crash, and for errors one `error:` line."""
    both = res.stdout + res.stderr
    assert "Traceback" not in both and "MarkupError" not in both, both
    assert res.returncode == code, f"exit {res.returncode}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    if code == 2:
        assert len(errors) == 1, res.stderr
    for fragment in fragments:
        assert fragment in both, (fragment, both)
    return errors[0] if errors else None


@pytest.fixture
def box(tmp_path):
    """tmp/work (the cwd), tmp/results, and tmp/victim holding a user's half-finished run; after
    the test the victim is whole and nothing new appeared beside tmp."""
    for d in ("work", "results", "victim/resnet18/r1"):
        (tmp_path / d).mkdir(parents=True)
    keep = tmp_path / "victim" / "resnet18" / "r1" / "keep.txt"
    keep.write_text("mine")
    around = set(os.listdir(tmp_path.parent))
    yield tmp_path
    assert keep.read_text() == "mine", "the victim folder was touched"
    assert set(os.listdir(tmp_path.parent)) <= around | {tmp_path.name}, "something was written beside tmp"


def fill(args, tmp: Path):
    return [str(a).replace("{tmp}", str(tmp)) for a in args]


def good_result(**over) -> dict:
    data = {
        "schema_version": 1, "run_id": "good", "workload": "resnet18", "status": "ok", "message": None,
        "options": {"batch_size": 2, "amp": "none"}, "unit": "images/s",
        "throughput": {"total": {"n": 1, "mean": 2.0, "median": 2.0, "min": 2.0, "max": 2.0, "sd": 0.0},
                       "per_gpu": {"n": 1, "mean": 2.0}},
        "windows": [{"items": 4, "seconds": 2.0}], "loss": [1.0], "system": {"gpus": []},
        "started": "2024-01-01T00:00:00Z", "ended": "2024-01-01T00:00:01Z", "world_size": 1, "ranks": [],
    }
    data.update(over)
    return data


def write_result(folder: Path, data) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "result.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


# --- names: run ids, tags, suite and job names -----------------------------------------

BAD_RUN_IDS = ["../x", "../../victim", "{tmp}/victim", "/etc", "a/b", "a\n", "\na", "", ".", "..", "-x",
               ".hidden", "a b", "a;rm -rf ~", "$(id)", "`id`", "a" * 101, "é", "[/x]", ":x:", "a\tb",
               "a\\b", "~root", "*", "a:b", "%s%n"]


@pytest.mark.parametrize("run_id", BAD_RUN_IDS)
def test_run_id_is_one_safe_path_component(box, run_id):
    res = dnnbench("run", "resnet18", "--runtime", "host", "--dry-run", "--results", box / "results",
                   "--run-id", fill([run_id], box)[0], cwd=box / "work")
    clean(res, 2, "--run-id")


@pytest.mark.parametrize("run_id", ["../x", "a\n", "/abs", "a b"])
def test_slurm_run_id(box, run_id):
    res = dnnbench("slurm", "resnet18", "--runtime", "host", "--dry-run", "--results", box / "results",
                   "--run-id", run_id, cwd=box / "work")
    clean(res, 2, "--run-id")


BAD_TAGS = ["Bad Tag", "UPPER", "a:b:c", "dnnbench\n", "dnnbench:x\n", "a/../b", "-a", "a:-x", "a:",
            ":b", "a//b", "http://x/y", "x" * 300, "a@sha256:" + "0" * 64, "a:" + "t" * 200, "a b:c",
            "[/x]", "a_/b", "a..b"]


@pytest.mark.parametrize("tag", BAD_TAGS)
def test_build_tag(box, tag):
    clean(dnnbench("build", "--base", "cpu", "--tag", tag, "--log-dir", box / "logs", cwd=box / "work"),
          2, "--tag")


@pytest.mark.parametrize("args,fragment", [
    (["render", "--base", "[/x]"], "unknown base"),
    (["render", "--base", ":x:"], "unknown base"),
    (["render", "--base", "cpu", "--format", "[/x]"], "unknown format"),
    (["build", "--base", "cpu", "--build-arg", "1A=b"], "KEY=VALUE"),
    (["build", "--base", "cpu", "--build-arg", "A\n=b"], "KEY=VALUE"),
    (["build", "--base", "cpu", "--format", "[/x]"], "unknown format"),
])
def test_build_and_render_bad_input(box, args, fragment):
    clean(dnnbench(*args, "--log-dir", box / "logs") if args[0] == "build" else dnnbench(*args, cwd=box / "work"),
          2, fragment)


# --- run: numbers, options after `--`, paths ---------------------------------------------

@pytest.mark.parametrize("args,fragment", [
    (["--timeout", "nan"], "--timeout"), (["--timeout", "inf"], "--timeout"), (["--timeout", "-1"], "--timeout"),
    (["--timeout", "0"], "--timeout"), (["--timeout", "-inf"], "--timeout"), (["--timeout", "1e400"], "--timeout"),
    (["--nproc", "0"], "--nproc"), (["--nproc", "-1"], "--nproc"), (["--nproc", "100000"], "--nproc"),
    (["--nproc", "99999999999999999999"], "--nproc"),
    (["--batch-size", "0"], "--batch-size"), (["--batch-size", "-5"], "--batch-size"),
    (["--number", "0"], "--number"), (["--repeat", "0"], "--repeat"), (["--warmup", "-1"], "--warmup"),
    (["--start-iter", "5"], "go together"), (["--start-iter", "5", "--stop-iter", "5"], "--start-iter"),
    (["--amp", "fp8"], "fp8"), (["--gpus", "0,,1"], "is empty"), (["--runtime", "[/x]"], "--runtime"),
    (["--batch-size", "x"], "--batch-size"), (["--lr", "x"], "--lr"),
    (["--", "--results", "/etc"], "--results"), (["--", "--results=/etc"], "--results"),
    (["--", "--res", "/etc"], "--res"), (["--", "--run-id", "x"], "--run-id"), (["--", "--run", "x"], "--run"),
    (["--", "--device", "cuda"], "--device"), (["--", "--data", "/x"], "--data"),
    (["--", "--synthetic"], "--synthetic"), (["--", "--profile-window", "cuda"], "--profile-window"),
    (["--", "--scaling-reference", "/x"], "--scaling-reference"),
])
def test_run_bad_numbers_and_host_options(box, args, fragment):
    res = dnnbench("run", "resnet18", "--runtime", "host", "--dry-run", "--results", box / "results", *args,
                   cwd=box / "work")
    clean(res, 2, fragment)


@pytest.mark.parametrize("args,fragment", [
    (["--base", "[/x]", "--dry-run"], "unknown base"), (["--image", "[/x]"], "--image"),
    (["--image", "a@sha256:xyz", "--dry-run"], "--image"), (["--image", "UPPER:x"], "--image"),
    (["--image", "a b", "--dry-run"], "--image"),
])
def test_run_bad_image_or_base(box, args, fragment):
    res = dnnbench("run", "resnet18", "--results", box / "results", *args, cwd=box / "work",
                   env={"DOCKER_HOST": "unix:///nonexistent"})
    clean(res, 2, fragment)


def _touch(path: Path) -> Path:
    path.write_text("")
    return path


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("make,fragment", [
    (lambda t: _touch(t / "file"), "not writable"),
    (lambda t: _touch(t / "file") / "sub", "not writable"),
    (lambda t: Path("/dev/null/results"), "not writable"),
    (lambda t: _fifo(t / "fifo"), "not writable"),
])
def test_dry_run_checks_results_is_writable(box, make, fragment):
    res = dnnbench("run", "resnet18", "--runtime", "host", "--dry-run", "--results", make(box), cwd=box / "work")
    clean(res, 2, fragment)


@pytest.mark.parametrize("make,fragment", [
    (lambda t: t / "none", "does not exist"),
    (lambda t: t / "[/x]", "[/x]"),
    (lambda t: _touch(t / "file"), "file"),
    (lambda t: _fifo(t / "fifo"), "fifo"),
    (lambda t: (t / "empty").mkdir() or t / "empty", "empty"),
])
def test_run_bad_data(box, make, fragment):
    res = dnnbench("run", "resnet18", "--runtime", "host", "--dry-run", "--results", box / "results",
                   "--data", make(box), cwd=box / "work")
    clean(res, 2, fragment)


@pytest.mark.parametrize("folder", ["a,b", "a:b"])
def test_apptainer_bind_refuses_unquotable_paths(box, folder):
    (box / "work" / "x.sif").write_bytes(b"")     # a dry run refuses a missing .sif first
    res = dnnbench("run", "resnet18", "--runtime", "singularity", "--image", "x.sif", "--dry-run",
                   "--results", box / folder, cwd=box / "work")
    clean(res, 2, "Apptainer cannot bind")


@pytest.mark.parametrize("folder", ["[/x]", ":x:", "[red]r[/red]", "a\\"])
def test_markup_in_paths_is_printed_as_typed(box, folder):
    res = dnnbench("run", "resnet18", "--runtime", "host", "--dry-run", "--results", box / folder,
                   "--run-id", "ok", cwd=box / "work")
    clean(res, 0, str(box / folder))


# --- suite files -------------------------------------------------------------------------

BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefg", "bcdefgh")) + "jobs: [*h]\n"

SUITES = [
    ("name: ../victim\njobs:\n  - workload: resnet18\n", ":1: suite name"),
    ("name: /etc\njobs:\n  - workload: resnet18\n", ":1: suite name"),
    ("name: a b\njobs:\n  - workload: resnet18\n", ":1: suite name"),
    ("name: '..'\njobs:\n  - workload: resnet18\n", ":1: suite name"),
    ("name: '[/x]'\njobs:\n  - workload: resnet18\n", ":1: suite name"),
    ("name: 5\njobs:\n  - workload: resnet18\n", "name must be text"),
    ("name: [a]\njobs:\n  - workload: resnet18\n", "name must be text"),
    ("jobs:\n  - workload: resnet18\n    name: ../../victim\n", ":3: job name"),
    ("jobs:\n  - workload: resnet18\n    name: /abs\n", ":3: job name"),
    ("jobs:\n  - workload: resnet18\n    name: \"a\\n\"\n", ":3: job name"),
    ("jobs:\n  - workload: resnet18\n    name: '[/x]'\n", ":3: job name"),
    ("jobs:\n  - workload: resnet18\n    options: [1, 2]\n", ":3: options"),
    ("defaults: [1]\njobs:\n  - workload: resnet18\n", ":1: defaults"),
    ("jobs:\n  - workload: [vae]\n", ":2: workload"),
    ("jobs:\n  - workload: null\n", "workload"),
    ("jobs:\n  - batch_size: 2\n", "workload"),
    ("jobs:\n  - workload: resnet18\n    batch_size: true\n", ":3: batch_size"),
    ("jobs:\n  - workload: resnet18\n    batch_size: [1, 1]\n", "appears twice"),
    ("jobs:\n  - workload: resnet18\n    batch_size: [0]\n", ":3: batch_size"),
    ("jobs:\n  - workload: resnet18\n    batch_size: 2.5\n", ":3: batch_size"),
    ("jobs:\n  - workload: resnet18\n    timeout: .nan\n", ":3: timeout"),
    ("jobs:\n  - workload: resnet18\n    timeout: .inf\n", ":3: timeout"),
    ("jobs:\n  - workload: resnet18\n    timeout: -1\n", ":3: timeout"),
    ("jobs:\n  - workload: resnet18\n    timeout: '10'\n", ":3: timeout"),
    ("jobs:\n  - workload: resnet18\n    parallel: 100000\n", ":3: parallel"),
    ("jobs:\n  - workload: resnet18\n    parallel: 0\n", ":3: parallel"),
    ("jobs:\n  - workload: resnet18\n    parallel: per-cpu\n", ":3: parallel"),
    ("jobs:\n  - workload: resnet18\n    nproc: 0\n", ":3: nproc"),
    ("jobs:\n  - workload: resnet18\n    repeats: 0\n", ":3: repeats"),
    ("jobs:\n  - workload: resnet18\n    repeats: 1000000\n", ":3: repeats"),
    ("jobs:\n  - workload: resnet18\n    repeats: '2'\n", ":3: repeats"),
    ("jobs:\n  - workload: resnet18\n    gpus: [0]\n", ":3: gpus"),
    ("jobs:\n  - workload: resnet18\n    runtime: podman\n", ":3: runtime"),
    ("jobs:\n  - workload: resnet18\n    extra: {a: 1}\n", ":3: extra"),
    ("jobs:\n  - workload: resnet18\n    extra: [--results, /etc]\n", "--results"),
    ("jobs:\n  - workload: resnet18\n    extra: ['--run-id=x']\n", "--run-id"),
    ("jobs:\n  - workload: resnet18\n    options: {lr: .nan}\n", ":3: options.lr"),
    ("jobs:\n  - workload: resnet18\n    options: {lr: -1}\n", ":3: options.lr"),
    ("jobs:\n  - workload: resnet18\n    options: {seed: 1.5}\n", ":3: options.seed"),
    ("jobs:\n  - workload: resnet18\n    options: {compile: 'yes'}\n", ":3: options.compile"),
    ("jobs:\n  - workload: resnet18\n    options: {results: /etc}\n", "unknown option"),
    ("jobs:\n  - workload: resnet18\n    options: {number: 0}\n", "options.number"),
    ("jobs:\n  - workload: resnet18\n    options: {warmup: -1}\n", ":3: options.warmup"),
    ("jobs:\n  - workload: resnet18\n    options: {workers: true}\n", ":3: options.workers"),
    ("jobs:\n  - workload: resnet18\n    amp: [fp8]\n", ":3: amp"),
    ("jobs: {}\n", "non-empty `jobs:`"),
    ("jobs: []\n", "non-empty `jobs:`"),
    ("jobs: [1]\n", "each job is a mapping"),
    ("jobs: [[]]\n", "each job is a mapping"),
    ("- a\n- b\n", "non-empty `jobs:`"),
    ("just text\n", "non-empty `jobs:`"),
    ("", "non-empty `jobs:`"),
    ("jobs:\n\t- workload: resnet18\n", "not valid YAML"),
    ("? [a]\n: 1\njobs: []\n", "s.yaml"),
    ("jobs: !!python/object/apply:os.system [echo hi]\n", "s.yaml"),
    ("extra_top: 1\njobs:\n  - workload: resnet18\n", ":1: unknown key"),
    (BOMB, "alias"),
    ("x: &x [*x]\njobs: [*x]\n", "alias"),
    ("jobs:\n" + "  - workload: resnet18\n    batch_size: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n    repeats: 1000\n"
     + "  - name: b\n    workload: resnet18\n    batch_size: [1, 2]\n    repeats: 1000\n", "more than"),
    ("[" * 20000 + "]" * 20000, "s.yaml"),
    ("jobs:\n  - workload: resnet18\n    env: {RANK: 1}\n", ":3: env RANK: set for each process by torchrun"),
    ("defaults:\n  env: {DNNBENCH_X: a}\njobs:\n  - workload: resnet18\n", ":2: env DNNBENCH_X"),
    ("jobs:\n  - workload: resnet18\n    env: [A=1]\n", ":3: env must be a valid dictionary"),
    ("jobs:\n  - workload: resnet18\n    env: {A: [1]}\n", ":3: env.A"),
    ("jobs:\n  - workload: resnet18\n    env: {A: \"x\\ny\"}\n", ":3: env A: the value must be one line"),
]


@pytest.mark.parametrize("text,fragment", SUITES)
def test_suite_file(box, text, fragment):
    path = box / "work" / "s.yaml"
    path.write_text(text)
    res = dnnbench("suite", "run", path, "--results", box / "results", "--dry-run", cwd=box / "work")
    clean(res, 2, fragment)


@pytest.mark.parametrize("raw,fragment", [
    (b"\xff\xfe\x00junk", "UTF-8"),
    (b"jobs: [" + b"x" * (2 << 20) + b"]", "bytes"),
])
def test_suite_file_bytes(box, raw, fragment):
    path = box / "work" / "s.yaml"
    path.write_bytes(raw)
    clean(dnnbench("suite", "run", path, "--results", box / "results", "--dry-run"), 2, fragment)


# --- result files: report, compare, profile show ------------------------------------------

def _nest(depth):
    return "[" * depth + "]" * depth


BAD_RESULTS = [
    ("", "empty"), ("{\"schema_version\": 1, \"run_id\"", "not valid JSON"), ("not json", "not valid JSON"),
    ("[]", "not a JSON object"), ("null", "not a JSON object"), ("\"x\"", "not a JSON object"),
    ({"status": "ok"}, "missing field"),
    (good_result(windows="x"), "'windows'"), (good_result(windows=[1]), "windows[0]"),
    (good_result(windows=[{"items": "3", "seconds": 1}]), "items"),
    (good_result(windows=[{"items": -1, "seconds": 1}]), "items"),
    (good_result(windows=[{"items": True, "seconds": 1}]), "items"),
    (good_result(windows=[{"items": 10**30, "seconds": 1}]), "items"),
    (good_result(windows=[{"items": 4, "seconds": 0}]), "seconds"),
    (good_result(windows=[{"items": 4, "seconds": -1}]), "seconds"),
    (good_result(windows=[{"items": 4}]), "seconds"),
    (json.dumps(good_result()).replace('"seconds": 2.0', '"seconds": NaN'), "seconds"),
    (json.dumps(good_result()).replace('"seconds": 2.0', '"seconds": Infinity'), "seconds"),
    (json.dumps(good_result()).replace('"seconds": 2.0', '"seconds": 1e400'), "seconds"),
    (json.dumps(good_result()).replace('"seconds": 2.0', '"seconds": 5e-324'), "seconds"),
    (good_result(world_size=0), "world_size"), (good_result(world_size="2"), "world_size"),
    (good_result(world_size=True), "world_size"),
    (good_result(status="weird"), "status"), (good_result(schema_version=99), "newer"),
    (good_result(schema_version=0), "schema_version"), (good_result(options=[]), "options"),
    (good_result(options={"batch_size": "x"}), "batch_size"), (good_result(options={"amp": 5}), "amp"),
    (good_result(job=5), "'job'"), (good_result(system={"gpus": "x"}), "gpus"),
    (good_result(system={"gpus": [{"name": 5}]}), "gpus"),
    (good_result(copies="x"), "copies"), (good_result(copies=[good_result(copies=[])]), "copies"),
    (good_result(copies=[{"status": "ok"}]), "copies[0]"),
    (good_result(scaling={"efficiency": "nan"}), "efficiency"), (good_result(scaling=5), "scaling"),
    (good_result(throughput={"total": 5}), "throughput"),
    (json.dumps(good_result()).replace('"mean": 2.0', '"mean": NaN', 1), "mean"),
    (_nest(100000), "nested too deep"), ("{\"a\": " + "9" * 5000 + "}", "not valid JSON"),
]


def _report_box(box, bad) -> Path:
    res = box / "results"
    write_result(res / "good", good_result())
    path = res / "bad" / "result.json"
    path.parent.mkdir(parents=True)
    if isinstance(bad, bytes):
        path.write_bytes(bad)
    else:
        path.write_text(bad if isinstance(bad, str) else json.dumps(bad))
    return res


@pytest.mark.parametrize("bad,why", BAD_RESULTS)
def test_report_names_each_skipped_file(box, bad, why):
    res = _report_box(box, bad)
    out = dnnbench("report", res, "-f", "csv", cwd=box / "work", timeout=120)
    clean(out, 0, "resnet18-bs2")
    skipped = [line for line in out.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 1 and str(res / "bad" / "result.json") in skipped[0] and why in out.stderr, out.stderr
    clean(dnnbench("report", res, "--strict", cwd=box / "work", timeout=120), 2, "--strict")


@pytest.mark.parametrize("bad,why", BAD_RESULTS[::4])
def test_compare_and_profile_show_on_bad_results(box, bad, why):
    res = _report_box(box, bad)
    clean(dnnbench("compare", res, res, cwd=box / "work"), 0, "skipped")
    clean(dnnbench("compare", res, res, "--strict", cwd=box / "work"), 2, "--strict")
    clean(dnnbench("profile", "show", res / "bad", cwd=box / "work"), 2, "result.json")


@pytest.mark.parametrize("text", ["[/x]", ":x:", "[bold]b[/bold]", "a\\"])
def test_report_prints_file_text_as_typed(box, text):
    res = box / "results"
    write_result(res / "a", good_result(job=text, workload=text, unit=text))
    for fmt in ("table", "md"):
        clean(dnnbench("report", res, "-f", fmt, cwd=box / "work"), 0, text)
    clean(dnnbench("compare", res, res, cwd=box / "work"), 0, text)


@pytest.mark.parametrize("profile", [{"ncu": 5}, {"nsys": {"kernels": 5}}, {"torch": []},
                                     {"problems": "x", "nvprof": {"kernel_names": "[/x]", "kernels": [{}]}}])
def test_profile_show_malformed_summary(box, profile):
    write_result(box / "results" / "p", good_result(profile=profile))
    res = dnnbench("profile", "show", box / "results" / "p", cwd=box / "work")
    assert "Traceback" not in res.stderr and "MarkupError" not in res.stderr
    assert res.returncode in (0, 1, 2), res.stderr


@pytest.mark.parametrize("text,fragment", [
    ("a: .inf\n", "finite positive"), ("a: .nan\n", "finite positive"), ("a: -1\n", "finite positive"),
    ("a: true\n", "finite positive"), ("a: x\n", "finite positive"), ("[1, 2]\n", "mapping"),
    ("a: {throughput: .inf}\n", "finite positive"), (BOMB.replace("jobs: [*h]", "a: [*h]"), "alias"),
    ("a: [\n", "not valid YAML"),
])
def test_report_bad_baseline(box, text, fragment):
    res = box / "results"
    write_result(res / "a", good_result())
    base = box / "work" / "base.yaml"
    base.write_text(text)
    clean(dnnbench("report", res, "--baseline", base, cwd=box / "work"), 2, fragment)


@pytest.mark.parametrize("args,fragment", [
    (["--weight", "a=nan"], "--weight"), (["--weight", "a=inf"], "--weight"), (["--weight", "a=-1"], "--weight"),
    (["--weight", "a"], "--weight"), (["--tolerance", "nan"], "--tolerance"), (["--tolerance", "-0.1"], "--tolerance"),
    (["--tolerance", "1.5"], "--tolerance"), (["--format", "[/x]"], "unknown format"),
])
def test_report_bad_options(box, args, fragment):
    res = box / "results"
    write_result(res / "a", good_result())
    clean(dnnbench("report", res, *args, cwd=box / "work"), 2, fragment)


# --- data ----------------------------------------------------------------------------------

@pytest.mark.parametrize("args,code,fragment", [
    (["data", "verify", "{tmp}/[/x]", "--kind", "imagenet"], 1, "[/x]"),
    (["data", "verify", "{tmp}/:x:", "--kind", "imagenet"], 1, ":x:"),
    (["data", "verify", "{tmp}/victim", "--kind", "[/x]"], 2, "unknown dataset kind"),
    (["data", "fake", "imagenet", "--to", "{tmp}/f", "--images", "0"], 2, "--images"),
    (["data", "fake", "imagenet", "--to", "{tmp}/f", "--size", "1000000"], 2, "--size"),
    (["data", "fake", "text", "--to", "{tmp}/f", "--images", "100000000000"], 2, "--images"),
    (["data", "fake", "imagenet", "--to", "{tmp}/f", "--workers", "0"], 2, "--workers"),
    (["data", "fake", "imagenet", "--to", "{tmp}/victim/resnet18/r1/keep.txt/x"], 2, "cannot create"),
    (["data", "fake", "[/x]", "--to", "{tmp}/f"], 2, "unknown dataset kind"),
    (["data", "prepare", "imagenet", "--from", "{tmp}/[/x]", "--to", "{tmp}/out"], 2, "[/x]"),
    (["data", "prepare", "imagenet", "--from", "{tmp}/victim/resnet18/r1/keep.txt", "--to", "{tmp}/o"], 2,
     "not a folder"),
    (["data", "prepare", "imagenet", "--from", "{tmp}/victim", "--to", "{tmp}/o", "--val-map", "{tmp}/victim"],
     2, "--val-map"),
    (["data", "prepare", "[/x]", "--from", "{tmp}/victim", "--to", "{tmp}/o"], 2, "[/x]"),
])
def test_data_commands(box, args, code, fragment):
    clean(dnnbench(*fill(args, box), cwd=box / "work"), code, fragment)


COCO = [("[]", "not a COCO annotations object"), ('{"images": 5}', "'images' list"),
        ('{"images": [{"file_name": "../../victim"}], "annotations": [], "categories": []}', "plain file_name"),
        ('{"images": [{"file_name": 5}], "annotations": [], "categories": []}', "plain file_name"),
        ("[" * 100000, "annotations"), ("not json", "not valid JSON")]


@pytest.mark.parametrize("text,fragment", COCO)
def test_data_verify_bad_coco_annotations(box, text, fragment):
    ds = box / "coco"
    (ds / "annotations").mkdir(parents=True)
    (ds / "train2017").mkdir()
    (ds / "annotations" / "instances_train2017.json").write_text(text)
    clean(dnnbench("data", "verify", ds, "--kind", "coco", cwd=box / "work"), 1, fragment)
    clean(dnnbench("run", "maskrcnn", "--data", ds, "--runtime", "host", "--dry-run", cwd=box / "work"), 2, fragment)


# --- slurm ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args,fragment", [
    (["--time", "30\n"], "--time"), (["--time", "abc"], "--time"), (["--partition", "gpu\n#SBATCH --x"], "--partition"),
    (["--account", "a b"], "--account"), (["--env", "A"], "--env"), (["--env", "1=2"], "--env"),
    (["--nodes", "0"], "--nodes"), (["--sbatch-arg", "x"], "--sbatch-arg"), (["--setup", "a\nb"], "--setup"),
    (["--", "--results", "/etc"], "--results"), (["--timeout", "nan"], "--timeout"),
])
def test_slurm_bad_input(box, args, fragment):
    res = dnnbench("slurm", "resnet18", "--runtime", "host", "--dry-run", "--results", box / "results", *args,
                   cwd=box / "work")
    clean(res, 2, fragment)


# ===========================================================================================
# Faults
# ===========================================================================================

def _no_dac(*args, **kw):
    """The CLI as root without CAP_DAC_OVERRIDE: file modes bind it like any user."""
    env = {**os.environ, "COLUMNS": "200", **kw.pop("env", {})}
    return subprocess.run(NO_DAC + [sys.executable, "-m", "dnnbench", *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=env, **kw)


def test_fault_result_fifo_does_not_hang(box):
    res = box / "results"
    write_result(res / "good", good_result())
    _fifo(res / "bad" / "result.json")
    out = dnnbench("report", res, timeout=60)
    clean(out, 0, "not a regular file")
    clean(dnnbench("profile", "show", res / "bad", timeout=60), 2, "not a regular file")


def test_fault_result_is_a_folder(box):
    res = box / "results"
    write_result(res / "good", good_result())
    (res / "bad" / "result.json").mkdir(parents=True)
    clean(dnnbench("report", res), 0, "not a regular file")


def test_fault_result_symlink_loop(box):
    res = box / "results"
    write_result(res / "good", good_result())
    (res / "bad").mkdir()
    os.symlink("loop2", res / "bad" / "result.json")
    os.symlink("result.json", res / "bad" / "loop2")
    clean(dnnbench("report", res), 0, "skipped")


def test_fault_folder_symlink_loop(box):
    res = box / "results"
    write_result(res / "good", good_result())
    os.symlink(res, res / "self")
    clean(dnnbench("report", res, timeout=60), 0, "resnet18-bs2")


def test_fault_result_is_a_device(box):
    res = box / "results"
    write_result(res / "good", good_result())
    (res / "bad").mkdir()
    os.symlink("/dev/zero", res / "bad" / "result.json")
    clean(dnnbench("report", res, timeout=60), 0, "not a regular file")


def test_fault_unreadable_result(box):
    res = box / "results"
    write_result(res / "good", good_result())
    bad = write_result(res / "bad", good_result())
    bad.chmod(0)
    clean(_no_dac("report", res), 0, "Permission denied")
    clean(_no_dac("report", res, "--strict"), 2, "--strict")


def test_fault_unlistable_folder(box):
    res = box / "results"
    write_result(res / "good", good_result())
    write_result(res / "locked" / "r1", good_result())
    (res / "locked").chmod(0)
    try:
        clean(_no_dac("report", res), 0, "cannot list it")
    finally:
        (res / "locked").chmod(0o755)


def test_fault_report_output_unwritable(box):
    res = box / "results"
    write_result(res / "good", good_result())
    (box / "file").write_text("")
    clean(dnnbench("report", res, "-f", "csv", "-o", box / "file" / "r.csv"), 2, "cannot write")


def test_fault_suite_file_fifo(box):
    clean(dnnbench("suite", "run", _fifo(box / "s.yaml"), "--dry-run", timeout=60), 2, "not a regular file")


def test_fault_suite_file_folder_and_missing(box):
    clean(dnnbench("suite", "run", box / "victim", "--dry-run"), 2, "not a regular file")
    clean(dnnbench("suite", "run", box / "none.yaml", "--dry-run"), 2, "cannot read suite")


def test_fault_suite_file_unreadable(box):
    path = box / "s.yaml"
    path.write_text("jobs:\n  - workload: resnet18\n")
    path.chmod(0)
    clean(_no_dac("suite", "run", path, "--dry-run"), 2, "not readable")


def test_fault_baseline_fifo(box):
    write_result(box / "results" / "a", good_result())
    clean(dnnbench("report", box / "results", "--baseline", _fifo(box / "base.yaml"), timeout=60), 2,
          "not a regular file")


SUITE_ESCAPES = [
    ("name: ../victim\njobs:\n  - workload: resnet18\n    runtime: host\n", "suite name"),
    ("name: s\njobs:\n  - workload: resnet18\n    name: ../../victim/resnet18\n    runtime: host\n", "job name"),
]


@pytest.mark.parametrize("text,fragment", SUITE_ESCAPES)
def test_fault_suite_cannot_remove_outside_results(box, text, fragment):
    """The reported defect: a shared suite file named a user's folder, and `suite run` removed
    the unfinished run in it. The `box` fixture checks the victim is whole."""
    path = box / "work" / "s.yaml"
    path.write_text(text + "    options: {warmup: 0, number: 1, repeat: 1}\n    batch_size: 2\n")
    clean(dnnbench("suite", "run", path, "--results", box / "results", cwd=box / "work", timeout=300), 2, fragment)


def test_fault_suite_run_folder_linked_outside(box):
    """A run folder that is a link out of the suite's folder is neither followed nor removed."""
    path = box / "work" / "s.yaml"
    path.write_text("name: s\njobs:\n  - workload: resnet18\n    runtime: host\n    batch_size: 2\n"
                    "    options: {warmup: 0, number: 1, repeat: 1}\n")
    (box / "results" / "s").mkdir()
    os.symlink(box / "victim" / "resnet18", box / "results" / "s" / "resnet18-bs2")
    clean(dnnbench("suite", "run", path, "--results", box / "results", cwd=box / "work"), 2, "not inside")


def test_fault_run_folder_linked_outside(box):
    os.symlink(box / "victim", box / "results" / "r1")
    res = dnnbench("run", "resnet18", "--results", box / "results", "--run-id", "r1", *TINY)
    clean(res, 2, "not inside")


@pytest.fixture
def tiny_fs(tmp_path):
    mount = tmp_path / "fs"
    mount.mkdir()
    mounted = []

    def make(size="1m", ro=False):
        opts = f"size={size}" + (",ro" if ro else "")
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mount)], check=True)
        mounted.append(mount)
        return mount
    yield make
    for m in mounted:
        subprocess.run(["umount", "-l", str(m)], check=False)


def test_fault_data_fake_disk_full(box, tiny_fs):
    fs = tiny_fs("2m")
    clean(dnnbench("data", "fake", "text", "--to", fs / "t", "--images", "20000"), 2, "disk full")
    clean(dnnbench("data", "fake", "imagenet", "--to", fs / "i", "--images", "1000"), 2, "MiB free")


def test_fault_read_only_filesystem(box, tiny_fs):
    fs = tiny_fs("1m", ro=True)
    clean(dnnbench("data", "fake", "text", "--to", fs / "t"), 2, "cannot create")
    clean(dnnbench("run", "resnet18", "--runtime", "host", "--results", fs / "r"), 2, "not writable")
    clean(dnnbench("run", "resnet18", "--runtime", "host", "--dry-run", "--results", fs / "r"), 2, "not writable")


def test_fault_docker_unreachable(box):
    env = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    clean(dnnbench("run", "resnet18", "--results", box / "results", env=env), 2, "cannot reach the Docker engine")
    res = dnnbench("images", "--sif-dir", box / "work", env=env)
    clean(res, 0, "docker images not listed", "cannot reach")


def test_fault_docker_permission_denied(box):
    sock_path = box / "docker.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    sock.listen()
    sock_path.chmod(0)
    try:
        env = {"DOCKER_HOST": f"unix://{sock_path}"}
        clean(_no_dac("run", "resnet18", "--results", box / "results", env=env), 2, "docker` group")
        doctor = _no_dac("doctor", env=env)
        assert "docker` group" in doctor.stdout and "start it" not in doctor.stdout, doctor.stdout
    finally:
        sock.close()


def test_fault_doctor_hint_keeps_brackets(box):
    """`pip install 'dnnbench[torch]'` lost its [torch] to markup."""
    shim = box / "shim"
    (shim / "torch").mkdir(parents=True)
    (shim / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    res = dnnbench("doctor", env={"PYTHONPATH": str(shim), "DOCKER_HOST": "unix:///nonexistent"})
    assert "dnnbench[torch]" in res.stdout and "Traceback" not in res.stderr


def test_fault_no_pillow(box):
    shim = box / "shim"
    (shim / "PIL").mkdir(parents=True)
    (shim / "PIL" / "__init__.py").write_text("raise ImportError('no Pillow here')\n")
    env = {"PYTHONPATH": str(shim)}
    clean(dnnbench("data", "fake", "imagenet", "--to", box / "f", "--images", "4", "--classes", "4", env=env), 2,
          "Pillow")
    clean(dnnbench("data", "verify", box / "victim", "--kind", "imagenet", "--deep", env=env), 2, "Pillow")


def test_fault_unreadable_dataset(box):
    ds = box / "ds" / "train" / "n01440764"
    ds.mkdir(parents=True)
    (ds / "a.JPEG").write_bytes(b"x")
    (box / "ds" / "train").chmod(0)
    try:
        res = _no_dac("data", "verify", box / "ds", "--kind", "imagenet")
        assert "Traceback" not in res.stderr and res.returncode in (1, 2), res.stderr
    finally:
        (box / "ds" / "train").chmod(0o755)


def test_fault_prepare_marker_not_an_object(box):
    """A marker someone else wrote (a JSON list) means: prepare again, not a traceback."""
    src, dest = box / "src", box / "dest"
    src.mkdir()
    dest.mkdir()
    (dest / ".dnnbench-prepared.json").write_text("[1]")
    clean(dnnbench("data", "prepare", "imagenet", "--from", src, "--to", dest), 2, "ILSVRC2012_img_train.tar")


# --- a few real host runs -------------------------------------------------------------------

def test_real_run_with_markup_in_paths(box):
    results = box / "results" / "[/x] :x:"
    res = dnnbench("run", "resnet18", "--results", results, "--run-id", "r1", *TINY,
                   timeout=300)
    clean(res, 0, "[/x] :x:")
    assert json.loads((results / "r1" / "result.json").read_text())["status"] == "ok"
    clean(dnnbench("report", results), 0, "resnet18-bs2")


def test_real_inception_v3_at_batch_1(box):
    """The TBD suite sweeps from 1: inception_v3 trains there without its aux head, and says so."""
    res = dnnbench("run", "inception_v3", "--results", box / "results", "--run-id", "i1", *TINY,
                   "--batch-size", "1", timeout=300)
    clean(res, 0)
    data = json.loads((box / "results" / "i1" / "result.json").read_text())
    assert data["status"] == "ok" and data["options"]["aux_logits"] is False


def test_hostile_table_is_large_enough():
    """The issue asks for at least 150 hostile inputs and 20 faults."""
    inputs = (len(BAD_RUN_IDS) + 4 + len(BAD_TAGS) + 6 + 32 + 4 + 5 + 2 + 4 + len(SUITES) + 2
              + len(BAD_RESULTS) + len(BAD_RESULTS[::4]) + 4 + 4 + 9 + 8 + 13 + len(COCO) + 11 + 5)
    faults = [name for name in globals() if name.startswith("test_fault_")]
    assert inputs >= 150 and len(faults) + len(SUITE_ESCAPES) - 1 >= 20, (inputs, len(faults))
