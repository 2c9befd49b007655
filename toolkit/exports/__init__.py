"""Results out through the doors sites already use: JUnit XML and GitHub step summaries for CI,
OpenMetrics for Prometheus and a Pushgateway."""
from __future__ import annotations


def exported(code: int, table: list[dict], *, junit=None, suite: str = "dnnbench", summary: str | None = None,
             push: str | None = None, group: str = "dnnbench") -> int:
    """What a command that ends in report rows (results/report.rows) sends out, after its own
    output is written: the JUnit file, the step summary's table (when `summary` titles it) and
    the push; returns the exit code (push.exit_code)."""
    if junit is not None:
        from . import junit as junit_mod
        junit_mod.write(junit, {suite: table})
    if summary is not None:
        from . import step_summary
        step_summary.append(summary, step_summary.report_rows(table))
    if push is None:
        return code
    from . import openmetrics, push as push_mod
    return push_mod.exit_code(code, push_mod.push(push, openmetrics.report_families(table), group))


def changes_out(found: list[dict], series: int, code: int, push: str | None) -> int:
    """`history changes`' lasting changes to the step summary and the Pushgateway (push.exit_code)."""
    from . import openmetrics, push as push_mod, step_summary
    step_summary.append("dnnbench history changes", step_summary.table(
        ["job", "GPU", "change %", "95% CI %", "p", "before", "after"],
        [[f["job"], f["gpu"], f"{f['change_pct']:+.1f}", f"{f['ci95_low_pct']:+.1f} to {f['ci95_high_pct']:+.1f}",
          f"{f['p']:.3f}", (f.get("before") or {}).get("image"), (f.get("after") or {}).get("image")]
         for f in found]) if found else f"no lasting change in {series} series\n")
    if push is None:
        return code
    return push_mod.exit_code(code, push_mod.push(push, openmetrics.changes_families(found, series),
                                                  "dnnbench-changes"))


def watch_out(workload: str, verdicts: list[dict], code: int, push: str | None) -> int:
    """`watch`'s verdicts ({before, after, why, verdict, pct, stuck}) to the step summary and the
    Pushgateway (push.exit_code)."""
    from . import openmetrics, push as push_mod, step_summary
    step_summary.append(f"dnnbench watch {workload}", step_summary.table(
        ["before", "after", "verdict", "change", "suspected by", "note"],
        [[v["before"], v["after"], v["verdict"], v["pct"], v["why"], v["stuck"] or "-"] for v in verdicts])
        if verdicts else "no slowdown suspected\n")
    if push is None:
        return code
    return push_mod.exit_code(code, push_mod.push(push, openmetrics.watch_families(workload, None, verdicts),
                                                  "dnnbench-watch"))
