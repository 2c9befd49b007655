"""`dnnbench profile show RESULT`: a run's profile summaries and telemetry as tables."""
from __future__ import annotations

from pathlib import Path

from dnnbench.console import escape, number, out
from dnnbench.errors import DnnbenchError

NAME_WIDTH = 90
PIPES = {"fma": "FMA (FP32)", "fp16": "FP16", "tensor": "Tensor", "sfu": "SFU (xu)",
         "tensor_active": "Tensor pipe active (duration-weighted)"}
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


def _name(name: str) -> str:
    """A kernel name for a rich table: cut, and escaped (names hold `[` `]`, rich markup)."""
    return escape(name if len(name) <= NAME_WIDTH else name[:NAME_WIDTH - 1] + "…")


def kernels_table(title: str, kernels: list[dict], top: int):
    from rich.table import Table
    t = Table(title=title)
    for col in ("kernel / op", "time %", "total ms", "calls", "avg µs"):
        t.add_column(col, justify="left" if col == "kernel / op" else "right", overflow="fold")
    for k in kernels[:top]:
        total = k.get("total_ns")
        avg = k.get("avg_ns") or (total / k["instances"] if total and k.get("instances") else None)
        t.add_row(_name(k.get("name") or "?"), number(k.get("time_pct")), number(total / 1e6 if total else None, 3),
                  escape(str(k.get("instances", "-"))), number(avg / 1e3 if avg else None, 2))
    return t


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

    from dnnbench.results.profile_parsers import readable, summarize
    profile = summarize(run_dir, data) or data.get("profile") or {}   # the files, when they are still there
    telemetry = data.get("telemetry") or {}
    if not profile and not telemetry:
        raise DnnbenchError(f"{run_dir} has no profile and no GPU telemetry: run with --profile "
                            "ncu|nsys|torch|nvprof|rocprof (telemetry needs NVML on a GPU run)")
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
    ncu = profile.get("ncu")
    if ncu:
        if ncu["utilization_pct"]:
            t = Table(title=escape(f"ncu: pipe utilization, % of peak, {ncu['launches']} launches, "
                                   f"weighted by {ncu['weighted_by']}"))
            t.add_column("pipe")
            t.add_column("utilization %", justify="right")
            for key, value in ncu["utilization_pct"].items():
                suffix = ncu["metrics"][key].rstrip(")").rsplit("_", 1)[-1]         # elapsed | active
                t.add_row(escape(f"{PIPES.get(key, key)}, {suffix}"), number(value, 2))
            out.print(t)
        else:
            out.print(f"ncu: {ncu['launches']} kernel launches, {ncu['weighted_by']}", markup=False)
        launch = ncu.get("launch") or {}
        if launch:
            out.print(f"ncu: at most {launch.get('launch_count')} kernels profiled (--launch-count), clock control "
                      f"{launch.get('clock_control')}" + (f"; metrics ncu lacks here, left out: "
                                                           f"{', '.join(launch['dropped_metrics'])}"
                                                           if launch.get("dropped_metrics") else ""), markup=False)
        out.print(kernels_table(escape(f"ncu: kernels by {ncu.get('ranked_by', 'duration')}"), ncu["kernels"], top))
    nsys = profile.get("nsys")
    if nsys:
        busy = nsys.get("busy_pct")
        note = f"; GPU busy {busy:.1f}% of the {nsys.get('busy_of')}" if busy is not None else ""
        out.print(kernels_table(escape(f"nsys: top kernels of {nsys['kernel_names']}{note}"), nsys["kernels"], top))
    for tool, summary in sorted(profile.items()):
        if tool.startswith(("nvprof", "rocprof")):
            out.print(kernels_table(escape(f"{tool}: top kernels of {summary['kernel_names']}, % of "
                                           f"{summary.get('time_pct_of', 'kernel time')}"), summary["kernels"], top))
    if profile.get("torch"):
        torch = profile["torch"]
        out.print(kernels_table(escape(f"torch.profiler: top {torch['of']} of {torch['kernel_names']}"),
                                torch["kernels"], top))
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
