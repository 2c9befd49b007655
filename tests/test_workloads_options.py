"""One validation table (workloads/options.py): the container's argparse, the host CLI, suite
files and the table itself refuse exactly the same values, drawn by hypothesis, and a refused
value on the CLI creates nothing."""
import argparse
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dnnbench.campaigns import suite_schema
from dnnbench.workloads import options
from tests.helpers import cli_inprocess

NUMERIC = [o for o in options.HARNESS_OPTIONS + options.HOST_ONLY_OPTIONS if o.kind in (int, float)]
HOST_HARNESS = [o for o in options.HOST_OPTIONS if o.kind in (int, float)]
SETTINGS = settings(max_examples=int(os.environ.get("DNNBENCH_HYPOTHESIS_EXAMPLES", 150)), derandomize=True,
                    deadline=None, suppress_health_check=list(HealthCheck))


def values(option):
    """Numbers around the option's bounds, and the ones that break programs."""
    edges = [b for b in (option.low, option.high, option.above) if b is not None]
    near = [e + d for e in edges for d in (-1, -0.5, 0, 0.5, 1)]
    special = [float("nan"), float("inf"), -float("inf"), -1, 0, 2**31, 2**63, 2**70, 1e308, -1e-9]
    drawn = st.integers(-2**70, 2**70) if option.kind is int else st.floats(allow_nan=True, allow_infinity=True)
    return st.one_of(st.sampled_from(near + special), drawn)


def expected_ok(option, value):
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if option.kind is int and not float(value).is_integer():
        return False
    if option.above is not None and not value > option.above:
        return False
    if option.low is not None and value < option.low:
        return False
    return option.high is None or value <= option.high


@SETTINGS
@given(st.sampled_from(NUMERIC).flatmap(lambda o: st.tuples(st.just(o), values(o))))
def test_the_table_says_why_exactly_when_out_of_range(case):
    option, value = case
    assert (option.problem(value) is None) == expected_ok(option, value)


@SETTINGS
@given(st.sampled_from([o for o in options.HARNESS_OPTIONS if o.kind in (int, float)])
       .flatmap(lambda o: st.tuples(st.just(o), values(o))))
def test_the_containers_argparse_agrees(case):
    option, value = case
    text = repr(value) if isinstance(value, float) else str(value)
    if option.kind is int and isinstance(value, float):
        return                      # "1.5" is refused by int() itself: argparse's own message
    try:
        parsed = option.parse(text)
        ok = True
    except argparse.ArgumentTypeError:
        ok = False
    assert ok == (option.problem(option.kind(text)) is None)
    if ok:
        assert parsed == option.kind(text)


@SETTINGS
@given(st.sampled_from([o for o in HOST_HARNESS if o.name not in ("batch_size", "amp")])
       .flatmap(lambda o: st.tuples(st.just(o), values(o))))
def test_suite_files_agree(case):
    option, value = case
    if option.kind is int and isinstance(value, float):
        value = int(value) if math.isfinite(value) and value.is_integer() else value
    if option.kind is float and isinstance(value, int):
        value = float(value)
    try:
        suite_schema.Options(**{option.name: value})
        ok = True
    except Exception:  # noqa: BLE001 - pydantic's ValidationError
        ok = False
    assert ok == (option.problem(value) is None), (option.name, value)


@settings(max_examples=int(os.environ.get("DNNBENCH_HYPOTHESIS_EXAMPLES", 60)), derandomize=True, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(HOST_HARNESS).flatmap(lambda o: st.tuples(st.just(o), values(o))))
def test_run_refuses_out_of_range_values_before_making_anything(tmp_path_factory, case):
    option, value = case
    if option.problem(value) is None or (option.kind is int and isinstance(value, float)):
        return
    results = tmp_path_factory.mktemp("r") / "results"
    text = repr(value) if isinstance(value, float) else str(value)
    code, out, err = cli_inprocess("run", "resnet18", "--runtime", "host", "--results", str(results),
                                   option.flag, text)
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and option.flag in lines[0], err
    assert "Traceback" not in err and not results.exists()


@pytest.mark.parametrize("argv", [
    ["compare", "A", "B", "--tolerance", "nan"], ["compare", "A", "B", "--tolerance", "-5"],
    ["report", "R", "--tolerance", "inf"], ["report", "R", "--weight", "x=nan"],
    ["slurm", "resnet18", "--nodes", "0", "--dry-run"], ["run", "resnet18", "--timeout", "nan", "--dry-run"],
    ["slurm", "resnet18", "--gpus-per-node", "-1", "--dry-run"],
    ["bisect", "vae", "--images", "a,b", "--max-runs", "0"], ["bisect", "vae", "--images", "a,b", "--deadline", "nan"],
    ["watch", "vae", "--images", "a,b", "--deadline", "-1"],
])
def test_host_only_numbers_come_from_the_table_too(tmp_path, argv):
    argv = [str(tmp_path) if a in ("A", "B", "R") else a for a in argv]
    code, out, err = cli_inprocess(*argv)
    assert code == 2 and err.count("error:") == 1 and "Traceback" not in err, err
