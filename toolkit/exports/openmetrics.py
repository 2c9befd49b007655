"""OpenMetrics text of dnnbench's figures, through prometheus-client: one gauge family per
figure, units in the names as Prometheus names them (`_seconds`, `_ratio`, `_items_per_second`),
every series labelled by the job, its workload, the image by digest, the GPU model and the
hosts. The job's label is `dnnbench_job`: `job` and `instance` are the labels Prometheus and
the Pushgateway set themselves, and a pushed metric carrying its own `job` would be refused."""
from __future__ import annotations

from dataclasses import dataclass, field

from dnnbench.results import rounds

from .text import label

PREFIX = "dnnbench_"
# a report row's labels: what names the job's series (system, image and base keep two rows of
# one job apart, as the report keeps them apart)
ROW_LABELS = ("dnnbench_job", "workload", "system", "image", "base", "image_digest", "gpu_model", "host", "unit")


@dataclass
class Family:
    """One figure: its name (without the prefix), unit, help and samples (labels, value)."""
    name: str
    help: str
    labels: tuple[str, ...]
    unit: str = ""
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)

    def add(self, values: tuple, value) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
            self.samples.append((tuple(label(v) for v in values), float(value)))


class _Collector:
    def __init__(self, families: list[Family]):
        self.families = families

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily
        for f in self.families:
            if not f.samples:
                continue
            gauge = GaugeMetricFamily(PREFIX + f.name, f.help, labels=list(f.labels), unit=f.unit)
            for values, value in f.samples:
                gauge.add_metric(list(values), value)
            yield gauge


def registry(families: list[Family]):
    """A prometheus-client registry holding these families (what `text` writes and `push` sends)."""
    from prometheus_client import CollectorRegistry
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Collector(families))
    return reg


def text(families: list[Family]) -> str:
    """The OpenMetrics exposition of the families, ending in `# EOF`."""
    from prometheus_client.openmetrics.exposition import generate_latest
    return generate_latest(registry(families)).decode("utf-8")


def _ratio(pct):
    return pct / 100 if isinstance(pct, (int, float)) else None


# a report row's figures: (family name, unit, help, the value from the row)
REPORT_FIGURES = (
    ("throughput", "items_per_second", "Throughput: items over seconds summed over every timed window of the "
     "job's runs (sum_items/sum_seconds).", lambda r: r.get("throughput")),
    ("throughput_ci95_low", "items_per_second", "Lower end of the throughput's 95% CI.", lambda r: r.get("ci95_low")),
    ("throughput_ci95_high", "items_per_second", "Upper end of the throughput's 95% CI.",
     lambda r: r.get("ci95_high")),
    ("throughput_window_median", "items_per_second", "Median throughput of the timed windows.",
     lambda r: r.get("median")),
    ("throughput_sd", "ratio", "Standard deviation over runs, as a fraction of the mean.",
     lambda r: _ratio(r.get("sd_pct"))),
    ("scaling_efficiency", "ratio", "Throughput at N ranks over N times one rank's.", lambda r: r.get("scaling")),
    ("time_to_target", "seconds", "Time to the target accuracy (MLPerf's olympic mean from 5 runs).",
     lambda r: r.get("tta_s")),
    ("timed", "seconds", "Seconds of timed windows behind the figures.", lambda r: r.get("seconds")),
    ("runs", "", "Runs that ended ok (each one observation).", lambda r: r.get("n")),
    ("failed_runs", "", "Runs that did not end ok (nan, oom, error, timeout).", lambda r: r.get("failed")),
    ("baseline_target", "items_per_second", "The baseline's target throughput.", lambda r: r.get("target")),
    ("baseline_diff", "ratio", "Throughput against the baseline's target, minus one.",
     lambda r: _ratio(r.get("diff_pct"))),
)
VERDICTS = (*dict.fromkeys(rounds.GATE.values()), "missing")   # the rule's gate words, and a job no result names


def report_families(table: list[dict]) -> list[Family]:
    """A report's rows (results/report.rows) as families, one per figure."""
    families = [Family(name, text_, ROW_LABELS, unit) for name, unit, text_, _ in REPORT_FIGURES]
    verdict = Family("baseline_verdict", "The verdict against the baseline: 1 for the one given, 0 for the others.",
                     ROW_LABELS + ("verdict",))
    for r in table:
        values = (r.get("job"), r.get("workload"), r.get("system"), r.get("image"), r.get("base"), r.get("digest"),
                  r.get("gpu_model"), ",".join(r.get("hosts") or []), r.get("unit"))
        for family, (_, _, _, get) in zip(families, REPORT_FIGURES):
            family.add(values, get(r))
        if r.get("target_verdict") in VERDICTS:
            for v in VERDICTS:
                verdict.add(values + (v,), int(v == r["target_verdict"]))
    return families + [verdict]


def watch_families(workload: str, job: str | None, verdicts: list[dict]) -> list[Family]:
    """`watch`'s verdicts: each suspected slowdown judged (last good and first slower release,
    its rounds' verdict), and how many slower releases were found (0 too: an alert can say
    the watch ran)."""
    labels = ("dnnbench_job", "workload", "before", "after", "suspected_by", "verdict")
    judged = Family("watch_verdict", "A suspected slowdown as the rounds judged it (1 for each).", labels)
    for v in verdicts:
        judged.add((job, workload, v["before"], v["after"], v["why"], v["verdict"]), 1)
    found = Family("watch_slower_releases", "Releases the watch found slower than the one before them.",
                   ("dnnbench_job", "workload"))
    found.add((job, workload), sum(1 for v in verdicts if v["verdict"] == "slower"))
    return [judged, found]


def changes_families(found: list[dict], series: int) -> list[Family]:
    """`history changes`: each lasting change (its ratio and 95% CI, p), and how many slowdowns."""
    labels = ("dnnbench_job", "gpu_model", "before", "after")
    ratio = Family("change", "After over before, at a lasting change.", labels, "ratio")
    low = Family("change_ci95_low", "Lower end of the change's 95% CI.", labels, "ratio")
    high = Family("change_ci95_high", "Upper end of the change's 95% CI.", labels, "ratio")
    p = Family("change_p_value", "The change's p-value.", labels)
    for f in found:
        values = (f["job"], f["gpu"], (f.get("before") or {}).get("image"), (f.get("after") or {}).get("image"))
        ratio.add(values, 1 + f["change_pct"] / 100)
        low.add(values, 1 + f["ci95_low_pct"] / 100)
        high.add(values, 1 + f["ci95_high_pct"] / 100)
        p.add(values, f["p"])
    slower = Family("changes_slowdowns", "Lasting changes whose whole 95% CI lies below no change.", ())
    slower.add((), sum(1 for f in found if rounds.slowdown(f)))
    looked = Family("changes_series", "Series (job and GPU model) looked at.", ())
    looked.add((), series)
    return [ratio, low, high, p, slower, looked]
