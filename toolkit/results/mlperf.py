"""MLPerf Training on the host: the official compliance checker run on a run's mlperf_log.txt
(`python -m mlperf_logging.compliance_checker --usage training --ruleset 4.0.0 FILE`), its
verdict and messages recorded in result.json (`mlperf`), the closed division's rules that can be
judged before a run starts, and MLPerf's score over a job's runs: the olympic mean of
run_start -> run_stop (the fastest and slowest dropped) with the number of runs the benchmark
requires, and the reference convergence point (RCP) check where the global batch size has one.

mlperf-logging is imported lazily (the `mlperf` extra): without it the checker's verdict is
"unchecked" and says how to install it.
"""
from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

from dnnbench.errors import DnnbenchError
from dnnbench.workloads import fileio, schema
from dnnbench.workloads.mlperf_log import LOG_FILE, RULESET

USAGE = "training"
MAX_LOG_BYTES = 256 * 2**20
TOKEN = ":::MLLOG "
# the runs a score needs when mlperf-logging cannot say (its benchmark_meta holds the table)
REQUIRED_RUNS = {"resnet": 5, "bert": 10, "ncf": 10}
INSTALL = "pip install mlperf-logging (or dnnbench[mlperf])"
# the closed division's ResNet-50 (training_4.0.0/closed_resnet*.yaml): what a run can be judged
# against before it starts
CLOSED_TARGET = 75.9
CLOSED_END_LR = 0.0001
IMAGENET_CLASSES = 1000
VERDICT_WORDS = {"pass": "PASSED", "fail": "FAILED", "unchecked": "NOT CHECKED by"}


def checker_version() -> str | None:
    """mlperf-logging's version on this host, or None when it is not installed."""
    try:
        from importlib.metadata import PackageNotFoundError, version
        return version("mlperf-logging")
    except PackageNotFoundError:
        return None


def read_log(run_dir: Path) -> str:
    """The run's mlperf_log.txt through the file layer (no link followed, bounded)."""
    path = Path(run_dir) / LOG_FILE
    if not Path(run_dir).is_dir():
        raise DnnbenchError(f"{run_dir} is not a run folder")
    try:
        return fileio.read_text(str(path), MAX_LOG_BYTES, errors="replace")
    except FileNotFoundError:
        if not _trained(Path(run_dir)):   # nothing trained there: mlperf-logging is not what is missing
            raise DnnbenchError(f"{run_dir} holds no training run: no {LOG_FILE} and no result.json of "
                                f"`dnnbench train` (give a run folder of train, or of a suite's training step)") from None
        raise DnnbenchError(f"{run_dir} has no {LOG_FILE} (trained before dnnbench wrote one, or an image "
                            f"without mlperf-logging: {INSTALL} there, or train with --runtime host)") from None
    except OSError as exc:
        raise DnnbenchError(f"{path}: {exc.strerror or exc}") from None


def _trained(run_dir: Path) -> bool:
    """The folder's result.json is a training run's (it has a `training` block)."""
    try:
        data = schema.read(str(run_dir / schema.RESULT_FILE))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("training"), dict)


def events(text: str) -> list[dict]:
    """The log's :::MLLOG records (lines that do not parse are left to the checker to name)."""
    out = []
    for line in text.splitlines():
        at = line.find(TOKEN)
        if at < 0:
            continue
        try:
            record = json.loads(line[at + len(TOKEN):])
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            out.append(record)
    return out


def summary(records: list[dict]) -> dict:
    """What the log says about the run, read as result_summarizer reads it: the first run_start
    and run_stop (MLPerf's time to train), the run_stop status, the division and benchmark, the
    global batch size, the segments (one run_start each) and the epochs to converge."""
    first: dict = {}
    segments = 0
    epochs = None
    for r in records:
        key = r["key"]
        if key == "run_start":
            segments += 1
        if key not in first:
            first[key] = r
        if key == "eval_accuracy" and isinstance(r.get("metadata"), dict):
            epochs = r["metadata"].get("epoch_num", epochs)
        if key == "run_stop" and (r.get("metadata") or {}).get("status") == "success" and "converged" not in first:
            first["converged"] = {"value": epochs}

    def value(key):
        return (first.get(key) or {}).get("value")
    start, stop = first.get("run_start"), first.get("run_stop")
    seconds = None
    if start and stop and schema.finite(start.get("time_ms")) and schema.finite(stop.get("time_ms")):
        seconds = (stop["time_ms"] - start["time_ms"]) / 1000.0
    return {"division": value("submission_division"), "benchmark": value("submission_benchmark"),
            "global_batch_size": value("global_batch_size"), "segments": segments,
            "status": ((stop or {}).get("metadata") or {}).get("status"),
            "time_to_train_s": seconds, "epochs_to_converge": value("converged")}


def run_checker(text: str, ruleset: str = RULESET) -> tuple[str, list[str]]:
    """The official checker on a copy of the log (in a private folder: it also writes its own
    compliance_checker.log): ("pass" | "fail" | "unchecked", its messages)."""
    from dnnbench import external
    if checker_version() is None:
        return "unchecked", [f"mlperf-logging is not installed on this host: {INSTALL}"]
    with tempfile.TemporaryDirectory(prefix="dnnbench-mlperf-") as tmp:
        copy = Path(tmp) / LOG_FILE
        fileio.write_atomic_text(str(copy), text)
        res = external.call([sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", USAGE,
                             "--ruleset", ruleset, "--log_output", str(Path(tmp) / "checker.log"), str(copy)],
                            what="the MLPerf compliance checker", timeout=300, cwd=tmp)
    lines = [ln.rstrip() for ln in (res.stdout + "\n" + res.stderr).splitlines()]
    passed = res.returncode == 0 and any(ln.strip().endswith("SUCCESS") for ln in lines)
    if any(ln.startswith("Traceback") for ln in lines):   # it stopped on the log (an opt_name it has no rules for)
        last = next((ln.strip() for ln in reversed(lines) if ln.strip()), "")
        return "fail", [f"the checker stopped on this log: {last[:500]}"]
    # its rules' findings, without the state dumps it prints after each (JSON, the line itself)
    messages = [_plain(ln) for ln in lines if ln[:1].isalpha() and not ln.startswith(("INFO", "current "))]
    return ("pass" if passed else "fail"), [m for m in messages if m][:50]


def _plain(line: str) -> str:
    """A checker line without its logging prefix and rule separators."""
    line = line.strip()
    for prefix in ("WARNING - ", "ERROR - ", "WARNING -", "ERROR -"):
        if line.startswith(prefix):
            line = line[len(prefix):].strip()
    return "" if set(line) <= {"-"} else line[:500]


def check(run_dir: Path, ruleset: str = RULESET) -> dict:
    """The `mlperf` block of a run: the checker's verdict and messages, and the log's summary."""
    text = read_log(run_dir)
    verdict, messages = run_checker(text, ruleset)
    info = summary(events(text))
    if info["segments"] > 1:
        messages.append(f"{info['segments']} segments (the run was resumed): MLPerf counts one uninterrupted "
                        f"run, so the checker refuses the second run_start; dnnbench's time to target still "
                        f"counts every segment's time on the clock")
    return {"ruleset": f"{USAGE}_{ruleset}", "checker": f"mlperf-logging {checker_version() or '(absent)'}",
            "log": LOG_FILE, "verdict": verdict, "messages": messages, **info, "rcp": rcp_standing(text, ruleset)}


def rcp_standing(text: str, ruleset: str = RULESET) -> dict | None:
    """Where the run's epochs to converge stand against the RCP at its global batch size, the
    epochs read by mlperf-logging's own read_submission_file and the RCP judged as its
    check_directory would (results/rcp.py): too fast, within (scored as if at the RCP mean),
    slower, or no RCP; None without mlperf-logging or when the benchmark has no RCPs."""
    if checker_version() is None:
        return None
    from mlperf_logging.rcp_checker import rcp_checker

    from dnnbench.results import rcp
    with tempfile.TemporaryDirectory(prefix="dnnbench-rcp-") as tmp:
        copy = Path(tmp) / "result_0.txt"
        fileio.write_atomic_text(str(copy), text)
        try:
            with rcp.quiet():
                not_converged, epochs, bs, benchmark = rcp_checker.read_submission_file(str(copy), ruleset, False)
        except (ValueError, KeyError, TypeError):   # a record it cannot read: the checker names it
            return None
    if benchmark is None or benchmark not in rcp.benchmarks(ruleset) or not isinstance(bs, int) or bs <= 0:
        return None
    out = {"benchmark": benchmark, "batch_size": bs, "unit": rcp.unit(benchmark)}
    if not_converged:
        return {**out, "standing": "not converged", "epochs": None}
    p = rcp.point(rcp.load(benchmark, ruleset), bs)
    return {**out, "epochs": float(epochs), "standing": rcp.standing(p, float(epochs)),
            **{k: p[k] for k in ("basis", "between", "judged_at", "mean", "min")}}


def rcp_line(block: dict) -> str:
    """The RCP standing in one sentence."""
    r = block["rcp"]
    from dnnbench.results.rcp import amount, describe
    word = r["unit"]
    if r["standing"] == "not converged":
        return f"RCP: the run did not converge, so its {word} stand nowhere against the RCP"
    head = f"RCP at batch {r['batch_size']}: {amount(r['epochs'], word)} {word} to converge, {r['standing'].upper()}"
    if r["standing"] == "no RCP":
        return f"{head} (no RCP covers batch {r['batch_size']}: mlperf-logging fails it as 'Missing RCP')"
    what = describe({**r, "basis": r["basis"]}, word)
    judge = {"too fast": "faster than the fastest compliant mean", "within": "a compliant mean; its score "
             "would be scaled to the RCP mean's", "slower": "at or above the RCP mean"}[r["standing"]]
    return (f"{head}: {judge} (min {amount(r['min'], word)}, mean {amount(r['mean'], word)}; {what}; "
            f"the check is on the mean of a submission's runs)")


def record(run_dir: Path, block: dict) -> None:
    """Add the block to the run's result.json (atomically), when it has one."""
    path = Path(run_dir) / schema.RESULT_FILE
    try:
        data = schema.read(str(path))
    except (OSError, ValueError):
        return
    data["mlperf"] = block
    schema.write_atomic(str(path), data)


def show(run: str, block: dict) -> None:
    """The verdict in plain words, then the checker's own messages."""
    from dnnbench.console import out, visible
    tt = block.get("time_to_train_s")
    if block.get("status") not in (None, "success"):   # first: a compliant log of a run that never converged
        out.print(visible(f"{run}: the run did not reach its target (run_stop status {block.get('status')}): "
                          "no MLPerf time to train; the checker below judges the log's form, not the result"),
                  markup=False, soft_wrap=True, style="bold red")
    head = (f"MLPerf {block.get('ruleset')} {block.get('division') or '?'} {block.get('benchmark') or '?'}: "
            f"{VERDICT_WORDS.get(block['verdict'], block['verdict'])} the compliance checker "
            f"({block.get('checker')})")
    out.print(visible(f"{run}: {head}"), markup=False, soft_wrap=True)
    if tt is not None:
        out.print(f"  run_start -> run_stop {tt:.1f} s, status {block.get('status')}", markup=False)
    if block.get("rcp"):   # wrapped under its own indent at the screen's width
        import textwrap
        out.print(textwrap.fill(rcp_line(block), width=max(out.width, 40), initial_indent="  ",
                                subsequent_indent="    "), markup=False, soft_wrap=True)
    for m in block.get("messages") or []:
        out.print(visible(f"  {m}", one_line=True), markup=False, soft_wrap=True)


def check_command(runs: list[Path], ruleset: str = RULESET) -> int:
    """`dnnbench mlperf check RUN...`: 0 when every log passes, 1 when one fails or is unchecked."""
    code = 0
    run_dirs = [run.parent if run.name in (schema.RESULT_FILE, LOG_FILE) else run for run in runs]
    for run_dir in run_dirs:      # a folder that holds no run refuses the command before any is checked
        read_log(run_dir)
    for run_dir in run_dirs:
        block = check(run_dir, ruleset)
        record(run_dir, block)
        show(str(run_dir), block)
        code = code or (0 if block["verdict"] == "pass" else 1)
    return code


def after_training(run_dir: Path, code: int) -> int:
    """`train --mlperf`: check the finished run's log and record it; a failed check fails a run
    that otherwise succeeded."""
    if not (Path(run_dir) / LOG_FILE).exists():
        if code:      # the run failed (a run without mlperf-logging is refused before it trains): it said why
            return code
        from dnnbench.console import warn
        warn(f"no {LOG_FILE} in {run_dir}: nothing for the MLPerf checker")
        return 1
    block = check(Path(run_dir))
    record(Path(run_dir), block)
    show(str(run_dir), block)
    return code or (0 if block["verdict"] == "pass" else 1)


def closed_problems(workload: str, train: dict, batch_size: int | None, lr: float | None, world: int | None,
                    data: Path | None) -> list[str]:
    """What makes a run break the closed division's ResNet-50 rules, known before it starts."""
    from dnnbench.workloads import WORKLOADS
    problems = []
    if workload != "resnet50":
        problems.append(f"closed trains the reference model, resnet50, not {workload}")
    target = train.get("target_accuracy")
    if target is None or target < CLOSED_TARGET:
        problems.append(f"--target-accuracy must be at least {CLOSED_TARGET} (closed's eval_accuracy >= 0.7590)")
    if train.get("lr_schedule", "step") != "poly":
        problems.append("closed's SGD decays the lr polynomially to 0.0001 after a warmup (closed_resnet_sgd.yaml): "
                        "add --lr-schedule poly")
    spec = WORKLOADS.get(workload)
    if spec is not None and batch_size and (lr is not None or world is not None):
        base = lr if lr is not None else 0.1 * batch_size * (world or 1) / 256
        if not _multiple(base, 0.001):
            problems.append(f"the base lr {base:g} must be a multiple of 0.001 (give --lr)")
    if data is not None and (Path(data) / "train").is_dir():
        classes = sum(1 for p in (Path(data) / "train").iterdir() if p.is_dir())
        if classes != IMAGENET_CLASSES:
            problems.append(f"{data}/train has {classes} classes, not ImageNet's {IMAGENET_CLASSES}")
    return problems


def _multiple(value: float, step: float) -> bool:
    k = value / step
    return abs(k - round(k)) < 1e-6


# ---- scores over a job's runs (dnnbench report) ----

def required_runs(benchmark: str | None) -> int:
    try:
        from mlperf_logging.benchmark_meta import get_result_file_counts
        return int(get_result_file_counts(USAGE).get(benchmark or "", 5))
    except ImportError:
        return REQUIRED_RUNS.get(benchmark or "", 5)


def olympic(minutes: list[float], dropped: int) -> float | None:
    """result_summarizer's olympic mean: sorted, the fastest dropped and the slowest too unless a
    run that did not converge already counts as the slowest; None when nothing is left."""
    kept = sorted(minutes)[1:len(minutes) - (1 - dropped)] if dropped <= 1 else []
    return statistics.fmean(kept) if kept else None


def job_score(run_dirs: list[Path]) -> dict | None:
    """A job's MLPerf score from its runs' logs: each run's verdict (recorded by `mlperf check`,
    else the checker run now) and run_start -> run_stop; the olympic mean over the compliant converged runs
    (a run that did not converge or fails the checker is dropped; more than one: no score)."""
    runs = []
    for d in run_dirs:
        try:
            text = read_log(d)
        except DnnbenchError:
            continue
        info = summary(events(text))
        verdict = _recorded_verdict(d)
        if verdict == "unchecked":   # never checked: the checker now (its verdict is not written back)
            verdict = run_checker(text)[0]
        runs.append({"run": d.name, "verdict": verdict, **info})
    if not runs:
        return None
    benchmark = next((r["benchmark"] for r in runs if r["benchmark"]), None)
    good = [r for r in runs if r["verdict"] != "fail" and r["status"] == "success" and r["time_to_train_s"]]
    minutes = [r["time_to_train_s"] / 60.0 for r in good]
    need = required_runs(benchmark)
    dropped = len(runs) - len(good)
    score = olympic(minutes, dropped) if len(runs) >= need else None
    return {"benchmark": benchmark, "runs": runs, "required": need, "scored": len(good), "dropped": dropped,
            "score_min": score, "rcp": rcp_check(run_dirs, good, benchmark)}


def _recorded_verdict(run_dir: Path) -> str:
    try:
        data = schema.read(str(Path(run_dir) / schema.RESULT_FILE))
    except (OSError, ValueError):
        return "unchecked"
    block = data.get("mlperf")
    return block.get("verdict", "unchecked") if isinstance(block, dict) else "unchecked"


def rcp_check(run_dirs: list[Path], good: list[dict], benchmark: str | None) -> str:
    """mlperf-logging's RCP check (rcp_checker.check_directory, on the pruned RCPs as its package
    checker runs it) on the converged runs, with the RCP it judged them by (results/rcp.py)."""
    sizes = {r["global_batch_size"] for r in good}
    if not good or len(sizes) != 1 or benchmark is None:
        return "-"
    size = sizes.pop()
    if checker_version() is None:
        return f"unchecked ({INSTALL})"
    from mlperf_logging.rcp_checker import rcp_checker

    from dnnbench.results import rcp
    try:
        point = rcp.point(rcp.load(benchmark, RULESET), size)
    except DnnbenchError:
        return f"no RCPs for {benchmark}"
    what = rcp.describe(point, rcp.unit(benchmark))
    if point["basis"] == "none":
        return f"fail: {what} (mlperf-logging: Missing RCP)"
    by_name = {d.name: d for d in run_dirs}
    with tempfile.TemporaryDirectory(prefix="dnnbench-rcp-") as tmp:
        for i, r in enumerate(good):
            fileio.write_atomic_text(str(Path(tmp) / f"result_{i}.txt"), read_log(by_name[r["run"]]))
        with rcp.quiet():
            ok, message, norm = rcp_checker.check_directory(tmp, USAGE, RULESET, False, False, rcp_pass=rcp.PASS)
    return (f"{'pass' if ok else 'fail'}: {message}" + (f" (score x {norm:.3f})" if ok and norm and norm != 1 else "")
            + f"; {what}")


SCORE_HEADERS = ("run", "checker", "status", "minutes", "segments")


def score_tables(jobs: dict) -> list[dict]:
    """Each training job's MLPerf table, as `report` shows it on the screen and on its page:
    {title, rows (cells as text, SCORE_HEADERS), lines (the score or why there is none, the RCP check)}."""
    from dnnbench.console import visible
    tables = []
    for job in sorted(jobs.values(), key=lambda j: (j.system, j.job, j.image or "", j.base or "")):
        name = job.job + (f" @ {job.image}" if job.image else "")   # a job's identity holds its image
        dirs = [Path(p).parent for p in job.paths if (Path(p).parent / LOG_FILE).exists()]
        score = job_score(dirs) if dirs else None
        if score is None:
            continue
        rows = [[visible(r["run"], one_line=True), r["verdict"], r["status"] or "-",
                 "-" if r["time_to_train_s"] is None else f"{r['time_to_train_s'] / 60:.2f}",
                 str(r["segments"])] for r in score["runs"]]
        if score["score_min"] is not None:
            line = (f"MLPerf score {score['score_min']:.3f} min: olympic mean of {score['scored']} runs "
                    f"(fastest and slowest dropped; {score['required']} required)")
        else:
            line = (f"no MLPerf score: {len(score['runs'])} runs, {score['scored']} converged and compliant; "
                    f"{score['benchmark']} needs {score['required']}, at most one dropped")
        tables.append({"title": f"MLPerf: {visible(name, one_line=True)} ({score['benchmark']})", "rows": rows,
                       "lines": [line, f"RCP check: {score['rcp']}"]})
    return tables


def print_scores(jobs: dict) -> None:
    """After `dnnbench report`'s table: each training job's MLPerf score, with its runs."""
    from dnnbench.console import Column, escape, out, print_table
    for table in score_tables(jobs):
        print_table(escape(table["title"]),
                    [Column("run", key=True), Column("checker", rank=9), Column("status", decides=True),
                     Column("minutes", right=True, headline=True), Column("segments", right=True, rank=5)],
                    [[escape(c) for c in row] for row in table["rows"]])
        for line in table["lines"]:
            out.print(line, markup=False)
