"""Checkpoints and resumes as hostile input (a results folder is often shared): real checkpoints
of a small digits run, mutated (keys dropped, types changed, tensors reshaped, truncated, bytes
flipped, another optimizer's state, pickle payloads that would create a canary folder), then
resumed. Every outcome is a correct resume from the older good checkpoint, or exit 2 with one
`error:` line and the partial result as it was; no payload ever runs. Resumes with a changed
option are refused in one line naming it and both values, or accepted for the declared list."""
import contextlib
import hashlib
import io
import json
import os
import pickle
import shutil
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dnnbench.workloads import checkpoint, train
from dnnbench.datasets.digits import write_digits

pytest.importorskip("sklearn")   # a test dependency (pyproject's test extra); never skipped in CI

SMALL = ["--image-size", "16", "--batch-size", "32", "--workers", "0"]
EXAMPLES = int(os.environ.get("DNNBENCH_HYPOTHESIS_EXAMPLES", "0")) or None
NEWEST, OLDER = "checkpoint-0002-0000000.pt", "checkpoint-0001-0000000.pt"


@pytest.fixture(scope="module")
def small_digits(tmp_path_factory):
    """16 training and 4 validation images per digit: 5 steps an epoch at batch 32."""
    full = write_digits(tmp_path_factory.mktemp("digits"))
    dest = tmp_path_factory.mktemp("small-digits")
    for split, n in (("train", 16), ("val", 4)):
        for cls in sorted((full / split).iterdir()):
            (dest / split / cls.name).mkdir(parents=True)
            for f in sorted(cls.iterdir())[:n]:
                shutil.copy(f, dest / split / cls.name / f.name)
    return dest


@pytest.fixture(scope="module")
def trained(tmp_path_factory, small_digits):
    """A real run of two epochs: checkpoints after epoch 1 and epoch 2, and its record."""
    out = tmp_path_factory.mktemp("trained")
    res = subprocess.run([sys.executable, "-m", "dnnbench.workloads.train", "resnet18", "--data", str(small_digits),
                          "--results", str(out), *SMALL, "--epochs", "2"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert checkpoint.read_record(str(out))["checkpoints"] == [OLDER, NEWEST]
    return out


def _copy(src: Path, dest: Path) -> Path:
    """The run folder, its files linked (a mutation replaces a file, never writes into it)."""
    dest.mkdir(parents=True)
    for f in src.iterdir():
        os.link(f, dest / f.name)
    return dest


def _resume(folder, data, *args, workload="resnet18"):
    """`python -m dnnbench.workloads.train ... --resume` in this process: (exit code, stderr)."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)}
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            code = train.main([workload, "--data", str(data), "--results", str(folder), *SMALL, "--resume", *args])
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    return code, err.getvalue()


def _one_error(code, err, *fragments):
    assert code == 2, err[-3000:]
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err[-3000:]
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


# ---- mutations of a real checkpoint ---------------------------------------------------------

class Payload:
    """Unpickling this creates the canary folder."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def _state(path: Path) -> dict:
    return checkpoint.read(path.read_bytes())


def _forge(path: Path, state) -> None:
    """A checkpoint someone wrote on purpose: well formed, checksum right, contents wrong."""
    buf = io.BytesIO()
    checkpoint.write(buf, state)
    path.unlink()
    path.write_bytes(buf.getvalue())


def _forge_header(path: Path, change) -> None:
    """The header's JSON changed by `change(header)`, the checksum made right again."""
    data = path.read_bytes()
    start = len(checkpoint.MAGIC) + 8
    hlen = struct.unpack_from("<Q", data, len(checkpoint.MAGIC))[0]
    new = change(json.loads(data[start:start + hlen]))
    new = new if isinstance(new, bytes) else json.dumps(new).encode()
    body = new + data[start + hlen:-32]
    path.unlink()
    path.write_bytes(checkpoint.MAGIC + struct.pack("<Q", len(new)) + body + hashlib.sha256(body).digest())


def _set(key, value):
    def change(s):
        s[key] = value
        return s
    return change


def _in(outer, key, value):
    def change(s):
        if value is KeyError:
            del s[outer][key]
        else:
            s[outer][key] = value
        return s
    return change


def _first_model_key(change):
    def do(s):
        k = next(iter(s["model"]))
        s["model"][k] = change(s["model"][k])
        return s
    return do


def _adam_state(s):
    """Another optimizer's state: Adam's moments where SGD keeps a momentum buffer."""
    import torch
    for entry in s["optimizer"]["state"]["state"].values():
        buf = entry.pop("momentum_buffer")
        entry.update(step=torch.tensor(5.0), exp_avg=buf, exp_avg_sq=buf * buf)
    for g in s["optimizer"]["state"]["param_groups"]:
        g["betas"] = (0.9, 0.999)
    return s


def _reshaped_momentum(s):
    entry = next(iter(s["optimizer"]["state"]["state"].values()))
    entry["momentum_buffer"] = entry["momentum_buffer"].flatten()[:7].clone()
    return s


def _nested(depth):
    def change(h):
        h["state"]["loss"] = "NEST"
        return json.dumps(h).replace('"NEST"', "[" * depth + "]" * depth).encode()
    return change


def _torch(name, *args):
    import torch
    return getattr(torch, name)(*args)


STATE_MUTATIONS = {   # each leaves a checkpoint that must not be used for this run
    "empty model state": _set("model", {}),
    "model key dropped": lambda s: (s["model"].pop(sorted(s["model"])[3]), s)[1],
    "model tensor reshaped": _first_model_key(lambda t: t.flatten()[:-1].clone()),
    "model tensor as text": _first_model_key(lambda t: "weights"),
    "model tensor in float64": _first_model_key(lambda t: t.double()),
    "no training record": lambda s: (s.pop("training"), s)[1],
    "training record as text": _set("training", "x"),
    "epoch records missing": _in("training", "epochs", []),
    "clock NaN": _in("training", "on_clock_s", float("nan")),
    "another metric": _in("training", "metric", "hr10"),
    "text epoch": _set("epoch", "2"),
    "negative epoch": _set("epoch", -1),
    "float epoch": _set("epoch", 2.0),
    "bool epoch": _set("epoch", True),
    "huge step": _set("step", 10**9),
    "negative step": _set("step", -3),
    "garbage torch RNG": _in("rng", "torch", "garbage"),
    "torch RNG of another size": lambda s: _in("rng", "torch", _torch("zeros", 7, ).byte())(s),
    "garbage Python RNG": _in("rng", "python", (3, (1, 2, 3), None)),
    "another optimizer's state": _adam_state,
    "another optimizer's kind": _in("optimizer", "kind", "Adam"),
    "no optimizer groups": lambda s: (s["optimizer"]["state"].update(param_groups=[]), s)[1],
    "momentum of another shape": _reshaped_momentum,
    "a loss scaler's state": _set("scaler", {"scale": 65536.0}),
    "another workload": _set("workload", "resnet50"),
    "other classes": lambda s: (s["identity"].update(classes="0" * 64), s)[1],
    "another learning rate": lambda s: (s["options"].update(lr=0.5), s)[1],
    "windows as text": _set("windows", "w"),
    "a window without seconds": _set("windows", [{"items": 32}]),
    "an epoch's loss as text": lambda s: (s["training"]["epochs"][0].update(train_loss="low"), s)[1],
    "an evaluation with text": lambda s: (s["training"]["epochs"][-1]["eval"].update(top5="high"), s)[1],
    "a segment holding a list": lambda s: (s["training"]["segments"][0].update(host=["a"]), s)[1],
    "loss with text": _set("loss", ["a"]),
    "no RNG": lambda s: (s.pop("rng"), s)[1],
}
HEADER_MUTATIONS = {   # the JSON itself hostile, checksum right
    "unknown tag": lambda h: dict(h, state={"$evil": 1}),
    "tensor index out of range": lambda h: (h["state"].update(epoch={"$tensor": 10**6}), h)[1],
    "tensor bytes past the end": lambda h: (h["tensors"][0].update(nbytes=2**40, shape=[2**38]), h)[1],
    "negative shape": lambda h: (h["tensors"][0].update(shape=[-4]), h)[1],
    "unknown dtype": lambda h: (h["tensors"][0].update(dtype="object"), h)[1],
    "nested 100000 deep": _nested(100000),
    "not JSON": lambda h: b"\xff\xfe{",
    "another format": lambda h: dict(h, format=2),
}


def _canary_payloads(path: Path, canary: Path):
    """Pickles that create `canary` when unpickled: one in the recorded checkpoint's place, one
    torch.save'd under a name that sorts last and one under the run's next name, unrecorded."""
    import torch
    path.write_bytes(pickle.dumps({"model": Payload(str(canary)), "epoch": 2}))
    torch.save({"model": Payload(str(canary))}, str(path.parent / "checkpoint-9999-9999999.pt"))
    shutil.copy(path.parent / "checkpoint-9999-9999999.pt", path.parent / "checkpoint-0003-0000000.pt")


BYTE_MUTATIONS = {
    "empty": lambda p, c: p.write_bytes(b""),
    "a pickle payload": _canary_payloads,
    "a folder": lambda p, c: (p.unlink(), p.mkdir()),
    "a link to the older one": lambda p, c: (p.unlink(), p.symlink_to(p.parent / OLDER)),
}


def _mutate(folder: Path, name: str, kind: str, canary: Path) -> None:
    path = folder / name
    if kind in STATE_MUTATIONS:
        _forge(path, STATE_MUTATIONS[kind](_state(path)))
    elif kind in HEADER_MUTATIONS:
        _forge_header(path, HEADER_MUTATIONS[kind])
    else:
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data)
        BYTE_MUTATIONS[kind](path, canary)


def _check_fallback(folder, code, err, canary):
    """A correct resume from the older, good checkpoint, the newest named as passed over."""
    assert not canary.exists(), "a payload ran"
    assert code == 0, err[-3000:]
    assert "Traceback" not in err and f"checkpoint {NEWEST} is damaged" in err, err[-3000:]
    data = json.loads((folder / "result.json").read_text())
    assert data["status"] == "ok" and data["training"]["resumed_from"] == "epoch 1 step 0"
    assert [e["epoch"] for e in data["training"]["epochs"]] == [1]
    assert data["options"]["target_accuracy"] == data["training"]["target"]


def _check_refused(folder, code, err, canary, before: bytes):
    """Exit 2, one error line, the partial result byte for byte as it was."""
    assert not canary.exists(), "a payload ran"
    _one_error(code, err)
    assert (folder / "result.json").read_bytes() == before


ALL_KINDS = sorted(STATE_MUTATIONS) + sorted(HEADER_MUTATIONS) + sorted(BYTE_MUTATIONS)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_a_mutated_newest_checkpoint_is_passed_over_for_the_older(tmp_path, trained, small_digits, kind):
    folder = _copy(trained, tmp_path / "run")
    canary = tmp_path / "canary"
    _mutate(folder, NEWEST, kind, canary)
    code, err = _resume(folder, small_digits, "--epochs", "1")   # the older one needs no more training
    _check_fallback(folder, code, err, canary)
    # what the run did not write it neither read nor removed
    if kind == "a pickle payload":
        assert (folder / "checkpoint-9999-9999999.pt").exists() and "9999" not in err


@pytest.mark.parametrize("kind", ["a pickle payload", "empty model state", "another optimizer's state",
                                  "tensor bytes past the end", "empty"])
def test_no_good_checkpoint_is_one_line_and_the_partial_result_stays(tmp_path, trained, small_digits, kind):
    folder = _copy(trained, tmp_path / "run")
    canary = tmp_path / "canary"
    before = (folder / "result.json").read_bytes()
    _mutate(folder, OLDER, "empty", canary)
    _mutate(folder, NEWEST, kind, canary)
    code, err = _resume(folder, small_digits, "--epochs", "3")
    _check_refused(folder, code, err, canary, before)


@settings(max_examples=EXAMPLES or 12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(where=st.sampled_from(["truncate", "flip"]), at=st.floats(0, 1, exclude_max=True),
       bit=st.integers(0, 7), both=st.booleans())
def test_truncated_or_flipped_checkpoints(tmp_path_factory, trained, small_digits, where, at, bit, both):
    """Any byte changed or cut anywhere (header, checksum, tensors) is found: the run falls back,
    or with both damaged refuses in one line and keeps its partial result."""
    tmp = tmp_path_factory.mktemp("bytes")
    folder = _copy(trained, tmp / "run")
    before = (folder / "result.json").read_bytes()
    for name in [NEWEST, OLDER] if both else [NEWEST]:
        data = bytearray((folder / name).read_bytes())
        k = int(at * len(data))
        if where == "truncate":
            data = data[:k]
        else:
            data[k] ^= 1 << bit
        (folder / name).unlink()
        (folder / name).write_bytes(bytes(data))
    code, err = _resume(folder, small_digits, "--epochs", "1")
    if both:
        _check_refused(folder, code, err, tmp / "canary", before)
    else:
        _check_fallback(folder, code, err, tmp / "canary")


@settings(max_examples=EXAMPLES or 8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kinds=st.lists(st.sampled_from(ALL_KINDS), min_size=2, max_size=2))
def test_two_mutations_at_once(tmp_path_factory, trained, small_digits, kinds):
    """The newest and the older checkpoint each damaged in its own way: one line, exit 2."""
    tmp = tmp_path_factory.mktemp("two")
    folder = _copy(trained, tmp / "run")
    before = (folder / "result.json").read_bytes()
    _mutate(folder, OLDER, kinds[0], tmp / "canary")
    _mutate(folder, NEWEST, kinds[1], tmp / "canary")
    code, err = _resume(folder, small_digits, "--epochs", "3")
    _check_refused(folder, code, err, tmp / "canary", before)


# ---- the same run: options on resume --------------------------------------------------------

REFUSED = {   # option: a strategy of values other than the run's
    "--lr": st.floats(0.001, 5.0).filter(lambda v: v != 0.0125).map(lambda v: "%r" % v),
    "--batch-size": st.integers(1, 64).filter(lambda v: v != 32).map(str),
    "--seed": st.integers(1, 2**32 - 1).map(str),
    "--image-size": st.integers(8, 64).filter(lambda v: v != 16).map(str),
    "--amp": st.sampled_from(["fp16", "bf16"]),
    "--lr-step": st.integers(1, 10**6).filter(lambda v: v != 30).map(str),
    "--device": st.just("cuda"),
}


@settings(max_examples=EXAMPLES or 60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.dictionaries(st.sampled_from(sorted(REFUSED)), st.none(), min_size=1, max_size=3),
       data=st.data())
def test_a_resume_that_changes_the_trajectory_is_refused_naming_each_option(trained, small_digits, changes, data):
    """--lr, --batch-size, --seed, --image-size, --amp, --lr-step, --device: one line naming each
    option with both values; nothing written."""
    before = {f.name: f.stat().st_mtime_ns for f in trained.iterdir()}
    args = []
    for flag in changes:
        args += [flag, data.draw(REFUSED[flag], label=flag)]
    code, err = _resume(trained, small_digits, "--epochs", "2", *args)
    line = _one_error(code, err)
    run_value = {"--lr": "0.0125", "--batch-size": "32", "--seed": "0", "--image-size": "16", "--amp": "none",
                 "--lr-step": "30", "--device": "cpu"}
    for flag, value in zip(args[::2], args[1::2]):
        shown = "%g" % float(value) if flag == "--lr" else value
        assert f"{flag} {shown} here, {run_value[flag]} in the run" in line, line
    assert {f.name: f.stat().st_mtime_ns for f in trained.iterdir()} == before


def test_the_flag_options_are_refused_too(tmp_path, trained, small_digits):
    code, err = _resume(_copy(trained, tmp_path / "run"), small_digits, "--epochs", "2", "--channels-last")
    _one_error(code, err, "--channels-last True here, False in the run")


@pytest.mark.parametrize("args, option, value", [
    (["--target-accuracy", "50"], "target_accuracy", 50.0), (["--max-time", "5"], "max_time", 5.0),
    (["--eval-every", "2"], "eval_every", 2), (["--checkpoint-every", "1"], "checkpoint_every", 1.0),
    (["--workers", "1"], "workers", 1), (["--epochs", "2"], "epochs", 2),
])
def test_what_a_resume_may_change_is_taken(tmp_path, trained, small_digits, args, option, value):
    folder = _copy(trained, tmp_path / "run")
    code, err = _resume(folder, small_digits, "--epochs", "2", *args)
    assert code == 0, err[-3000:]
    data = json.loads((folder / "result.json").read_text())
    assert data["options"][option] == value and data["training"]["resumed_from"] == "epoch 2 step 0"
    # the rest is the run's own, though not given again
    assert data["options"]["lr"] == 0.0125 and data["options"]["batch_size"] == 32
    assert data["options"]["target_accuracy"] == data["training"]["target"]
    assert checkpoint.read_record(str(folder))["options"][option] == value


def test_the_runs_own_options_are_taken_when_not_given(tmp_path, trained, small_digits):
    """A resume that does not repeat --image-size 16 and --batch-size 32 trains on with them."""
    folder = _copy(trained, tmp_path / "run")
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)}
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            code = train.main(["resnet18", "--data", str(small_digits), "--results", str(folder), "--workers", "0",
                               "--resume", "--epochs", "2"])
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    assert code == 0, err.getvalue()[-3000:]
    data = json.loads((folder / "result.json").read_text())
    assert data["options"]["image_size"] == 16 and data["options"]["batch_size"] == 32
    assert data["training"]["image_size"] == 16


# ---- another run's folder -------------------------------------------------------------------

def test_another_workload_is_a_clear_refusal(tmp_path, trained, small_digits):
    folder = _copy(trained, tmp_path / "run")
    before = (folder / "result.json").read_bytes()
    code, err = _resume(folder, small_digits, "--epochs", "3", workload="resnet50")
    _one_error(code, err, "resnet18", "not resnet50")
    assert (folder / "result.json").read_bytes() == before


@pytest.mark.parametrize("change", ["fewer classes", "renamed classes"])
def test_a_dataset_with_other_classes_is_a_clear_refusal(tmp_path, trained, small_digits, change):
    data = tmp_path / "data"
    shutil.copytree(small_digits, data)
    for split in ("train", "val"):
        for cls in sorted((data / split).iterdir())[:3]:
            if change == "fewer classes":
                shutil.rmtree(cls)
            else:
                cls.rename(cls.with_name("x" + cls.name))
    folder = _copy(trained, tmp_path / "run")
    before = (folder / "result.json").read_bytes()
    code, err = _resume(folder, data, "--epochs", "3")
    _one_error(code, err, "not the run's data", "classes")
    assert (folder / "result.json").read_bytes() == before


# ---- own only what it wrote ------------------------------------------------------------------

def test_pruning_and_cleaning_touch_only_what_the_run_wrote(tmp_path, trained, small_digits):
    """A user's checkpoint-like file and folder stay, the run does not fail on them; the
    temporary a killed checkpoint write left is removed at the next start."""
    folder = _copy(trained, tmp_path / "run")
    (folder / "checkpoint-0000-mine.pt").write_bytes(b"my own")
    (folder / "checkpoint-0000-0000001.pt").mkdir()
    (folder / (checkpoint.TMP_PREFIX + "k1ll3d")).write_bytes(b"\0" * 4096)   # what mkstemp left
    (folder / ".tmp-not-a-checkpoint").write_bytes(b"x")
    code, err = _resume(folder, small_digits, "--epochs", "3")
    assert code == 0, err[-3000:]
    names = sorted(p.name for p in folder.iterdir())
    assert "checkpoint-0000-mine.pt" in names and (folder / "checkpoint-0000-0000001.pt").is_dir()
    assert not any(n.startswith(checkpoint.TMP_PREFIX) for n in names) and ".tmp-not-a-checkpoint" in names
    # the run's own are pruned to the last two
    assert OLDER not in names and checkpoint.read_record(str(folder))["checkpoints"] == [
        NEWEST, "checkpoint-0003-0000000.pt"]
    data = json.loads((folder / "result.json").read_text())
    assert [e["epoch"] for e in data["training"]["epochs"]] == [1, 2, 3] and len(data["training"]["segments"]) == 2


RECORD_FORGERIES = {   # the run's record itself hostile: one line, nothing written, nothing removed
    "not JSON": lambda r: b"{",
    "a list": lambda r: b"[]",
    "a name out of the folder": lambda r: dict(r, checkpoints=["../../result.json"]),
    "a name that is not a checkpoint's": lambda r: dict(r, checkpoints=["result.json"]),
    "text batch size": lambda r: dict(r, options=dict(r["options"], batch_size="32; rm -rf /")),
    "negative batch size": lambda r: dict(r, options=dict(r["options"], batch_size=-32)),
    "an option value that is a flag": lambda r: dict(r, options=dict(r["options"], amp="--resume")),
    "text epochs": lambda r: dict(r, options=dict(r["options"], epochs="many")),
    "another workload": lambda r: dict(r, workload="resnet50"),
    "a workload that drives the terminal": lambda r: dict(r, workload="x\x1b]0;owned\x07\u202e\x9b"),
    "other classes": lambda r: dict(r, identity=dict(r["identity"], num_classes=1000)),
    "no checkpoints": lambda r: dict(r, checkpoints=[]),
}


@pytest.mark.parametrize("kind", sorted(RECORD_FORGERIES))
def test_a_forged_record_is_one_line_and_changes_nothing(tmp_path, trained, small_digits, kind):
    folder = _copy(trained, tmp_path / "run")
    record = json.loads((folder / checkpoint.RECORD).read_text())
    forged = RECORD_FORGERIES[kind](record)
    (folder / checkpoint.RECORD).unlink()
    (folder / checkpoint.RECORD).write_bytes(forged if isinstance(forged, bytes) else json.dumps(forged).encode())
    before = {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()}
    code, err = _resume(folder, small_digits, "--epochs", "3")
    _one_error(code, err, "--resume")
    assert not any(c in err for c in "\x1b\x07\u202e\x9b"), err
    assert {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()} == before


def test_a_folder_without_a_record_is_not_resumed(tmp_path, trained, small_digits):
    """Checkpoint-named files with no record (another tool's, or written before records): refused."""
    folder = _copy(trained, tmp_path / "run")
    (folder / checkpoint.RECORD).unlink()
    code, err = _resume(folder, small_digits, "--epochs", "3")
    _one_error(code, err, "no checkpoint", checkpoint.RECORD)


# ---- the format itself -------------------------------------------------------------------

@settings(max_examples=EXAMPLES or 200, deadline=None, derandomize=True)
@given(value=st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4), max_leaves=20))
def test_the_format_keeps_what_training_state_holds(value):
    """Tuples, int keys, '$' keys, NaN and Inf come back as they went in."""
    import math
    buf = io.BytesIO()
    checkpoint.write(buf, {"v": value})
    back = checkpoint.read(buf.getvalue())["v"]

    def same(a, b):
        if isinstance(a, float) and math.isnan(a):
            return isinstance(b, float) and math.isnan(b)
        if isinstance(a, (list, tuple)):
            return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict):
            return type(b) is dict and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
        return type(a) is type(b) and a == b
    assert same(value, back)


def test_tensors_of_every_kind_come_back_bit_for_bit():
    import torch
    state = {"f16": torch.randn(3, 5).half(), "bf16": torch.randn(4).bfloat16(), "i64": torch.arange(7),
             "bool": torch.tensor([True, False]), "empty": torch.zeros(0, 3), "scalar": torch.tensor(2.5),
             "view": torch.arange(20.0).view(4, 5)[1:, ::2], "u8": torch.get_rng_state()}
    buf = io.BytesIO()
    checkpoint.write(buf, state)
    back = checkpoint.read(buf.getvalue())
    for k, t in state.items():
        assert back[k].dtype == t.dtype and back[k].shape == t.shape and torch.equal(back[k], t), k


# ---- a suite's train: job ----------------------------------------------------------------------

def test_a_suite_resumes_an_interrupted_train_job_from_its_checkpoints(tmp_path, small_digits):
    """SIGTERM to `suite run` mid-training (exit 130, checkpoints kept); `suite run --resume`
    goes on from them instead of removing the folder and training from scratch."""
    import time

    def suite(epochs):
        path = tmp_path / "s.yaml"
        path.write_text(f"name: t\njobs:\n  - workload: resnet18\n    data: {small_digits}\n    runtime: host\n"
                        f"    batch_size: 32\n    options: {{workers: 0}}\n"
                        f"    train: {{epochs: {epochs}, image_size: 16}}\n")
        return path
    run_dir = tmp_path / "r" / "t" / "resnet18-bs32" / "r1"
    p = subprocess.Popen([sys.executable, "-m", "dnnbench", "suite", "run", str(suite(50)), "--results",
                          str(tmp_path / "r")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 600
    while time.time() < deadline and p.poll() is None:
        try:
            if checkpoint.read_record(str(run_dir))["checkpoints"]:
                break
        except (TypeError, checkpoint.Damaged):
            pass
        time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 130, out[-3000:]
    cut = json.loads((run_dir / "result.json").read_text())
    assert cut["status"] == "interrupted" and cut["training"]["epochs"]
    # the suite file now asks for fewer epochs (an option a resume may change): no long training
    res = subprocess.run([sys.executable, "-m", "dnnbench", "suite", "run", str(suite(2)), "--results",
                          str(tmp_path / "r"), "--resume"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    data = json.loads((run_dir / "result.json").read_text())
    assert data["status"] == "ok" and data["training"]["resumed_from"] is not None
    assert len(data["training"]["segments"]) == 2
    epochs = [e["epoch"] for e in data["training"]["epochs"]]
    assert epochs == list(range(1, len(epochs) + 1)) and len(epochs) >= len(cut["training"]["epochs"])


# ---- the check itself, on a small model (an Adam run with a loss scaler: ncf's and fp16's) -------

def _small_run():
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu")
    model(torch.randn(5, 4)).sum().backward()
    opt.step()
    identity = {"workload": "w", "world_size": 1, "facts": {}, "num_classes": None, "classes": None}
    run = checkpoint.Run("w", identity, {"lr": 0.01}, model, opt, scaler, "hr10", 7)
    state = {"workload": "w", "identity": identity, "options": {"lr": 0.01, "epochs": 3},
             "model": model.state_dict(), "optimizer": {"kind": "Adam", "state": opt.state_dict()},
             "scaler": scaler.state_dict(), "epoch": 1, "step": 7,
             "training": {"epochs": [{"epoch": 1, "on_clock_s": 1.0, "eval": {"hr10": 12.0}}], "segments": [],
                          "metric": "hr10", "on_clock_s": 1.5, "reached": False, "best": 12.0},
             "windows": [{"items": 10, "seconds": 1.0, "data_wait": 0.1}], "loss": [0.7],
             "rng": {"torch": torch.get_rng_state(), "python": __import__("random").getstate()}}
    buf = io.BytesIO()
    checkpoint.write(buf, state)
    return run, buf.getvalue()


@pytest.mark.parametrize("change, fragment", [
    (None, None),
    (lambda s: s.update(scaler={"scale": "big"}), "loss scaler"),
    (lambda s: s.update(scaler=None), "loss scaler"),
    (lambda s: s["optimizer"].update(kind="SGD"), "optimizer is SGD"),
    (lambda s: next(iter(s["optimizer"]["state"]["state"].values())).update(momentum_buffer=s["loss"]),
     "does not keep"),
    (lambda s: next(iter(s["optimizer"]["state"]["state"].values())).update(exp_avg="x"), "exp_avg"),
    (lambda s: s["optimizer"]["state"]["param_groups"][0].update(betas=("a", 1)), "betas"),
    (lambda s: s["optimizer"]["state"]["state"].update({99: {}}), "a parameter this model has not"),
    (lambda s: s.update(step=8), "step 8"),
    (lambda s: s["options"].update(lr=0.02), "options"),
    (lambda s: s["training"].update(reached_at_epoch=5), "reached_at_epoch"),
    (lambda s: s["model"].update(extra=s["loss"]), "has extra"),
])
def test_the_check_on_an_adam_run_with_a_loss_scaler(change, fragment):
    run, data = _small_run()
    state = checkpoint.read(data)
    if change is not None:
        change(state)
    why = checkpoint.problem(state, run)
    assert why is None if fragment is None else fragment in why, why
    if fragment is None:   # and it takes up cleanly
        run.model.load_state_dict(state["model"])
        run.optimizer.load_state_dict(state["optimizer"]["state"])
        run.scaler.load_state_dict(state["scaler"])
