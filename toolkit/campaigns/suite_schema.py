"""The suite file's schema: every key's type and range, checked before anything runs.

A job's `options:` come from the harness option table (dnnbench.workloads.options), so a new
harness option is a suite option without an edit here. Errors name the file and line.
"""
from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Annotated, Literal, Optional, Union

from pydantic import ConfigDict, Field, ValidationError, create_model

from dnnbench.errors import DnnbenchError
from dnnbench.runs.options import RUNTIMES
from dnnbench.workloads.options import AMP, BY_NAME, HOST_OPTIONS

MAX_RUNS = 10_000          # runs one suite may expand to (sweeps x repeats)
MAX_TIMEOUT = 7 * 86400    # a week: longer is a typo


def _max_copies() -> int:
    from dnnbench.runs.checks import nproc_limit
    return nproc_limit()


def _int(ge: int, le: int | None = None):
    return Annotated[int, Field(ge=ge, le=le)]


def _float(ge: float = 0, gt: float | None = None, le: float | None = None):
    return Annotated[float, Field(ge=None if gt is not None else ge, gt=gt, le=le, allow_inf_nan=False)]


STRICT = ConfigDict(extra="forbid", strict=True)


def _option_field(o):
    """A harness option as a pydantic field: its kind, its choices, its range from the table."""
    if o.choices:
        kind = Literal[tuple(o.choices)]
    elif o.kind is bool:
        kind = bool
    elif o.kind in (int, float):
        kind = Annotated[o.kind, Field(ge=o.low, le=o.high, gt=o.above,
                                       **({"allow_inf_nan": False} if o.kind is float else {}))]
    else:
        kind = str
    return (Optional[kind], None)


# batch_size and amp are job keys of their own (they sweep)
OPTION_NAMES = tuple(o.name for o in HOST_OPTIONS if o.name not in ("batch_size", "amp"))
Options = create_model("Options", __config__=STRICT,
                       **{o.name: _option_field(o) for o in HOST_OPTIONS if o.name in OPTION_NAMES})

def _train_model():
    """A job's `train:` mapping (dnnbench train's options, from the training option table)."""
    from dnnbench.workloads.train import TRAIN_OPTIONS
    return create_model("Train", __config__=STRICT,
                        **{o.name: _option_field(o) for o in TRAIN_OPTIONS if o.name != "resume"})


Train = _train_model()
TRAIN_NAMES = tuple(Train.model_fields)
Scalar = Union[str, int, float]
if TYPE_CHECKING:   # pydantic's constrained types at run time; their plain types to mypy
    Batch = int
    Amp = str
else:
    Batch = _int(1, 1 << 20)
    Amp = Literal[AMP]


def job_fields(max_copies: int) -> dict:
    return dict(
        name=(Optional[str], None),
        workload=(Optional[str], None),
        script=(Optional[str], None),                  # a user's script (file or folder), instead of a workload
        entry=(Optional[str], None),
        items_per_step=(Optional[_int(1, 1 << 31)], None),
        unit=(Optional[str], None),
        run_to_end=(Optional[bool], None),
        train=(Optional[Train], None),                 # train to accuracy (`dnnbench train`) instead of timing
        batch_size=(Optional[Union[Batch, list[Batch]]], None),
        amp=(Optional[Union[Amp, list[Amp]]], None),
        repeats=(Optional[_int(1, 1000)], None),
        timeout=(Optional[_float(gt=0, le=MAX_TIMEOUT)], None),
        gpus=(Optional[Union[str, _int(0)]], None),
        nproc=(Optional[_int(1, max_copies)], None),
        parallel=(Optional[Union[Literal["per-gpu"], _int(1, max_copies)]], None),
        data=(Optional[str], None),
        options=(Optional[Options], None),
        extra=(Optional[list[Scalar]], None),
        image=(Optional[str], None),
        base=(Optional[str], None),
        runtime=(Optional[Literal[RUNTIMES]], None),
        env=(Optional[dict[str, Scalar]], None),      # `--env` of each run (dnnbench.runs.environment)
    )


def _job_model():
    return create_model("Job", __config__=STRICT, **job_fields(_max_copies()))


JOB_KEYS = tuple(job_fields(1))


def watch_fields() -> dict:
    """A `watch:` entry: `dnnbench watch`'s arguments, and the job keys a watch takes."""
    return dict(
        name=(Optional[str], None),
        workload=(Optional[str], None),
        images=(Optional[Union[str, list[str]]], None),    # in release order: a list, or A,B,C
        bases=(Optional[str], None),                        # a catalog range, X..Y
        every=(Optional[_int(1, MAX_RUNS)], None),
        rounds=_option_field(BY_NAME["rounds"]),
        tolerance=_option_field(BY_NAME["tolerance"]),
        batch_size=(Optional[Batch], None),                 # one: a watch does not sweep
        amp=(Optional[Amp], None),
        options=(Optional[Options], None),
        data=(Optional[str], None),
        gpus=(Optional[Union[str, _int(0)]], None),
        runtime=(Optional[Literal[RUNTIMES]], None),
    )


WATCH_KEYS = tuple(watch_fields())
Watch = create_model("Watch", __config__=STRICT, **watch_fields())
TOP_KEYS = ("name", "description", "defaults", "jobs", "watch")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_TYPE_ERRORS = ("_type", "literal_error", "_parsing")


def _message(exc: ValidationError, known: tuple[str, ...], what: str = "job key") -> tuple[str, str]:
    """(the key at fault, one line saying what is wrong) from pydantic's first error."""
    errors = exc.errors()
    first = errors[0]
    # of a union's branches, the one the value's type matched says what is wrong with it
    same = [e for e in errors if e["loc"][:1] == first["loc"][:1] and not e["type"].endswith(_TYPE_ERRORS)]
    first = same[0] if same else first
    loc = [str(x) for x in first["loc"]]
    key = loc[0] if loc else "?"
    if first["type"] == "extra_forbidden":
        field = ".".join(loc)
        pool = known if len(loc) == 1 else TRAIN_NAMES if loc[0] == "train" else OPTION_NAMES
        close = difflib.get_close_matches(loc[-1], pool, n=1)
        hint = f"; did you mean {close[0]}?" if close else f" ({', '.join(sorted(pool))})"
        return key, f"unknown {'option' if len(loc) > 1 else what} {field!r}{hint}"
    # the union branch pydantic tried (constrained-int, list[...]) is noise to a user
    path = ".".join(x for x in loc if not x.startswith(("constrained", "list[", "literal[", "function-")))
    text = first["msg"].replace("Input should be", "must be", 1)
    return key, f"{path} {text}, got {_short(first.get('input'))}"


def check_job(job: dict, where) -> dict:
    """A job mapping (defaults merged in) checked; returns it with `options` as a plain dict.
    `where(key)` gives `file:line` for a key."""
    try:
        checked = _job_model().model_validate(dict(job))
    except ValidationError as exc:
        key, text = _message(exc, JOB_KEYS)
        raise DnnbenchError(f"{where(key)}: {text}") from None
    out = {k: v for k, v in checked.model_dump().items() if k in job}
    if checked.env is not None:
        from dnnbench.runs import environment
        try:
            out["env"] = environment.from_mapping(checked.env, "env")
        except DnnbenchError as exc:
            raise DnnbenchError(f"{where('env')}: {exc}") from None
    out["options"] = {k: v for k, v in (checked.options.model_dump() if checked.options else {}).items()
                      if k in (job.get("options") or {})}
    if checked.train is not None:
        out["train"] = {k: v for k, v in checked.train.model_dump().items() if k in (job.get("train") or {})}
    return out


def check_watch(entry: dict, where) -> dict:
    """A `watch:` entry checked as a job is (`where(key)` gives `file:line`); `options` as a plain dict."""
    try:
        checked = Watch.model_validate(dict(entry))
    except ValidationError as exc:
        key, text = _message(exc, WATCH_KEYS, "watch key")
        raise DnnbenchError(f"{where(key)}: {text}") from None
    out = {k: v for k, v in checked.model_dump().items() if k in entry}
    out["options"] = {k: v for k, v in (checked.options.model_dump() if checked.options else {}).items()
                      if k in (entry.get("options") or {})}
    return out


def check_top(doc, path) -> None:
    lines = getattr(doc, "key_lines", {})
    given = [k for k in ("jobs", "watch") if isinstance(doc, dict) and doc.get(k) is not None] or ["jobs"]
    for key in given:
        if not isinstance(doc, dict) or not isinstance(doc.get(key), list) or not doc[key]:
            raise DnnbenchError(f"{path}:{lines.get(key, 1)}: a suite needs a non-empty `jobs:` list, a "
                                f"`watch:` list, or both")
    for key in doc:
        if key not in TOP_KEYS:
            raise DnnbenchError(f"{path}:{lines.get(key, 1)}: unknown key {key!r} ({', '.join(TOP_KEYS)})")
    for key in ("name", "description"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise DnnbenchError(f"{path}:{lines.get(key, 1)}: {key} must be text, got {_short(doc[key])}")
    if doc.get("defaults") is not None and not isinstance(doc["defaults"], dict):
        raise DnnbenchError(f"{path}:{lines.get('defaults', 1)}: defaults must be a mapping of job keys")
