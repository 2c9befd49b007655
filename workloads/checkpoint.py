"""Training checkpoints that cannot run code, checked against the run before they are used.

A checkpoint is data only: a JSON header (numbers, text, lists, dicts; tuples, non-text keys
and non-finite floats tagged) and the raw bytes of its tensors, with a SHA-256 over both:

    MAGIC, header length (8 bytes, little-endian), header, tensor bytes, SHA-256 (32 bytes)

(written in one pass straight from the tensors' memory, no copy of the state).

No pickle is involved, so no file in a run folder, however made, can execute code when read
(`torch.load`, even with weights_only=True, had bypasses until PyTorch 2.10), and it reads the
same on every PyTorch the container side supports. A file in the old pickle format is refused.

The run folder's `checkpoints.json` records the run: its workload, its options, the identity
of its data (classes, facts), and the checkpoints it wrote, in order. Only recorded names are
read, pruned or replaced: a user's `checkpoint-0000-mine.pt` is never touched. Temporaries of a
write cut short (`.tmp-checkpoint-*`) are removed at the next start.

`problem(state, run)` says why a decoded checkpoint does not belong to this run (another
workload, model or optimizer shapes, classes, epochs out of range, a malformed training
record or RNG state); the training then falls back to the one before it.

Python 3.7+, stdlib + torch.
"""
import ctypes
import hashlib
import json
import math
import os
import random
import re
import struct
import sys
import threading

from . import fileio

MAGIC = b"DNNBENCH-CHECKPOINT-1\n"
FORMAT = 1
RECORD = "checkpoints.json"
NAME = "checkpoint-%04d-%07d.pt"
NAME_RE = re.compile(r"^checkpoint-[0-9]{4,7}-[0-9]{7,10}\.pt$")
TMP_PREFIX = ".tmp-checkpoint-"
KEEP = 2
MAX_BYTES = 64 * 2**30
MAX_HEADER = 512 * 2**20
MAX_DEPTH = 64
DTYPES = ("float16", "bfloat16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool")
# options a resume may change: when and how long to train, what to evaluate and where the files
# are; everything else defines the trajectory and must stay as the run was started
MAY_CHANGE = ("epochs", "target_accuracy", "max_time", "eval_every", "checkpoint_every", "workers", "data",
              "results", "run_id",
              # what is measured or logged beside the trajectory, never the trajectory itself
              "eval_data", "mlperf", "submission_org", "submission_platform", "submission_status")
# what each optimizer keeps per parameter (a state naming anything else is another optimizer's)
OPTIMIZER_STATE = {"SGD": ("momentum_buffer",), "Adam": ("step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")}


class Damaged(ValueError):
    """A checkpoint that cannot be used for this run; str() says why."""


# ---- the format ---------------------------------------------------------------------------

def _encode(value, tensors):
    import torch
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return {"$tensor": len(tensors) - 1}
    if isinstance(value, tuple):
        return {"$tuple": [_encode(v, tensors) for v in value]}
    if isinstance(value, list):
        return [_encode(v, tensors) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return dict((k, _encode(v, tensors)) for k, v in value.items())
        return {"$dict": [[_encode(k, tensors), _encode(v, tensors)] for k, v in value.items()]}
    raise TypeError("a checkpoint holds tensors, numbers, text, lists and dicts, not %s" % type(value).__name__)


def _dense(t):
    """A CPU tensor whose memory holds exactly its values, in order."""
    import torch
    if t.layout != torch.strided:
        raise TypeError("a checkpoint holds dense tensors only, not %s" % t.layout)
    t = t.detach().to("cpu")
    for resolve in ("resolve_conj", "resolve_neg"):
        if hasattr(t, resolve):
            t = getattr(t, resolve)()
    return t.contiguous()


def write(fh, state):
    """`state` into the binary file object `fh`."""
    tensors = []
    tree = _encode(state, tensors)
    specs, dense, offset = [], [], 0
    for t in tensors:
        t = _dense(t)
        name = str(t.dtype).replace("torch.", "")
        if name not in DTYPES:
            raise TypeError("a checkpoint holds no %s tensors" % name)
        n = t.numel() * t.element_size()
        specs.append({"dtype": name, "shape": list(t.shape), "offset": offset, "nbytes": n})
        dense.append((t, n))
        offset += n
    header = json.dumps({"format": FORMAT, "state": tree, "tensors": specs}, allow_nan=False).encode("utf-8")
    digest = hashlib.sha256(header)
    fh.write(MAGIC + struct.pack("<Q", len(header)))
    fh.write(header)
    for t, n in dense:
        if n:
            view = (ctypes.c_char * n).from_address(t.data_ptr())   # the tensor's memory, not a copy
            digest.update(view)
            fh.write(view)
    fh.write(digest.digest())


def read(data):
    """The state in a checkpoint's bytes; Damaged when they are anything else."""
    if not data.startswith(MAGIC):
        pickle_like = data[:1] == b"\x80" or data[:2] == b"PK"
        raise Damaged("not a dnnbench checkpoint" + (" (a pickle or torch.save file: never read, it could run code)"
                                                      if pickle_like else ""))
    start, end = len(MAGIC) + 8, len(data) - 32
    if end < start:
        raise Damaged("truncated")
    hlen = struct.unpack_from("<Q", data, len(MAGIC))[0]
    if hlen > MAX_HEADER or start + hlen > end:
        raise Damaged("truncated" if hlen <= MAX_HEADER else "a header of %d bytes" % hlen)
    if hashlib.sha256(memoryview(data)[start:end]).digest() != data[end:]:
        raise Damaged("its checksum does not match: truncated or changed")
    try:
        header = json.loads(data[start:start + hlen].decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise Damaged("an unreadable header (%s)" % str(exc)[:100])
    if not isinstance(header, dict) or header.get("format") != FORMAT or not isinstance(header.get("tensors"), list):
        raise Damaged("not a checkpoint of format %d" % FORMAT)
    tensors = [_tensor(spec, data, start + hlen, end) for spec in header["tensors"]]
    return _decode(header.get("state"), tensors, 0)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _tensor(spec, data, base, end):
    import torch
    if not isinstance(spec, dict) or spec.get("dtype") not in DTYPES or not hasattr(torch, spec["dtype"]):
        raise Damaged("a tensor of an unknown type")
    shape, offset, nbytes = spec.get("shape"), spec.get("offset"), spec.get("nbytes")
    if not isinstance(shape, list) or len(shape) > 16 or not all(_is_int(d) and 0 <= d < 2**40 for d in shape):
        raise Damaged("a tensor of a malformed shape")
    dtype = getattr(torch, spec["dtype"])
    numel = 1
    for d in shape:
        numel *= d
    size = torch.empty(0, dtype=dtype).element_size()
    if not (_is_int(offset) and _is_int(nbytes)) or offset < 0 or nbytes != numel * size \
            or base + offset + nbytes > end:
        raise Damaged("a tensor's bytes do not fit the file")
    lo = base + offset
    if dtype == torch.bool and data[lo:lo + nbytes].translate(None, b"\x00\x01"):
        raise Damaged("a bool tensor holds other values")
    t = torch.empty(shape, dtype=dtype)
    if nbytes:   # from the bytes object's own buffer (bounds checked above), into the new tensor's
        ctypes.memmove(t.data_ptr(), ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value + lo, nbytes)
    return t


def _decode(node, tensors, depth):
    if depth > MAX_DEPTH:
        raise Damaged("nested deeper than %d" % MAX_DEPTH)
    if isinstance(node, list):
        return [_decode(v, tensors, depth + 1) for v in node]
    if not isinstance(node, dict):
        return node
    if len(node) == 1:
        (tag, v), = node.items()
        if tag == "$tensor":
            if not _is_int(v) or not 0 <= v < len(tensors):
                raise Damaged("a reference to a tensor it does not hold")
            return tensors[v]
        if tag == "$tuple" and isinstance(v, list):
            return tuple(_decode(x, tensors, depth + 1) for x in v)
        if tag == "$float" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "$dict" and isinstance(v, list):
            out = {}
            for pair in v:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise Damaged("a malformed mapping")
                key = _decode(pair[0], tensors, depth + 1)
                if not (key is None or isinstance(key, (str, int, float))):
                    raise Damaged("a mapping with a key of type %s" % type(key).__name__)
                out[key] = _decode(pair[1], tensors, depth + 1)
            return out
    if any(k.startswith("$") for k in node):
        raise Damaged("an unknown tag")
    return dict((k, _decode(v, tensors, depth + 1)) for k, v in node.items())


# ---- the run's record and its files -------------------------------------------------------

def read_record(folder):
    """The run folder's record, checked; None when there is none; Damaged when it is not one."""
    path = os.path.join(folder, RECORD)
    if not os.path.lexists(path):
        return None
    try:
        record = fileio.read_json(path, max_bytes=4 * 2**20)
    except (OSError, ValueError, RecursionError) as exc:
        raise Damaged("%s is unreadable (%s)" % (RECORD, getattr(exc, "strerror", None) or str(exc)[:200]))
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise Damaged("%s is not a checkpoint record of format %d" % (RECORD, FORMAT))
    names = record.get("checkpoints")
    if not isinstance(record.get("workload"), str) or not isinstance(record.get("options"), dict) \
            or not isinstance(record.get("identity"), dict) or not isinstance(names, list) \
            or not all(isinstance(n, str) and NAME_RE.match(n) for n in names):
        raise Damaged("%s is malformed" % RECORD)
    return record


def newest(folder):
    """The newest checkpoint the folder's record lists ("" when it records none): what decides
    whether a requeued job starts with --resume, which then reads the same record. A damaged
    record answers its own name, so the resume refuses it in one line rather than a fresh start
    writing a new record over the run's."""
    try:
        record = read_record(folder)
    except Damaged:
        return RECORD
    names = record["checkpoints"] if record else []
    return names[-1] if names else ""


class Checkpoints(object):
    """The run's checkpoints in its folder: atomic, the last KEEP of those it recorded kept. The
    training waits only for a copy of the state (CPU tensors); serializing, writing and fsync run
    in a thread while it goes on, one write at a time (`wait` before the next, and before exit)."""

    def __init__(self, folder, log):
        self.folder, self.log = folder, log
        self.record = None
        self._writer, self._error = None, None

    def clean_temporaries(self):
        """Remove what a write cut short (a SIGKILL mid-checkpoint) left: our prefix, regular files."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return
        for name in sorted(names):
            path = os.path.join(self.folder, name)
            if name.startswith(TMP_PREFIX) and fileio.is_regular(path):
                try:
                    fileio.remove_file(path)
                    self.log("removed %s, left by a checkpoint write that was cut short" % name)
                except OSError:
                    pass

    def start(self, record):
        """Begin recording (a new run: no checkpoints yet; a resumed one: those it had)."""
        self.record = dict(record, format=FORMAT)
        self.record.setdefault("checkpoints", [])
        self._write_record()

    def names(self):
        return list(self.record["checkpoints"]) if self.record else []

    def save(self, state, wait=False):
        self.wait()
        snapshot = copy_state(state)
        name = NAME % (state["epoch"], state["step"])
        path = os.path.join(self.folder, name)

        def run():
            try:
                self._write(name, path, snapshot)
            except BaseException as exc:  # noqa: BLE001 - raised in the training thread by wait()
                self._error = exc
        self._writer = threading.Thread(target=run, name="checkpoint-writer")
        self._writer.start()
        if wait:
            self.wait()
        return path

    def _write(self, name, path, snapshot):
        names = [n for n in self.record["checkpoints"] if n != name] + [name]
        self._store(names)            # recorded before it exists: a write cut short leaves no orphan
        fileio.write_atomic_with(path, lambda fh: write(fh, snapshot), prefix=TMP_PREFIX)
        for old in names[:-KEEP]:
            try:
                fileio.remove_file(os.path.join(self.folder, old))
            except OSError as exc:   # replaced by a folder, say: not ours any more, left alone
                self.log("warning: kept %s: %s" % (old, exc.strerror or exc))
        self._store(names[-KEEP:])

    def _store(self, names):
        self.record["checkpoints"] = names
        self._write_record()

    def _write_record(self):
        text = fileio.dumps_json(self.record).encode("utf-8")   # its temporary is ours to clean up too
        fileio.write_atomic_with(os.path.join(self.folder, RECORD), lambda fh: fh.write(text), prefix=TMP_PREFIX)

    def wait(self):
        """Until the last checkpoint is on disk; its failure raised here."""
        if self._writer is not None:
            self._writer.join()
            self._writer = None
        if self._error is not None:
            exc, self._error = self._error, None
            raise exc

    def load(self, name):
        """The decoded state of a recorded checkpoint; Damaged when it cannot be read."""
        try:
            data = fileio.read_bytes(os.path.join(self.folder, name), max_bytes=MAX_BYTES)
        except FileNotFoundError:
            raise Damaged("missing")
        except OSError as exc:
            raise Damaged(exc.strerror or str(exc))
        return read(data)


def copy_state(value):
    """A checkpoint's state as it is now, for the writer thread: tensors copied to the CPU,
    containers rebuilt (the training goes on changing the originals)."""
    import copy
    import torch
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return type(value)((k, copy_state(v)) for k, v in value.items())
    if isinstance(value, tuple) and hasattr(value, "_fields"):   # a namedtuple
        return type(value)(*[copy_state(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(copy_state(v) for v in value)
    return copy.deepcopy(value)


# ---- resume: the same run -----------------------------------------------------------------

def show(v):
    """A value read from a file, for a message: controls and bidi marks escaped (a forged record
    does not drive the terminal)."""
    text = "unset" if v is None else ("%g" % v if isinstance(v, float) else str(v))
    return "".join(c if c.isprintable() else "\\x%02x" % ord(c) if ord(c) < 256 else "\\u%04x" % ord(c)
                   for c in text)


def refusal(differ):
    """One line naming each option that differs and both values."""
    return ("--resume continues the run with the options it was started with; %s (options a resume may "
            "change: %s)" % ("; ".join("--%s %s here, %s in the run" % (n.replace("_", "-"), show(a), show(b))
                                       for n, a, b in differ),
                             ", ".join("--" + n.replace("_", "-") for n in MAY_CHANGE[:6])))


# ---- validation ---------------------------------------------------------------------------

def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite(v, low=None):
    return _number(v) and math.isfinite(v) and (low is None or v >= low)


def _shape(t):
    return "x".join(str(d) for d in t.shape) or "scalar"


class Run(object):
    """What a checkpoint is checked against."""

    def __init__(self, workload, identity, fixed_options, model, optimizer, scaler, metric, steps_per_epoch):
        self.workload, self.identity, self.fixed_options = workload, identity, fixed_options
        self.model, self.optimizer, self.scaler = model, optimizer, scaler
        self.metric, self.steps_per_epoch = metric, steps_per_epoch


def problem(state, run):
    """Why `state` cannot continue `run`; None when it can."""
    import torch
    if not isinstance(state, dict):
        return "not a training state"
    missing = [k for k in ("workload", "identity", "options", "model", "optimizer", "scaler", "epoch", "step",
                           "training", "windows", "loss", "rng") if k not in state]
    if missing:
        return "it lacks %s" % ", ".join(missing)
    if state["workload"] != run.workload:
        return "it is a %s checkpoint, not %s" % (show(state["workload"])[:40], run.workload)
    if state["identity"] != run.identity:
        return "its data or ranks differ from this run's (%s)" % identity_difference(state["identity"], run.identity)
    options = state["options"]
    if not isinstance(options, dict) or any(options.get(k) != v for k, v in run.fixed_options.items()):
        return "its options are not this run's"
    why = _model_problem(state["model"], run.model.state_dict()) or _optimizer_problem(state["optimizer"], run) \
        or _scaler_problem(state["scaler"], run.scaler)
    if why:
        return why
    epoch, step = state["epoch"], state["step"]
    if not _is_int(epoch) or not 0 <= epoch <= 10**6:
        return "epoch %s is not a count of epochs" % ("%r" % (epoch,))[:40]
    if not _is_int(step) or not 0 <= step <= run.steps_per_epoch:
        return "step %s is not a step of an epoch of %d" % (("%r" % (step,))[:40], run.steps_per_epoch)
    why = _training_problem(state["training"], epoch, run.metric)
    if why:
        return why
    if not isinstance(state["windows"], list) or not all(
            isinstance(w, dict) and all(_finite(w.get(k), 0) for k in ("items", "seconds", "data_wait"))
            for w in state["windows"]):
        return "its windows are malformed"
    if not isinstance(state["loss"], list) or not all(_number(v) for v in state["loss"]):
        return "its loss trace is malformed"
    rng = state["rng"]
    if not isinstance(rng, dict) or not isinstance(rng.get("torch"), torch.Tensor) \
            or rng["torch"].dtype != torch.uint8 or rng["torch"].shape != torch.get_rng_state().shape:
        return "its torch RNG state is malformed"
    try:
        random.Random().setstate(rng.get("python"))
    except (TypeError, ValueError, OverflowError):
        return "its Python RNG state is malformed"
    return None


def identity_difference(there, here):
    """In words: how the identity of a run's data and ranks `there` differs from `here`."""
    if not isinstance(there, dict):
        return "no identity recorded"
    if there.get("workload") != here["workload"]:
        return "workload: %s there, %s here" % (show(there.get("workload"))[:40], here["workload"])
    if there.get("num_classes") != here["num_classes"]:
        return "classes: %s there, %s here" % (show(there.get("num_classes"))[:20], show(here["num_classes"]))
    if there.get("classes") != here["classes"]:
        return "classes: the same number, other names"
    if there.get("world_size") != here["world_size"]:
        return "ranks: %s there, %d here" % (show(there.get("world_size"))[:20], here["world_size"])
    facts = there.get("facts") if isinstance(there.get("facts"), dict) else {}
    for k in sorted(here["facts"]):
        if facts.get(k) != here["facts"][k]:
            return "%s: %s there, %s here" % (k, show(facts.get(k))[:40], show(here["facts"][k])[:40])
    return "other fields"


def _model_problem(saved, live):
    import torch
    if not isinstance(saved, dict):
        return "its model state is not a mapping"
    lacks = [k for k in live if k not in saved]
    extra = [k for k in saved if k not in live]
    if lacks or extra:
        return "its model state %s" % ("lacks %s" % lacks[0] if lacks else "has %s, which this model has not"
                                       % show(extra[0])[:80]) + \
            (" (and %d more)" % (len(lacks) + len(extra) - 1) if len(lacks) + len(extra) > 1 else "")
    for k, t in live.items():
        s = saved[k]
        if not isinstance(s, torch.Tensor) or s.shape != t.shape or s.dtype != t.dtype:
            return "its model's %s is %s, here %s %s" % (k, "%s %s" % (_shape(s), s.dtype) if isinstance(
                s, torch.Tensor) else type(s).__name__, _shape(t), t.dtype)
    return None


def _optimizer_problem(saved, run):
    import torch
    opt = run.optimizer
    kind = type(opt).__name__
    if not isinstance(saved, dict) or not isinstance(saved.get("state"), dict):
        return "its optimizer state is malformed"
    if saved.get("kind") != kind:
        return "its optimizer is %s, this run's %s" % (show(saved.get("kind"))[:40], kind)
    sd = saved["state"]
    groups, per_param = sd.get("param_groups"), sd.get("state")
    if not isinstance(groups, list) or len(groups) != len(opt.param_groups) or not isinstance(per_param, dict):
        return "its optimizer state has other parameter groups"
    shapes = {}
    for g, live in zip(groups, opt.param_groups):
        if not isinstance(g, dict) or not isinstance(g.get("params"), list) or len(g["params"]) != len(live["params"]):
            return "its optimizer's parameter groups are not this model's"
        extra = [k for k in g if k not in live]
        if extra:
            return "its optimizer state has %s, which %s has not" % (show(extra[0])[:40], kind)
        for k, v in g.items():
            if k != "params" and not (v is None or isinstance(v, (bool, int, float, str))
                                      or isinstance(v, tuple) and all(_number(x) for x in v)):
                return "its optimizer's %s is malformed" % show(k)[:40]
        for idx, p in zip(g["params"], live["params"]):
            if not _is_int(idx) or idx in shapes:
                return "its optimizer's parameter ids are malformed"
            shapes[idx] = p.shape
    allowed = OPTIMIZER_STATE.get(kind)
    for idx, entry in per_param.items():
        if idx not in shapes or not isinstance(entry, dict):
            return "its optimizer state names a parameter this model has not"
        for k, v in entry.items():
            if allowed is not None and k not in allowed:
                return "its optimizer state holds %s, which %s does not keep" % (show(k)[:40], kind)
            if isinstance(v, torch.Tensor):
                if v.shape != shapes[idx] and v.numel() != 1:
                    return "its optimizer's %s is %s for a parameter of %s" % (show(k)[:40], _shape(v),
                                                                             "x".join(map(str, shapes[idx])))
            elif not _finite(v):
                return "its optimizer's %s is malformed" % show(k)[:40]
    return None


def _scaler_problem(saved, scaler):
    if scaler is None:
        return None if saved is None else "it has a loss scaler's state, and this run uses none"
    live = scaler.state_dict()
    if not isinstance(saved, dict) or set(saved) != set(live) or not all(_finite(v) for v in saved.values()):
        return "its loss scaler's state is malformed"
    return None


def _training_problem(t, epoch, metric):
    if not isinstance(t, dict):
        return "its training record is not a mapping"
    epochs, segments = t.get("epochs"), t.get("segments")
    if not isinstance(epochs, list) or not isinstance(segments, list) or not all(
            isinstance(s, dict) and all(v is None or isinstance(v, (str, int, float)) for v in s.values())
            for s in segments):
        return "its training record is malformed"
    if len(epochs) != epoch:
        return "its training record holds %d epochs, not the %d it says" % (len(epochs), epoch)
    for k, e in enumerate(epochs):
        if not isinstance(e, dict) or e.get("epoch") != k + 1 or not _finite(e.get("on_clock_s"), 0) \
                or not all(e.get(f) is None or _number(e.get(f)) for f in ("train_loss", "lr", "train_throughput",
                                                                           "checkpoint_s")):
            return "its record of epoch %d is malformed" % (k + 1)
        ev = e.get("eval")
        if ev is not None and not (isinstance(ev, dict) and _finite(ev.get(metric))
                                   and all(_number(v) for v in ev.values())):
            return "its evaluation of epoch %d is malformed" % (k + 1)
    if t.get("metric") != metric:
        return "it evaluates %s, this run %s" % (show(t.get("metric"))[:20], metric)
    if not _finite(t.get("on_clock_s"), 0) or not isinstance(t.get("reached"), bool):
        return "its clock or target record is malformed"
    for k in ("best", "time_to_target_s", "target"):
        if t.get(k) is not None and not _finite(t.get(k)):
            return "its %s is malformed" % k
    if "reached_at_epoch" in t and not (_is_int(t["reached_at_epoch"]) and 1 <= t["reached_at_epoch"] <= epoch):
        return "its reached_at_epoch is malformed"
    return None


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


if __name__ == "__main__":   # `python -m dnnbench.workloads.checkpoint FOLDER`: a Slurm job script asks
    print(newest(sys.argv[1]) if len(sys.argv) == 2 else "")
