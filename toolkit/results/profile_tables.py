"""`dnnbench profile show RESULT`: a run's profile summaries and telemetry as tables."""
from __future__ import annotations

from pathlib import Path

from dnnbench.console import escape, number, out
from dnnbench.errors import DnnbenchError

TELEMETRY = [("median_power_w", "power (W)"), ("median_sm_clock_mhz", "SM clock (MHz)"),
             ("median_mem_clock_mhz", "memory clock (MHz)"), ("median_temperature_c", "temperature (C)"),
             ("median_utilization_pct", "utilization (%)"), ("median_memory_used_mib", "memory used (MiB)"),
             ("energy_j", "energy (J)"), ("energy_per_item_j", "energy per item (J)")]


def _load(path: Path) -> tuple[Path, dict]:
    from dnnbench.workloads import schema
    file = path / schema.RESULT_FILE if path.is_dir() else path
    if not file.exists():
        raise DnnbenchError(f"{path} holds no {schema.RESULT_FILE}: give a run folder (results/<run-id>)")
    try:
        return file.parent, schema.read(str(file))
    except ValueError as exc:
        raise DnnbenchError(str(exc)) from None
    except OSError as exc:
        raise DnnbenchError(f"cannot read {file}: {exc.strerror or exc}") from None


def show_command(path: Path, top: int, as_json: bool = False) -> None:
    if top < 1:
        raise DnnbenchError(f"--top {top}: give 1 or more")
    run_dir, data = _load(path)
    try:
        _show(run_dir, data, top, as_json)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        # the stored summary (the profiler's files gone) is file data: a malformed one is an error
        # about that file, not a crash
        raise DnnbenchError(f"{run_dir}: its profile summary is malformed ({type(exc).__name__}: {exc})") from None


def _show(run_dir: Path, data: dict, top: int, as_json: bool) -> None:
    import json

    from rich.table import Table

    from dnnbench.profilers import NAMES, PROFILERS, of, readable, summarize
    profile = summarize(run_dir, data) or data.get("profile") or {}   # the files, when they are still there
    telemetry = data.get("telemetry") or {}
    if not profile and not telemetry:
        raise DnnbenchError(f"{run_dir} has no profile and no GPU telemetry: run with --profile "
                            f"{'|'.join(NAMES)} (telemetry needs NVML on a GPU run)")
    if profile and not readable(profile):
        # Profiler output that could not be read is a failure, not a warning (scripts check the code).
        raise DnnbenchError(f"no profile in {run_dir} could be read: " + "; ".join(profile.get("problems", [])),
                            exit_code=1)
    if as_json:
        print(json.dumps({"run": str(run_dir), "workload": data.get("workload"), "profile": profile,
                          "telemetry": telemetry}, indent=1, default=str))
        return
    from dnnbench.results.numbers import fmt, run_headline
    tp = run_headline(data)
    out.print(f"{data.get('workload')} {data.get('status')}: {fmt(tp.get('value'))} {data.get('unit', '')} "
              f"({run_dir})", markup=False)
    for profiler in PROFILERS.values():    # in the table's order; nvprof has one per process
        for key in sorted(k for k in readable(profile) if of(k) is profiler):
            profiler.show(key, profile[key], top)
    if telemetry:
        t = Table(title=escape(f"GPU telemetry, medians over the timed window ({telemetry.get('samples', 0)} samples)"))
        t.add_column("quantity")
        t.add_column("value", justify="right")
        for key, label in TELEMETRY:
            if telemetry.get(key) is not None:
                t.add_row(label, number(telemetry[key], 4 if key == "energy_per_item_j" else 1))
        out.print(t)
    cool = data.get("cool_down")
    if cool and "waited_s" in cool:
        out.print(f"cool-down: {cool['start_c']} C -> {cool['end_c']} C in {cool['waited_s']} s", markup=False)
    for problem in profile.get("problems", []):
        out.print(f"[yellow]warning:[/] {escape(problem)}", soft_wrap=True)
