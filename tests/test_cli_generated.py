"""Generated hostile input for every command: hypothesis draws names, numbers, strings and file
kinds (links out, dangling links, FIFOs, devices, folders, huge and deep files) for each
command's arguments and options, and every answer must keep the same invariants:

- an exit code from the documented set (0 ok, 1 failed, 2 bad input, 130 interrupted);
- for exit 2, exactly one line starting with `error:`; never a traceback;
- nothing written, changed or removed outside the sandbox the case names (a canary folder
  beside it, where every planted link points, is compared byte for byte);
- no command blocks (a FIFO or device is never read; each case has a time limit).

Commands run in this process (tests/helpers.cli_inprocess), with --dry-run where a command would
start an engine, a build or a job, so a CI run draws well over 1,000 cases in a few minutes.
DNNBENCH_HYPOTHESIS_EXAMPLES=N draws N per command (a longer run on demand); CI uses a fixed seed.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import _leftover_processes
from tests.helpers import cli_inprocess, dnnbench

EXAMPLES = int(os.environ.get("DNNBENCH_HYPOTHESIS_EXAMPLES", "300"))   # x 5 in-process tests: 1,500 cases per CI run
CASE_SECONDS = 60
DOCUMENTED = {0, 1, 2, 130}
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))

# --- what is drawn ---------------------------------------------------------------------------

HOSTILE_CHARS = st.sampled_from(list("/|\\$`'\"\n\r\t\x1b[]:;,*?~!& .-_") + ["\x07", "\x7f", "é", "😀", "\u202e"])
TEXT = st.one_of(
    st.text(st.one_of(HOSTILE_CHARS, st.characters(blacklist_categories=("Cs",), blacklist_characters="\0")),
            min_size=0, max_size=40),
    st.sampled_from(["", ".", "..", "../x", "/", "-x", "--help", "a" * 300, "x\ny", "\x1b[31mred", "[/x]", ":x:",
                     "resnet18", "ngc-24.10", "cpu", "all", "0,,1", "~nosuchuser/x"]))
PLAIN_NUMBER = st.sampled_from(["1", "2", "3", "5", "0.5", "10"])
HOSTILE_NUMBER = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "-1", "0", "1", "1e309", str(2**70), "1.5", "abc", "", "0x10", "1_000",
                     "-0", "1e-320", "3"]),
    st.integers(-2**70, 2**70).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr))
NUMBER = st.one_of(PLAIN_NUMBER, PLAIN_NUMBER, HOSTILE_NUMBER)     # mostly valid: the deeper paths run too


def name_or(plain: str):
    """Mostly a valid name, sometimes anything."""
    return st.one_of(st.just(plain), st.just(plain), TEXT)


KINDS = ("missing", "file", "folder", "link-out", "dangling", "fifo", "devnull", "huge", "deep-json", "result",
         "link-loop", "empty")


class Sandbox:
    """A folder for one case, with a canary folder beside it that no command may touch."""

    def __init__(self, root: Path):
        self.root, self.canary = root / "box", root / "canary"
        self.root.mkdir()
        self.canary.mkdir()
        (self.canary / "precious.txt").write_text("keep me\n")
        (self.canary / "result.json").write_text(json.dumps(_result()))
        self.n = 0

    def plant(self, kind: str) -> Path:
        self.n += 1
        p = self.root / f"p{self.n}"
        if kind == "file":
            p.write_text("x: 1\n")
        elif kind == "folder":
            p.mkdir()
        elif kind == "link-out":
            p.symlink_to(self.canary / "precious.txt")
        elif kind == "dangling":
            p.symlink_to(self.canary / "made-through-a-link")
        elif kind == "fifo":
            os.mkfifo(p)
        elif kind == "devnull":
            p.symlink_to("/dev/zero")
        elif kind == "huge":
            with open(p, "wb") as fh:
                fh.truncate(2**40)           # sparse: a terabyte that takes no disk
        elif kind == "deep-json":
            p.write_text("[" * 200_000 + "]" * 200_000)
        elif kind == "result":
            p.mkdir()
            (p / "result.json").write_text(json.dumps(_result()))
        elif kind == "link-loop":
            p.symlink_to(p)
        elif kind == "empty":
            p.write_text("")
        return p

    def state(self) -> dict:
        out = {}
        for top, dirs, files in os.walk(self.canary):
            for name in dirs + files:
                q = Path(top) / name
                out[str(q)] = hashlib.sha256(q.read_bytes()).hexdigest() if q.is_file() and not q.is_symlink() \
                    else os.readlink(q) if q.is_symlink() else "dir"
        return out


def _result(**over) -> dict:
    from dnnbench.workloads import schema
    windows = [{"items": 8, "seconds": s, "data_wait": 0.0} for s in (0.5, 0.6, 0.55)]
    data = {"schema_version": schema.SCHEMA_VERSION, "run_id": "r1", "workload": "resnet18", "status": "ok",
            "message": None, "options": {"batch_size": 8, "amp": "none"}, "unit": "images/s",
            "throughput": schema.throughput(windows), "windows": windows, "loss": [], "system": {},
            "started": "2026-01-01T00:00:00Z", "ended": None, "world_size": 1, "ranks": []}
    data.update(over)
    return data


def path_of(kind_st=st.sampled_from(KINDS)):
    return kind_st


# --- the invariants ----------------------------------------------------------------------------

class CaseTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise CaseTimeout()


def check(box: Sandbox, argv: list[str]) -> tuple[int, str, str]:
    before = box.state()
    cwd = os.getcwd()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_SECONDS)
    try:
        os.chdir(box.root)
        code, out, err = cli_inprocess(*argv)
    except CaseTimeout:
        pytest.fail(f"blocked for {CASE_SECONDS} s: dnnbench {argv!r}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        os.chdir(cwd)
    if os.environ.get("DNNBENCH_GEN_TRACE"):
        print("CASE", code, argv[:2], err.strip().splitlines()[-1:] if err.strip() else "")
    where = f"dnnbench {argv!r}\n--- stdout\n{out[-1500:]}\n--- stderr\n{err[-1500:]}"
    assert code in DOCUMENTED, f"exit {code}: {where}"
    assert "Traceback" not in err + out, where
    if code == 2:
        lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert len(lines) == 1, f"{len(lines)} error lines: {where}"
        assert "\x1b" not in lines[0] and "\x07" not in lines[0], where
    assert box.state() == before, f"the canary changed: {where}"
    assert not (box.canary / "made-through-a-link").exists(), where
    return code, out, err


@pytest.fixture
def sandbox_factory(tmp_path_factory):
    def make():
        return Sandbox(tmp_path_factory.mktemp("case"))
    return make


def _path_arg(box: Sandbox, kind: str) -> str:
    return str(box.plant(kind)) if kind != "missing" else str(box.root / "missing")


# --- one test per command group; each draws its own arguments -----------------------------------

RUN_NUMERIC = ["--batch-size", "--number", "--repeat", "--warmup", "--until-ci", "--max-windows", "--workers",
               "--seed", "--lr", "--cool-down", "--timeout", "--nproc", "--start-iter", "--stop-iter"]


@SETTINGS
@given(st.data())
def test_run_slurm_train_and_script(sandbox_factory, data):
    box = sandbox_factory()
    cmd = data.draw(st.sampled_from(["run", "slurm", "train", "script", "slurm-script", "bisect", "compare-images"]))
    listed = st.one_of(st.just(["--images", "dnnbench:a,dnnbench:b"]), st.just(["--bases", "ngc-24.01..ngc-24.03"]),
                       st.tuples(st.sampled_from(["--images", "--bases"]), TEXT).map(list))
    argv = {"run": ["run", data.draw(name_or("resnet18"))],
            "slurm-script": ["slurm", "--script", _path_arg(box, data.draw(st.sampled_from(KINDS)))],
            "bisect": ["bisect", data.draw(name_or("resnet18")), *data.draw(listed),
                       *data.draw(st.sampled_from([[], ["--good", "dnnbench:a"], ["--bad", "x"]])),
                       "--tolerance", data.draw(NUMBER)],
            "compare-images": ["compare-images", data.draw(name_or("resnet18")), *data.draw(listed),
                               *data.draw(st.sampled_from([[], ["--rounds", data.draw(NUMBER)]]))],
            "slurm": ["slurm", data.draw(name_or("resnet18"))],
            "train": ["train", data.draw(name_or("resnet18")), "--data",
                      _path_arg(box, data.draw(st.sampled_from(KINDS)))],
            "script": ["run", "--script", _path_arg(box, data.draw(st.sampled_from(KINDS)))]}[cmd]
    argv += ["--results", data.draw(st.one_of(st.just(str(box.root / "results")), st.just(str(box.root / "results")),
                                              TEXT,
                                              st.sampled_from(KINDS).map(lambda k: _path_arg(box, k))))]
    for flag in data.draw(st.lists(st.sampled_from(RUN_NUMERIC), max_size=3, unique=True)):
        if cmd in ("slurm", "slurm-script") and flag in ("--nproc", "--timeout", "--cool-down"):
            continue
        if cmd in ("bisect", "compare-images") and flag in ("--nproc", "--timeout"):
            continue
        if cmd == "train" and flag not in ("--batch-size", "--workers", "--seed", "--lr", "--timeout", "--nproc"):
            continue
        argv += [flag, data.draw(NUMBER)]
    if data.draw(st.booleans()):
        argv += ["--run-id", data.draw(TEXT)]
    if cmd != "train" and data.draw(st.booleans()):
        argv += ["--data", _path_arg(box, data.draw(st.sampled_from(KINDS)))]
    if cmd in ("run", "script", "train") and data.draw(st.booleans()):
        argv += ["--runtime", data.draw(st.sampled_from(["host", "host", "docker", "singularity", "podman", ""]))]
    if cmd not in ("bisect", "compare-images") and data.draw(st.booleans()):   # --env: checked one way
        name = data.draw(st.one_of(st.sampled_from(["NCCL_DEBUG", "DNNBENCH_RUN_ID", "RANK", "PORT", "SLURM_X",
                                                    "CUDA_VISIBLE_DEVICES", "PET_X", "1A", ""]), TEXT))
        argv += ["--env", name + data.draw(st.sampled_from(["", "="])) + data.draw(TEXT)]
    if cmd in ("slurm", "slurm-script"):
        argv += data.draw(st.sampled_from([[], ["--nodes", "2"], ["--partition", "p\nq"], ["--time", "x"],
                                           ["--env", "A=b\nc"], ["--env", "DNNBENCH_RUN_ID=x"], ["--env", "PORT=1"],
                                           ["--setup", "echo hi"]]))
    if cmd == "train":
        for flag in data.draw(st.lists(st.sampled_from(["--epochs", "--target-accuracy", "--max-time",
                                                          "--image-size", "--eval-every"]), max_size=2, unique=True)):
            argv += [flag, data.draw(NUMBER)]
    check(box, argv + ["--dry-run"])


@SETTINGS
@given(st.data())
def test_report_compare_and_profile(sandbox_factory, data):
    box = sandbox_factory()
    results = box.root / "results"
    for i in range(data.draw(st.integers(1, 3))):
        run = results / f"run{i}"
        run.mkdir(parents=True)
        over = data.draw(st.fixed_dictionaries({}, optional={
            "workload": TEXT, "job": TEXT, "world_size": st.sampled_from([0, 1, 2, 10**20, -1, 2**20]),
            "status": st.sampled_from(["ok", "error", "nan", "weird"]), "schema_version": st.sampled_from([1, 2, 99]),
            "run_id": TEXT}))
        (run / "result.json").write_text(json.dumps(_result(**over)))
    kind = data.draw(st.sampled_from(["report", "compare", "profile"]))
    if kind == "report":
        argv = ["report", str(results)] + data.draw(st.sampled_from([[], [str(results)], [_path_arg(box, "result")]]))
        argv += ["--format", data.draw(st.sampled_from(["table", "csv", "md", "json", "html", "xml"]))]
        if data.draw(st.booleans()):
            argv += ["--tolerance", data.draw(NUMBER)]
        if data.draw(st.booleans()):
            argv += ["--weight", data.draw(TEXT) + "=" + data.draw(NUMBER)]
        if data.draw(st.booleans()):
            argv += ["-o", data.draw(st.one_of(st.sampled_from(KINDS).map(lambda k: _path_arg(box, k)),
                                               st.just(str(results / "run0" / "result.json"))))]
        if data.draw(st.booleans()):
            argv += ["--baseline", _path_arg(box, data.draw(st.sampled_from(KINDS)))]
        if data.draw(st.booleans()):
            argv += ["--plots", _path_arg(box, data.draw(st.sampled_from(["missing", "file", "folder", "fifo",
                                                                           "link-out"])))]
    elif kind == "compare":
        argv = ["compare", str(results), data.draw(st.one_of(st.just(str(results)),
                                                             st.sampled_from(KINDS).map(lambda k: _path_arg(box, k))))]
        if data.draw(st.booleans()):
            argv += ["--tolerance", data.draw(NUMBER)]
    else:
        run = results / "run0"
        (run / "profile").mkdir()
        target = run / "profile" / "launch.json"
        planted = box.plant(data.draw(st.sampled_from(["deep-json", "fifo", "huge", "empty", "file"])))
        os.replace(planted, target)
        argv = ["profile", "show", str(run)] + data.draw(st.sampled_from([[], ["--json"], ["--top", "0"]]))
    check(box, argv)


@SETTINGS
@given(st.data())
def test_data_commands(sandbox_factory, data):
    box = sandbox_factory()
    kind = data.draw(st.sampled_from(["prepare", "fake", "verify"]))
    if kind == "prepare":
        src = _path_arg(box, data.draw(st.sampled_from(KINDS)))
        dst = data.draw(st.one_of(st.just(str(box.root / "out")), st.just(src), st.just(src + "/.partial"),
                                  st.sampled_from(KINDS).map(lambda k: _path_arg(box, k))))
        argv = ["data", "prepare", data.draw(st.sampled_from(["imagenet", "coco", ""])), "--from", src, "--to", dst]
        if data.draw(st.booleans()):
            argv += ["--val-map", _path_arg(box, data.draw(st.sampled_from(KINDS)))]
    elif kind == "fake":
        argv = ["data", "fake", data.draw(st.sampled_from(["imagenet", "text", "ratings", "coco", "x"])), "--to",
                data.draw(st.one_of(st.just(str(box.root / "fake")),
                                    st.sampled_from(KINDS).map(lambda k: _path_arg(box, k)))),
                "--images", data.draw(st.sampled_from(["1", "0", "-1", "nan", "3"])),
                "--size", data.draw(st.sampled_from(["8", "16", "0", "100000"])), "--workers", "1"]
    else:
        argv = ["data", "verify", _path_arg(box, data.draw(st.sampled_from(KINDS))), "--kind",
                data.draw(st.sampled_from(["imagenet", "coco", "text", "ratings", "x"]))]
    check(box, argv)


@SETTINGS
@given(st.data())
def test_image_commands_and_suites(sandbox_factory, data):
    box = sandbox_factory()
    kind = data.draw(st.sampled_from(["build", "render", "bases", "images", "pull", "suite", "reproduce",
                                      "workloads"]))
    if kind == "build":
        argv = ["build", "--base", data.draw(st.one_of(st.sampled_from(["cpu", "ngc-24.10", "rocm-6.0.2"]), TEXT)),
                "--dry-run"]
        if data.draw(st.booleans()):
            argv += ["--ca-cert", _path_arg(box, data.draw(st.sampled_from(KINDS)))]
        if data.draw(st.booleans()):
            argv += ["--build-arg", data.draw(TEXT)]
    elif kind == "render":
        argv = ["render", "--base", data.draw(st.one_of(st.sampled_from(["cpu", "ngc-21.07"]), TEXT)),
                "-o", data.draw(st.one_of(st.just(str(box.root / "r")),
                                          st.sampled_from(KINDS).map(lambda k: _path_arg(box, k))))]
    elif kind == "bases":
        argv = ["bases"] + data.draw(st.sampled_from([[], ["--family", "ngc"], ["--family", "\x1b[31m"]]))
    elif kind == "images":
        argv = ["images", "--sif-dir", _path_arg(box, data.draw(st.sampled_from(KINDS)))]
    elif kind == "pull":      # only what is refused before any download
        argv = ["pull", "--base", data.draw(TEXT), "--cache-dir", _path_arg(box, data.draw(st.sampled_from(
            ["file", "fifo", "link-out", "devnull"])))]
    elif kind == "suite":
        suite = box.root / "s.yaml"
        job = data.draw(st.fixed_dictionaries({"workload": name_or("resnet18"), "runtime": st.just("host")}, optional={
            "script": st.sampled_from(KINDS).map(lambda k: _path_arg(box, k)),
            "train": st.dictionaries(st.sampled_from(["epochs", "target_accuracy", "image_size", "bogus"]),
                                     st.one_of(st.integers(-5, 2**70), st.floats(allow_nan=True)), max_size=2),
            "items_per_step": st.integers(-1, 2**40),
            "name": name_or("job1"), "batch_size": st.one_of(st.integers(-2, 2**40), st.just([1, 2])),
            "gpus": st.sampled_from(["0,,1", "all", "x", 0]), "parallel": st.sampled_from([2, 0, 10**6, "per-gpu"]),
            "options": st.dictionaries(st.sampled_from(["lr", "number", "max_windows", "seed", "bogus"]),
                                       st.one_of(st.integers(-5, 2**70), st.floats(allow_nan=True)), max_size=2),
            "data": st.sampled_from(KINDS).map(lambda k: _path_arg(box, k)),
            "env": st.dictionaries(st.one_of(st.sampled_from(["NCCL_DEBUG", "RANK", "DNNBENCH_X", "1A"]), TEXT),
                                   st.one_of(TEXT, st.integers(), st.floats(allow_nan=True), st.booleans()),
                                   max_size=2)}))
        suite.write_text(json.dumps({"name": data.draw(name_or("s")), "jobs": [job]}))
        argv = ["suite", "run", str(suite), "--results", str(box.root / "res"), "--dry-run"]
        if data.draw(st.booleans()):
            argv += ["--runtime", data.draw(st.sampled_from(["podman", "host", "", "docker"]))]
    elif kind == "reproduce":
        argv = ["reproduce", _path_arg(box, data.draw(st.sampled_from(KINDS))), "--results", str(box.root / "rr"),
                "--tolerance", data.draw(NUMBER)]
    else:
        argv = ["workloads"] + data.draw(st.sampled_from([[], ["resnet50"], [data.draw(TEXT)]]))
    code, out, err = check(box, argv)
    if kind == "reproduce" and code == 0:
        pytest.fail("reproduce of a planted file succeeded")


# --- every name a command writes, planted first --------------------------------------------------
# A command that writes into a folder it is given is run once into a clean folder to learn the
# names it writes there; then, in a fresh sandbox, each of those names is planted first as a drawn
# kind (a link out, a dangling link, a FIFO, a device, a folder, a file) and the command runs
# again. The invariants are the same (no traceback, nothing through a link, nothing blocks), so a
# new file a command writes is covered without a new row here.
PLANTS = ("link-out", "dangling", "fifo", "devnull", "folder", "link-loop", "file", "empty")
TINY_RUN = ["--runtime", "host", "--batch-size", "2", "--warmup", "0", "--number", "1", "--repeat", "1", "-q"]
TINY_SUITE = ("name: tiny\ndefaults: {runtime: host, batch_size: 2, options: {warmup: 0, number: 1, repeat: 1}}\n"
              "jobs:\n  - workload: resnet18\n")
# in-process: commands that start nothing
WRITERS = {
    "render": lambda out: ["render", "--base", "cpu", "-o", str(out)],
    "slurm": lambda out: ["slurm", "resnet18", "--runtime", "host", "--results", str(out), "--run-id", "r"],
    "fake": lambda out: ["data", "fake", "text", "--to", str(out), "--images", "1"],
    "fake-ratings": lambda out: ["data", "fake", "ratings", "--to", str(out), "--images", "1"],
}
# as a subprocess: they start a host-runtime workload (a few seconds each); names that exist only
# while the command runs are listed beside them
RUNNERS = {
    "run": (lambda out: ["run", "resnet18", *TINY_RUN, "--results", str(out), "--run-id", "r"], ["r/.reserve"]),
    "suite": (lambda out: ["suite", "run", str(out.parent / "s.yaml"), "--results", str(out)], []),
}
_learned: dict[str, list[str]] = {}


def _written(cmd: str, argv_of, transient, tmp: Path, inprocess: bool) -> list[str]:
    """The files and folders `cmd` writes under a clean folder (learned once per session)."""
    if cmd not in _learned:
        out = tmp / "learn" / "out"
        out.parent.mkdir(parents=True)
        (out.parent / "s.yaml").write_text(TINY_SUITE)
        if inprocess:
            code, _, err = cli_inprocess(*argv_of(out))
        else:
            res = dnnbench(*argv_of(out), timeout=300)
            code, err = res.returncode, res.stderr
        assert code == 0, err
        names = [str(p.relative_to(out)) for p in sorted(out.rglob("*"))]
        _learned[cmd] = names + list(transient)
    return _learned[cmd]


def _plant_all(box: Sandbox, out: Path, names: list[str], data) -> dict[str, str]:
    planted = {}
    chosen = data.draw(st.one_of(st.just([]), st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)))
    for name in chosen:    # mostly one name: then the others are written as usual, past it
        kind = data.draw(st.sampled_from(PLANTS), label=name)
        target = out / name
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError:   # a folder above it was planted as something else
            continue
        if target.exists() or target.is_symlink() or target.parent.is_symlink():
            continue
        os.replace(box.plant(kind), target)
        planted[name] = kind
    return planted


@SETTINGS
@given(st.data())
def test_every_name_a_command_writes_planted_first(sandbox_factory, tmp_path_factory, data):
    cmd = data.draw(st.sampled_from(sorted(WRITERS)))
    names = _written(cmd, WRITERS[cmd], [], tmp_path_factory.mktemp("learn"), inprocess=True)
    box = sandbox_factory()
    out = box.root / "out"
    planted = _plant_all(box, out, names, data)
    code, _, _ = check(box, WRITERS[cmd](out))
    if not planted:
        assert code == 0


@settings(SETTINGS, max_examples=max(4, EXAMPLES // 40))
@given(st.data())
def test_every_name_a_run_writes_planted_first(sandbox_factory, tmp_path_factory, data):
    cmd = data.draw(st.sampled_from(sorted(RUNNERS)))
    argv_of, transient = RUNNERS[cmd]
    names = _written(cmd, argv_of, transient, tmp_path_factory.mktemp("learn"), inprocess=False)
    box = sandbox_factory()
    out = box.root / "out"
    (box.root / "s.yaml").write_text(TINY_SUITE)
    planted = _plant_all(box, out, names, data)
    argv = argv_of(out) + (["--resume"] if cmd == "suite" and data.draw(st.booleans()) else [])
    before = box.state()
    res = dnnbench(*argv, cwd=box.root, timeout=300)
    where = f"dnnbench {argv!r} with {planted}\n--- stderr\n{res.stderr[-1500:]}"
    if os.environ.get("DNNBENCH_GEN_TRACE"):
        print("CASE", res.returncode, cmd, planted, res.stderr.strip().splitlines()[-1:])
    assert res.returncode in DOCUMENTED, where
    assert "Traceback" not in res.stdout + res.stderr, where
    if res.returncode == 2:
        assert len([ln for ln in res.stderr.splitlines() if ln.startswith("error:")]) == 1, where
    assert box.state() == before, f"the canary changed: {where}"
    assert not (box.canary / "made-through-a-link").exists(), where
    assert not _leftover_processes(str(box.root)), where
    if not planted:
        assert res.returncode == 0, where

