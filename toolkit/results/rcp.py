"""MLPerf Training's reference convergence points (RCPs) as mlperf-logging's rcp_checker reads
them: the RCP files it ships (`rcp_checker/training_<ruleset>/rcps_<benchmark>.json`) loaded by
its own `RCP_Checker` (olympic mean and stdev per RCP, the minimum acceptable mean from its
one-sided t-test at 5 %, pruning), and, for any global batch size, the RCP its
`check_directory` would judge a submission against (with `rcp_pass='pruned_rcps'`, as the
package checker calls it): the RCP at that batch size, one interpolated between the bracketing
pruned RCPs, the smallest one for a batch below them all, or none above them ("Missing RCP").

A submission's mean epochs below `mean / max speedup` fail; between that and the RCP mean they
pass and the score is scaled up to the mean's; at or above the mean they pass as they are.
"""
from __future__ import annotations

import contextlib
import logging
import math
import re
from pathlib import Path

from dnnbench.errors import DnnbenchError

USAGE = "training"
INSTALL = "pip install mlperf-logging (or dnnbench[mlperf])"
PASS = "pruned_rcps"     # what mlperf-logging's package checker passes to check_directory

# dnnbench's workloads that train an MLPerf Training benchmark, and its names over the rounds
# (the first a ruleset has RCPs for is taken)
WORKLOAD_BENCHMARKS = {"resnet50": ("resnet",), "ssd300": ("ssd", "retinanet"), "maskrcnn": ("maskrcnn",),
                       "bert": ("bert",), "ncf": ("ncf",)}
# Benchmarks whose RCPs count passes over the training set (epoch_num is a fraction or number of
# epochs). The others' logs count samples (BERT's epoch_num, samples_count) and so do their RCPs.
EPOCH_BENCHMARKS = frozenset({"resnet", "ssd", "retinanet", "maskrcnn", "dlrm_dcnv2", "gnn", "rgat"})
# Samples in one epoch of the training set, where the dataset is fixed by the rules:
# ImageNet-1k's train split (1,281,167 images) and MLPerf's OpenImages subset for SSD/RetinaNet
# (1,170,301 images, the reference's README). Others: --samples-per-epoch.
SAMPLES_PER_EPOCH = {"resnet": 1281167, "ssd": 1170301, "retinanet": 1170301}
# how a run's epochs stand against its RCP
TOO_FAST, WITHIN, SLOWER, UNCOVERED = "too fast", "within", "slower", "no RCP"


def _module():
    try:
        from mlperf_logging.rcp_checker import rcp_checker
    except ImportError:
        raise DnnbenchError(f"mlperf-logging is not installed on this host: {INSTALL}") from None
    return rcp_checker


def _folder() -> Path:
    return Path(_module().__file__).parent


def _version_key(text: str) -> tuple:
    return tuple(int(x) for x in text.split("."))


def rulesets() -> list[str]:
    """The training rulesets the installed mlperf-logging ships RCPs for, oldest first."""
    found = [p.name[len(USAGE) + 1:] for p in _folder().glob(f"{USAGE}_*") if p.is_dir()]
    return sorted((r for r in found if re.fullmatch(r"\d+(\.\d+)*", r)), key=_version_key)


def benchmarks(ruleset: str) -> list[str]:
    """The benchmarks with an RCP file in a ruleset."""
    return sorted(p.name[len("rcps_"):-len(".json")] for p in (_folder() / f"{USAGE}_{ruleset}").glob("rcps_*.json"))


def resolve(name: str, ruleset: str | None) -> tuple[str, str]:
    """(MLPerf benchmark, ruleset) for an MLPerf name or a dnnbench workload; without a ruleset,
    the newest that has RCPs for it. A name or ruleset mlperf-logging does not know: one line."""
    known = rulesets()
    if ruleset is not None and ruleset not in known:
        raise DnnbenchError(f"unknown ruleset {ruleset!r}: mlperf-logging {_installed()} has RCPs for training "
                            f"{', '.join(known)}")
    candidates = WORKLOAD_BENCHMARKS.get(name, (name,))
    for r in ([ruleset] if ruleset else known[::-1]):
        have = benchmarks(r)
        for c in candidates:
            if c in have:
                return c, r
    where = f"ruleset {ruleset} has RCPs for {', '.join(benchmarks(ruleset))}" if ruleset else \
        "no installed ruleset has RCPs for it"
    mapped = ", ".join(f"{w}={'/'.join(b)}" for w, b in WORKLOAD_BENCHMARKS.items())
    raise DnnbenchError(f"unknown benchmark {name!r}: {where} (dnnbench workloads: {mapped})")


def _installed() -> str:
    try:
        from importlib.metadata import version
        return version("mlperf-logging")
    except Exception:   # noqa: BLE001 - only a label
        return "(version unknown)"


@contextlib.contextmanager
def quiet():
    """mlperf-logging's rcp_checker speaks through the root logger (`logging.warning`, which puts
    a stderr handler on it at first use): "WARNING:root: Run incomplete or did not converge"
    would reach the screen beside dnnbench's own line that says it. Silenced for the call."""
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers = [logging.NullHandler()]
    try:
        yield
    finally:
        root.handlers = saved


def load(benchmark: str, ruleset: str):
    """mlperf-logging's own RCP_Checker for the benchmark (its statistics and pruning done)."""
    module = _module()
    try:
        with quiet():
            return module.RCP_Checker(USAGE, ruleset, benchmark, False)
    except (OSError, KeyError, ValueError) as exc:
        raise DnnbenchError(f"mlperf-logging cannot read the RCPs of {benchmark} in {ruleset}: {exc}") from None


def unit(benchmark: str) -> str:
    return "epochs" if benchmark in EPOCH_BENCHMARKS else "samples"


def threshold(checker, record: dict) -> float:
    """The lowest mean a submission may converge at, as _eval_submission_record compares it
    (`mean >= RCP Mean / Max Speedup`), with its one rule for llama31_405b from 5.0.0 on (the
    minimum less 46080 samples), on a copy: the record is not changed."""
    module = _module()
    speedup = record["Max Speedup"]
    if module.is_version_at_least(checker.ruleset, "5.0.0") and checker.benchmark == "llama31_405b":
        speedup = record["RCP Mean"] / (record["Min Epochs"] - 46080)
    return record["RCP Mean"] / speedup


def point(checker, batch_size: int) -> dict:
    """The RCP check_directory judges a submission at this global batch size against:
    basis "rcp" (one at that size), "interpolated" (between the bracketing pruned RCPs),
    "below" (smaller than every pruned RCP: the smallest one), or "none" (larger than every
    pruned RCP: mlperf-logging's "Missing RCP")."""
    record = checker._find_rcp(batch_size, PASS)
    low = high = None
    if record is not None:
        basis = "rcp"
    else:
        low = checker._find_top_min_rcp(batch_size, PASS)
        high = checker._find_bottom_max_rcp(batch_size, PASS)
        if low is not None and high is not None:
            basis = "interpolated"
            record = checker._create_interp_rcp(batch_size, low, high)[1]
        elif low is None and high is not None:
            basis = "below"
            record = checker._find_min_rcp(PASS)
        else:
            basis = "none"
    out = {"batch_size": batch_size, "basis": basis,
           "between": [low["BS"], high["BS"]] if low is not None and high is not None else None,
           "judged_at": record["BS"] if record is not None and basis == "below" else None}
    if record is None:
        return {**out, "mean": None, "stdev": None, "min": None, "max_speedup": None}
    return {**out, "mean": float(record["RCP Mean"]), "stdev": float(record["RCP Stdev"]),
            "min": float(threshold(checker, record)), "max_speedup": float(record["Max Speedup"])}


def standing(p: dict, epochs: float) -> str:
    """Where one run's (or a mean's) epochs stand against the RCP at its batch size."""
    if p["basis"] == "none":
        return UNCOVERED
    if epochs < p["min"]:
        return TOO_FAST
    return WITHIN if epochs < p["mean"] else SLOWER


def describe(p: dict, unit_word: str) -> str:
    """What the RCP at a batch size is, in a few words."""
    if p["basis"] == "none":
        return f"no RCP covers batch {p['batch_size']}"
    if p["basis"] == "interpolated":
        return f"interpolated between batch {p['between'][0]} and {p['between'][1]}"
    if p["basis"] == "below":
        return f"below every RCP: judged against batch {p['judged_at']}'s"
    return "an RCP at this batch size"


def amount(value: float | None, unit_word: str) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if unit_word == "epochs" else f"{value:,.0f}"


# ---- the plan: epochs per batch size, and with throughput the time to train ----

def positive_int(text: str, what: str) -> int:
    text = text.strip()
    if not re.fullmatch(r"[0-9]+", text) or int(text) <= 0:
        raise DnnbenchError(f"{what}: {text!r} is not a positive whole number")
    return int(text)


def batch_list(text: str) -> list[int]:
    """--batch-sizes 1632,2048,...: positive whole numbers, each once."""
    parts = [t for t in text.split(",")]
    if not text.strip() or any(not t.strip() for t in parts):
        raise DnnbenchError(f"--batch-sizes: {text!r} is not a list of batch sizes (e.g. 1632,2048,4096)")
    return sorted({positive_int(t, "--batch-sizes") for t in parts})


def _positive_float(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) and v > 0 else None


def throughput_list(text: str) -> dict[int, dict]:
    """--throughput BS=ITEMS_PER_S[+-HALF_WIDTH],...: a measured throughput per global batch
    size, with the half width of its 95 % CI where known."""
    out: dict[int, dict] = {}
    form = "BS=ITEMS_PER_S or BS=ITEMS_PER_S+-CI (e.g. 1632=2600,2048=3100+-40)"
    for part in text.split(","):
        m = re.fullmatch(r"\s*([^=]+?)\s*=\s*([^+\s±]+)\s*(?:(?:\+-|±)\s*(\S+))?\s*", part)
        if not m:
            raise DnnbenchError(f"--throughput: {part.strip()!r} is not {form}")
        bs = positive_int(m.group(1), "--throughput's batch size")
        value = _positive_float(m.group(2))
        half = _positive_float(m.group(3)) if m.group(3) is not None else 0.0
        if value is None or half is None or half >= value:
            raise DnnbenchError(f"--throughput: {part.strip()!r} is not {form}, with a positive rate "
                                f"and a CI narrower than it")
        if bs in out:
            raise DnnbenchError(f"--throughput: batch size {bs} is given twice")
        out[bs] = {"value": value, "low": value - half, "high": value + half, "source": "--throughput"}
    return out


def plan(benchmark: str, ruleset: str, batch_sizes: list[int], throughput: dict[int, dict],
         samples_per_epoch: int | None = None) -> dict:
    """The plan: for each batch size, the RCP mean and the fastest compliant mean; with a
    throughput, the predicted time to train (RCP mean / throughput) and its band (mean -+ the
    RCP's stdev over the throughput's CI). The shortest predicted time is marked."""
    checker = load(benchmark, ruleset)
    word = unit(benchmark)
    per = 1 if word == "samples" else (samples_per_epoch or SAMPLES_PER_EPOCH.get(benchmark))
    sizes = sorted(set(batch_sizes) | set(throughput)) or sorted({r["BS"] for r in checker.rcp_data.values()})
    rows = []
    for bs in sizes:
        p = point(checker, bs)
        thr = throughput.get(bs)
        p["throughput"] = thr
        p["time_s"] = p["time_band_s"] = None
        if thr is not None and p["mean"] is not None and per:
            lo = max(p["mean"] - p["stdev"], 0.0)
            p["time_s"] = p["mean"] * per / thr["value"]
            p["time_band_s"] = [lo * per / thr["high"], (p["mean"] + p["stdev"]) * per / thr["low"]]
        p["shortest"] = False
        rows.append(p)
    timed = [r for r in rows if r["time_s"] is not None]
    if timed:
        min(timed, key=lambda r: r["time_s"])["shortest"] = True
    return {"benchmark": benchmark, "ruleset": f"{USAGE}_{ruleset}", "checker": f"mlperf-logging {_installed()}",
            "unit": word, "samples_per_epoch": per if word == "epochs" else None,
            "rcp_batch_sizes": sorted({r["BS"] for r in checker.rcp_data.values()}),
            "pruned_batch_sizes": sorted({r["BS"] for r in checker.pruned_rcp_data.values()}),
            "plan": rows}


def minutes(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    m = seconds / 60
    return f"{m:.1f}" if m < 1000 else f"{m:,.0f}"


def _rate(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _basis_cell(r: dict) -> str:
    """The RCP column: `RCP` (one at this size), `LOW-HIGH` (interpolated), `<BS` (below them
    all: judged against the smallest), `none`."""
    if r["basis"] == "interpolated":
        return f"{r['between'][0]}-{r['between'][1]}"
    if r["basis"] == "below":
        return f"<{r['judged_at']}"
    return "RCP" if r["basis"] == "rcp" else "none"


def show(result: dict) -> None:
    """The plan as a table that fits the screen, then what its words mean."""
    from dnnbench.console import Column, out, print_table
    word = result["unit"]
    timed = any(r["throughput"] for r in result["plan"])
    cells = []
    for r in result["plan"]:
        thr = r["throughput"]
        rate = "-" if thr is None else (_rate(thr["value"]) + (f"+-{_rate((thr['high'] - thr['low']) / 2)}"
                                                              if thr["high"] != thr["value"] else ""))
        band = r["time_band_s"]
        time = "-" if r["time_s"] is None else f"{minutes(r['time_s'])} ({minutes(band[0])}-{minutes(band[1])})"
        basis = _basis_cell(r)
        row = [str(r["batch_size"]), basis, amount(r["mean"], word), amount(r["min"], word)]
        if timed:
            row += [rate, time, "shortest" if r["shortest"] else ""]
        cells.append(row)
    columns = [Column("batch", key=True, right=True), Column("RCP", rank=5), Column(f"mean {word}", right=True,
                                                                                       decides=True),
               Column(f"min {word}", right=True, decides=True)]
    if timed:
        columns += [Column("items/s", right=True, rank=6), Column("minutes (band)", right=True, decides=True),
                    Column("", decides=True)]
    print_table(f"MLPerf {result['ruleset']} {result['benchmark']}: RCPs ({result['checker']})", columns, cells)
    for r in result["plan"]:
        if r["basis"] == "none":
            out.print(f"no RCP covers batch {r['batch_size']} (RCPs up to {result['pruned_batch_sizes'][-1]}): "
                      f"mlperf-logging fails it as 'Missing RCP'", markup=False)
    out.print(f"min = the fastest mean {word} a compliant submission may converge at; between min and "
              f"mean it passes, its score scaled to the mean's.", markup=False, soft_wrap=False)
    if timed:
        per = result["samples_per_epoch"]
        if result["unit"] == "epochs" and not per:
            out.print(f"no time: give --samples-per-epoch (the {result['benchmark']} training set's size)",
                      markup=False)
        else:
            out.print(("minutes = mean x " + f"{per:,} samples / items/s" if per else "minutes = mean samples / items/s")
                      + "; band: mean -+ the RCP's stdev over the throughput's 95 % CI.", markup=False)
