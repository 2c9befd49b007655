"""Host side of a run's result: complete it whatever happened, and show it."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from dnnbench.console import number
from dnnbench.containers.engines import lookup
from dnnbench.results.naming import gpu_name
from dnnbench.workloads import schema, verdict


def finalize(run_dir: Path, *, plan: dict, outcome, command: str, log_tail: list[str],
             host_extra: dict | None = None, amend=None) -> dict:
    """The run's result.json, written by the harness or, when it could not (the container never
    started, was killed, timed out), by us; with the host's view of the run added (plus
    `host_extra`), and `amend(data)` applied last, so the file is written once. The caller records
    it in the history (runs.launch.finalize_recorded), which sits above results."""
    path = run_dir / schema.RESULT_FILE
    data = None
    if path.exists():
        try:
            data = schema.read(str(path))
        except ValueError as exc:
            log_tail = log_tail + [f"[dnnbench] unreadable result: {exc}"]
    if data is None:
        now = datetime.now(timezone.utc).isoformat()
        data = {
            "schema_version": schema.SCHEMA_VERSION, "run_id": plan["run_id"], "workload": plan["workload"],
            "status": "error", "message": None, "options": {}, "unit": "items/s",
            "throughput": schema.empty_throughput(),
            "windows": [], "loss": [], "system": {}, "started": now, "ended": now,
            "world_size": 1, "ranks": [],
        }
        last = next((line for line in reversed(log_tail) if line.strip()), "")
        data["message"] = f"the run wrote no result (exit {outcome.exit_code}): {last.strip()[:500]}"
        if not getattr(outcome, "started", True) and outcome.ended == "interrupted":
            data["message"] = "interrupted before the run started"
    log_full = getattr(outcome, "log_full", None)
    if log_full and data["status"] in ("error", "running"):
        data["status"] = "error"
        data["message"] = f"the results folder ran out of space: {log_full}"
    if outcome.ended == "timeout":
        data["status"] = "timeout"
        data["message"] = f"stopped after the {plan.get('timeout'):.0f}s timeout"
    elif outcome.ended == "interrupted" and data["status"] in ("ok", "running", "error"):
        data["status"] = "interrupted"
        data["message"] = data.get("message") or "interrupted"
    elif data["status"] == "running":   # the harness died mid-run
        data["status"] = "error"
        data["message"] = f"the run ended (exit {outcome.exit_code}) before finishing"
    if plan.get("job"):
        data["job"] = plan["job"]
    data["host"] = {
        "runtime": plan["runtime"], "image": plan["image"], "base": plan.get("base"),
        "exit_code": outcome.exit_code, "ended": outcome.ended, "seconds": round(outcome.seconds, 3),
        "command": command, "gpus": plan.get("gpus"), **(host_extra or {}),
    }
    engine = lookup(plan["runtime"])
    if engine is not None and not engine.sees_machine:   # the hostname inside is not the machine's: ours is
        import socket
        data["host"]["machine"] = socket.gethostname()
    if plan.get("notes"):
        data["host"]["notes"] = list(plan["notes"])
    if plan.get("user_env"):
        data["host"]["env"] = dict(plan["user_env"])   # --env, which reproduce gives again
    if log_full:
        data["host"]["log_full"] = log_full
    if amend is not None:
        amend(data)
    data["verdict"] = verdict.judge(data)   # again here: the host adds the profile's GPU-busy share
    schema.write_atomic(str(path), data)
    return data


def verdict_of(data: dict) -> dict:
    """The result's verdict when it is well-formed (file data: checked), else judged again now."""
    v = data.get("verdict")
    if (isinstance(v, dict) and v.get("label") in verdict.LABELS and isinstance(v.get("evidence"), list)
            and all(isinstance(e, str) for e in v["evidence"]) and isinstance(v.get("hint"), (str, type(None)))):
        return v
    return verdict.judge(data)


def summary_table(results: list[tuple[Path, dict]]) -> tuple[str, list, list]:
    """Title, columns and rows of the runs' summary (a `per GPU` column only when a run used GPUs)."""
    from dnnbench.console import Column, escape

    from dnnbench.results import numbers
    from dnnbench.workloads import stats

    on_gpus = any((data.get("system") or {}).get("gpus") for _, data in results)
    columns = [Column("workload", key=True), Column("status", decides=True), Column("throughput", right=True, headline=True),
               Column("+-95% CI %", right=True, rank=8), Column("window median", right=True, rank=3)]
    columns += [Column("per GPU", right=True, rank=2)] if on_gpus else []
    columns += [Column("batch", right=True, rank=4), Column("amp", rank=2), Column("device", rank=3),
                Column("verdict", decides=True)]
    rows = []
    for path, data in results:
        head = numbers.run_headline(data)
        per = stats.headline(numbers.streams(data)[0][1])
        opts = data.get("options") or {}
        status = data.get("status", "?")
        colour = "green" if status == "ok" else "red"
        row = [escape(str(data.get("workload", "?"))), f"[{colour}]{escape(str(status))}[/]",
               f"{numbers.fmt(head['value'])} {escape(str(data.get('unit', '')))}",
               number(head["ci95_pct"]), numbers.fmt(head["median"])]
        row += [numbers.fmt(per["value"])] if on_gpus else []
        row += [escape(str(opts.get("batch_size", "-"))), escape(str(opts.get("amp", "-"))),
                escape(gpu_name(data)), escape(verdict_of(data)["label"])]
        rows.append(row)
    return f"dnnbench results (throughput = {numbers.STATISTIC} over the timed windows)", columns, rows


def show_outcome(run_dir: Path, data: dict) -> None:
    """After a run: its summary row, and what went wrong when it did."""
    from rich.text import Text

    from dnnbench.console import err, escape, out, print_table
    from dnnbench.workloads import busy
    epochs: dict = data["training"] if isinstance(data.get("training"), dict) else {}
    missed = bool(epochs) and epochs.get("target") is not None and not epochs.get("reached")
    if missed:   # first, above a table whose status says ok: it trained, but not to its target
        out.print(Text(training_line(epochs)), style="bold red")
    print_table(*summary_table([(run_dir, data)]))
    if busy.of_result(data):     # before the verdict: what the figure is worth
        out.print(Text(busy.of_result(data) or ""), style="yellow")
    v = verdict_of(data)
    if v["label"] != "unknown":
        out.print(Text(f"{v['label']}: " + "; ".join(v["evidence"]) + (f"\nhint: {v['hint']}" if v["hint"] else "")))
    if epochs and not missed:
        out.print(Text(training_line(epochs)))
    if data.get("status") != "ok":
        err.print(f"[red]{escape(data.get('status'))}[/]: {escape(data.get('message'))}", soft_wrap=True)


def training_line(t: dict) -> str:
    """A training run in one line: target and time to it, or `not reached` with the best."""
    epochs = t.get("epochs") or []
    best = t.get("best")
    best_text = "-" if not isinstance(best, (int, float)) else f"{best:.2f} %"
    metric = schema.metric_name(t.get("metric"))
    if t.get("reached"):
        return (f"target {metric} {t.get('target')} % reached at epoch {t.get('reached_at_epoch')}: time to target "
                f"{t.get('time_to_target_s'):.1f} s on the clock")
    if t.get("target") is not None:
        return f"target {metric} {t.get('target')} % not reached in {len(epochs)} epochs: best {best_text}"
    return f"{len(epochs)} epochs, best {metric} {best_text}"
