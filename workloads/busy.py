"""The one rule that says a host was busy while a run was timed, from what its windows record
(workloads/windows.py: the 1-minute load average and this process's own CPU seconds in each):
every core had a runnable task (the median load at least the number of cores) while the run's
own process got less than half of one core. Such a figure is the host's, not the workload's: the
run's summary says so in one line, the verdict is `host-bound`, the store marks the result and
`history peers`/`series`/`changes` leave it out. The container side judges with it (verdict.py)
and the host side reads the same function (dnnbench.results.busy).

Python 3.7+, stdlib only.
"""

LOAD_PER_CORE = 1.0    # median 1-minute load / cores at or above which every core was taken
CPU_SHARE = 0.5        # the run's own CPU seconds / wall seconds under which it was starved


def _num(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return None
    return float(value)


def facts(result):
    """{load1, cpu_share, cores} of a result dict: the median load average over its windows,
    its own CPU seconds over their wall seconds, the machine's CPU count; each None where the
    result does not record it (results from before it was)."""
    windows = result.get("windows") if isinstance(result, dict) and isinstance(result.get("windows"), list) else []
    windows = [w for w in windows if isinstance(w, dict)]
    loads = sorted(x for x in (_num(w.get("load1")) for w in windows) if x is not None)
    timed = [(_num(w.get("cpu_s")), _num(w.get("seconds"))) for w in windows]
    timed = [(c, s) for c, s in timed if c is not None and s]
    system = result.get("system") if isinstance(result, dict) and isinstance(result.get("system"), dict) else {}
    cores = system.get("cpu_count")
    mid = len(loads) // 2
    return {"load1": (loads[mid] if len(loads) % 2 else (loads[mid - 1] + loads[mid]) / 2.0) if loads else None,
            "cpu_share": sum(c for c, _ in timed) / sum(s for _, s in timed) if timed else None,
            "cores": cores if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0 else None}


def judge(load1, cpu_share, cores):
    """Whether a host was busy (True/False), or None when a fact is missing."""
    if load1 is None or cpu_share is None or not cores:
        return None
    return load1 >= LOAD_PER_CORE * cores and cpu_share < CPU_SHARE


def line(load1, cpu_share, cores):
    """The one line every screen says of a busy host."""
    return ("the host was busy: load %.1f on %d cores, this run's process got %.0f%% of one core; the "
            "figure is the host's, not the workload's (run again on a quiet machine)" % (load1, cores, 100.0 * cpu_share))


def of_result(result):
    """The line for a result whose host was busy, else None."""
    f = facts(result)
    return line(f["load1"], f["cpu_share"], f["cores"]) if judge(f["load1"], f["cpu_share"], f["cores"]) else None
