"""The fleet check: the same job run on every node on its own (`slurm --each-node`), and the
hosts whose throughput is below the median host's by more than their own noise, as an HPC
centre checks its nodes after a driver or firmware update."""
from __future__ import annotations

import statistics

from dnnbench import names
from dnnbench.results import numbers


def per_host(results: list[dict]) -> dict[str, dict]:
    """Each host's figure (its runs pooled, with the CI), for a job whose runs name their host."""
    hosts: dict[str, list[dict]] = {}
    for r in results:
        host = r.get("host")
        if not isinstance(host, str) or not host:
            return {}
        hosts.setdefault(names.short_host(host), []).append(r)
    return {h: numbers.job_headline(runs) for h, runs in sorted(hosts.items())}


def slow_hosts(results: list[dict]) -> list[dict]:
    """Hosts below the median host by more than their own 95 % CI (its upper end is below the
    median), slowest first; nothing when fewer than two hosts ran the job."""
    figures = {h: f for h, f in per_host(results).items() if f["value"]}
    if len(figures) < 2:
        return []
    median = statistics.median(f["value"] for f in figures.values())
    slow = []
    for host, f in figures.items():
        high = f["ci95_high"] if f["ci95_high"] is not None else f["value"]
        if f["value"] < median and high < median:
            slow.append({"host": host, "throughput": f["value"], "ci95_low": f["ci95_low"], "ci95_high": f["ci95_high"],
                         "median_host": median, "below_median_pct": 100 * (1 - f["value"] / median)})
    return sorted(slow, key=lambda s: s["throughput"])


def describe(job: str, unit: str, s: dict) -> str:
    ci = (f", 95 % CI {s['ci95_low']:.3g}-{s['ci95_high']:.3g}" if s["ci95_low"] is not None else "")
    return (f"slow host {s['host']}: {job} {s['throughput']:.3g} {unit}{ci}, {s['below_median_pct']:.0f} % below "
            f"the median host ({s['median_host']:.3g})")
