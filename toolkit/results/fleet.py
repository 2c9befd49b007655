"""The fleet check: the same job run on every node on its own (`slurm --each-node`), and the
hosts whose throughput is below the median host's by more than the tolerance, as an HPC centre
checks its nodes after a driver or firmware update.

The evidence is rounds (results/rounds.py): the r-th run of every host is round r, and a host is
judged on its per-round ratio to that round's median host, so a load that moved between rounds
weighs on every host alike. One round cannot tell a slow node from a busy moment: no host is
named then (`undecided` says so)."""
from __future__ import annotations

import statistics

from dnnbench import names
from dnnbench.results import numbers, rounds


def per_host(results: list[dict]) -> dict[str, dict]:
    """Each host's figure (its runs pooled, with the CI), for a job whose runs name their host."""
    hosts: dict[str, list[dict]] = {}
    for r in results:
        host = r.get("host")
        if not isinstance(host, str) or not host:
            return {}
        hosts.setdefault(names.short_host(host), []).append(r)
    return {h: numbers.job_headline(runs) for h, runs in sorted(hosts.items())}


def _rounds(results: list[dict]) -> dict[str, list[float]]:
    """Each host's run figures in order (its r-th run is round r)."""
    hosts: dict[str, list[float]] = {}
    for r in results:
        host = r.get("host")
        if not isinstance(host, str) or not host:
            return {}
        value = numbers.run_headline(r)["value"]
        hosts.setdefault(names.short_host(host), []).append(value or 0.0)
    return hosts


def judged(results: list[dict], tolerance: float = 0.05) -> dict[str, rounds.Judgement]:
    """Each host against the median host, over the rounds every host ran (a fixed number of
    rounds already run: one look)."""
    hosts = _rounds(results)
    if len(hosts) < 2:
        return {}
    n = min(len(v) for v in hosts.values())
    medians = [statistics.median(v[k] for v in hosts.values()) for k in range(n)]
    return {h: rounds.judge(rounds.log_ratios(medians, v[:n]), tolerance, n, first=n) for h, v in hosts.items()}


def slow_hosts(results: list[dict], tolerance: float = 0.05) -> list[dict]:
    """Hosts slower than the median host by more than the tolerance over their rounds (the
    interval of their ratio to it wholly below 1 - tolerance), slowest first; nothing with fewer
    than two hosts, or fewer than two rounds."""
    figures = per_host(results)
    slow = []
    for host, j in judged(results, tolerance).items():
        if j.verdict != "slower" or not j.ratio:
            continue
        f = figures[host]
        median = f["value"] / j.ratio
        slow.append({"host": host, "throughput": f["value"], "ci95_low": f["ci95_low"], "ci95_high": f["ci95_high"],
                     "median_host": median, "below_median_pct": 100 * (1 - j.ratio), "rounds": j.rounds,
                     "ratio_low": j.low, "ratio_high": j.high})
    return sorted(slow, key=lambda s: s["throughput"])


def undecided(results: list[dict], tolerance: float = 0.05) -> list[str]:
    """One line per host the rounds could not clear nor name (one round: every host below the
    median), so a check that named none says why."""
    lines = []
    for host, j in judged(results, tolerance).items():
        if j.verdict == "inconclusive" and j.ratio is not None and j.ratio < 1 - tolerance:
            lines.append(f"host {host}: {j.pct()} against the median host after {j.rounds} round"
                         f"{'s' if j.rounds != 1 else ''}: inconclusive ({j.why})")
    return lines


def describe(job: str, unit: str, s: dict) -> str:
    ci = (f", 95 % CI {s['ci95_low']:.3g}-{s['ci95_high']:.3g}" if s["ci95_low"] is not None else "")
    return (f"slow host {s['host']}: {job} {s['throughput']:.3g} {unit}{ci}, {s['below_median_pct']:.0f} % below "
            f"the median host ({s['median_host']:.3g}) over {s['rounds']} rounds")
