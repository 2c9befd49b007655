"""`dnnbench report` and `compare`: statistics over runs, recomputed from the raw windows of
every result file (never from a summary someone wrote), grouped per system and job."""
from __future__ import annotations

import collections
import csv
import io
import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from dnnbench.workloads import schema

from dnnbench.console import number
from dnnbench.errors import DnnbenchError
from dnnbench.results.record import gpu_model, gpu_name, verdict_of

FORMATS = ("table", "csv", "md", "json", "html")


@dataclass
class Job:
    system: str
    job: str
    workload: str
    batch_size: int | None
    amp: str
    world_size: int
    unit: str
    model: str = ""                                       # GPU model(s) without the count, or CPU
    rates: list[float] = field(default_factory=list)     # one per ok run: total throughput
    efficiencies: list[float] = field(default_factory=list)  # scaling efficiency the runs measured
    failed: list[str] = field(default_factory=list)      # statuses of the runs that were not ok
    paths: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)    # one label per ok run (workloads/verdict.py)

    @property
    def n(self) -> int:
        return len(self.rates)

    @property
    def mean(self) -> float | None:
        return statistics.mean(self.rates) if self.rates else None

    @property
    def sd(self) -> float | None:
        return statistics.stdev(self.rates) if len(self.rates) > 1 else (0.0 if self.rates else None)

    @property
    def sd_pct(self) -> float | None:
        return 100 * self.sd / self.mean if self.mean else None


def find_results(paths: list[Path], skipped: list[tuple[str, str]] | None = None) -> list[Path]:
    """Every result.json named or under the folders named (links to folders not followed, so a
    link loop ends); folders that cannot be listed go to `skipped` as (path, why)."""
    import os
    files: list[Path] = []
    skipped = [] if skipped is None else skipped
    for p in paths:
        if p.is_dir():
            def unlisted(exc: OSError) -> None:
                skipped.append((str(exc.filename or p), f"cannot list it: {exc.strerror or exc}"))
            found = [Path(top) / schema.RESULT_FILE for top, dirs, names in os.walk(p, onerror=unlisted)
                     if schema.RESULT_FILE in names or schema.RESULT_FILE in dirs]
            files.extend(sorted(found))
        elif os.path.lexists(p):
            files.append(p)        # a file, or something read() refuses by name and reason
        else:
            raise DnnbenchError(f"{p} does not exist")
    if not files and not skipped:
        raise DnnbenchError(f"no {schema.RESULT_FILE} under {', '.join(map(str, paths))}")
    return files


def read_results(paths: list[Path], strict: bool = False) -> list[tuple[Path, dict]]:
    """The valid results under `paths`. Every file left out is named on stderr with why; with
    `strict`, any left out is an error (so statistics never quietly miss a run)."""
    from dnnbench.console import warn
    skipped: list[tuple[str, str]] = []
    results = []
    for path in find_results(paths, skipped):
        try:
            results.append((path, schema.read(str(path))))
        except ValueError as exc:
            text = str(exc)
            skipped.append((str(path), text[len(str(path)) + 2:] if text.startswith(f"{path}: ") else text))
        except OSError as exc:
            skipped.append((str(path), f"cannot read it: {exc.strerror or exc}"))
    for path, why in skipped:
        warn(f"skipped {path}: {why}")
    if skipped and strict:
        raise DnnbenchError(f"{len(skipped)} result file(s) skipped (named above) and --strict is set")
    if not results:
        raise DnnbenchError(f"no readable {schema.RESULT_FILE} under {', '.join(map(str, paths))}"
                            + (f" ({len(skipped)} skipped, named above)" if skipped else ""))
    return results


def job_name(data: dict) -> str:
    opts = data.get("options") or {}
    if data.get("job"):
        return data["job"]
    amp = opts.get("amp") or "none"
    return (f"{data['workload']}-bs{opts.get('batch_size', '?')}" + ("" if amp == "none" else f"-{amp}")
            + (f"-x{data.get('world_size')}" if data.get("world_size", 1) > 1 else ""))


def rate(data: dict) -> float | None:
    """Total throughput of one run, from its raw windows (parallel copies summed)."""
    tp = schema.throughput(data.get("windows") or [], int(data.get("world_size") or 1))["total"]["overall"]
    if tp is None:
        return None
    return tp + sum(rate(c) or 0 for c in data.get("copies") or [])


def collect(paths: list[Path], system: str | None = None, strict: bool = False) -> dict[tuple[str, str], Job]:
    """Jobs keyed by (system, job); `system` overrides the label (e.g. for compare)."""
    jobs: dict[tuple[str, str], Job] = {}
    for path, data in read_results(paths, strict):
        if data.get("copy_of"):
            continue   # counted in its parallel run's combined result
        opts = data.get("options") or {}
        label = system or data.get("system_label") or gpu_name(data)
        key = (label, job_name(data))
        job = jobs.setdefault(key, Job(system=label, job=key[1], workload=data["workload"],
                                       batch_size=opts.get("batch_size"), amp=opts.get("amp") or "none",
                                       world_size=int(data.get("world_size") or 1), unit=data.get("unit", ""),
                                       model=gpu_model(data)))
        job.paths.append(str(path))
        r = rate(data) if data["status"] == "ok" else None
        if r is None:
            job.failed.append(data["status"])
        else:
            job.rates.append(r)
            job.verdicts.append(verdict_of(data)["label"])
            if (data.get("scaling") or {}).get("efficiency"):
                job.efficiencies.append(data["scaling"]["efficiency"])
    return jobs


def load_baseline(path: Path, strict: bool = False) -> dict[str, float]:
    """Targets per job: a YAML/JSON mapping {job: throughput} (or {job: {throughput: x}}), or a
    results folder whose job means become the targets."""
    if path.is_dir():
        return {j.job: j.mean for j in collect([path], strict=strict).values() if j.mean}
    from dnnbench import yaml_files
    data = yaml_files.load(path, "baseline")
    if isinstance(data, dict) and "targets" in data:
        data = data["targets"]
    if not isinstance(data, dict):
        raise DnnbenchError(f"baseline {path}: expected a mapping of job -> throughput")
    out = {}
    for job, value in data.items():
        value = value.get("throughput") if isinstance(value, dict) else value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise DnnbenchError(f"baseline {path}: job {job!r} needs a finite positive throughput, got {value!r}")
        out[str(job)] = float(value)
    return out


def parse_weights(items: list[str]) -> dict[str, float]:
    weights = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            weights[name] = float(value)
        except ValueError:
            raise DnnbenchError(f"--weight expects JOB=NUMBER, got {item!r}") from None
        if not sep or not 0 <= weights[name] < math.inf:
            raise DnnbenchError(f"--weight expects JOB=NUMBER, a finite number >= 0, got {item!r}")
    return weights


def scaling_efficiency(j: Job, jobs: dict) -> float | None:
    """Throughput at N ranks / (N x one rank's): from a one-rank job of the same workload, batch
    size, precision and GPU model among these results, else what the runs measured themselves."""
    if j.world_size <= 1 or j.mean is None:
        return None
    for ref in jobs.values():
        if (ref.world_size == 1 and ref.mean and (ref.workload, ref.batch_size, ref.amp, ref.model)
                == (j.workload, j.batch_size, j.amp, j.model)):
            return j.mean / (j.world_size * ref.mean)
    return statistics.mean(j.efficiencies) if j.efficiencies else None


def job_verdict(labels: list[str]) -> str | None:
    """The runs' most common verdict, with its share when they disagree."""
    if not labels:
        return None
    label, k = collections.Counter(labels).most_common(1)[0]
    return label if k == len(labels) else f"{label} ({k}/{len(labels)})"


def rows(jobs: dict, baseline: dict | None, tolerance: float) -> list[dict]:
    out = []
    for (system, name), j in sorted(jobs.items()):
        row = {"system": system, "job": name, "workload": j.workload, "batch_size": j.batch_size, "amp": j.amp,
               "world_size": j.world_size, "unit": j.unit, "n": j.n, "failed": len(j.failed),
               "mean": j.mean, "sd": j.sd, "sd_pct": j.sd_pct, "scaling": scaling_efficiency(j, jobs),
               "verdict": job_verdict(j.verdicts)}
        if baseline is not None:
            target = baseline.get(name)
            row["target"] = target
            row["diff_pct"] = 100 * (j.mean / target - 1) if target and j.mean else None
            row["pass"] = (j.mean >= target * (1 - tolerance)) if target and j.mean else None
        out.append(row)
    return out


def score(table: list[dict], weights: dict[str, float]) -> float | None:
    """Weighted geometric mean of mean/target over the jobs that have both."""
    num = den = 0.0
    for r in table:
        if r.get("target") and r.get("mean"):
            w = weights.get(r["job"], weights.get(r["workload"], 1.0))
            num += w * math.log(r["mean"] / r["target"])
            den += w
    return math.exp(num / den) if den else None


def _fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "pass" if v else "FAIL"
    if isinstance(v, float):
        return number(v, digits)
    return str(v)


COLUMNS = [("system", "system"), ("job", "job"), ("n", "n"), ("failed", "failed"), ("mean", "mean"),
           ("sd", "sd"), ("sd_pct", "sd%"), ("unit", "unit"), ("verdict", "verdict")]
SCALING_COLUMNS = [("world_size", "ranks"), ("scaling", "scaling eff.")]
BASELINE_COLUMNS = [("target", "target"), ("diff_pct", "diff%"), ("pass", "pass")]


def columns(table: list[dict], with_baseline: bool) -> list[tuple[str, str]]:
    return COLUMNS + (SCALING_COLUMNS if any(r.get("scaling") for r in table) else []) \
        + (BASELINE_COLUMNS if with_baseline else [])


def cell(row: dict, key: str) -> str:
    return _fmt(row.get(key), 2 if key == "scaling" else 1)


def render(table: list[dict], fmt: str, *, total_score: float | None, with_baseline: bool) -> str | None:
    cols = columns(table, with_baseline)
    if fmt == "json":
        return json.dumps({"statistic": "total throughput per run (sum over ranks and copies), mean over runs",
                           "jobs": table, "score": total_score}, indent=1)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow([h for _, h in cols])
        for r in table:
            w.writerow(["" if r.get(k) is None else r.get(k) for k, _ in cols])
        return buf.getvalue()
    if fmt == "md":
        lines = ["| " + " | ".join(h for _, h in cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(cell(r, k) for k, _ in cols) + " |" for r in table]
        if total_score is not None:
            lines.append(f"\nscore (weighted geometric mean of mean/target): {total_score:.3f}")
        return "\n".join(lines) + "\n"
    if fmt == "table":
        from rich.table import Table

        from dnnbench.console import escape, out
        t = Table(title="dnnbench report (total throughput per run; mean, sd over runs)")
        for k, h in cols:
            t.add_column(h, justify="left" if k in ("system", "job", "unit") else "right", overflow="fold")
        for r in table:
            t.add_row(*[escape(cell(r, k)) for k, _ in cols])
        out.print(t)
        if total_score is not None:
            out.print(f"score (weighted geometric mean of mean/target): {total_score:.3f}")
        return None
    raise DnnbenchError(f"unknown format {fmt!r}: choose {', '.join(FORMATS)}")


def html_page(table: list[dict], pngs: list[Path], score: float | None, *, with_baseline: bool) -> str:
    """The report as one self-contained page (plots inlined), from templates/report.html.j2."""
    import base64
    from importlib import resources

    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources.files("dnnbench.templates"))),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    cols = columns(table, with_baseline)
    return env.get_template("report.html.j2").render(
        statistic=HTML_STATISTIC, headings=[h for _, h in cols],
        rows=[[cell(r, k) for k, _ in cols] for r in table], score=score,
        plots=[{"name": p.name, "data": base64.b64encode(p.read_bytes()).decode()} for p in pngs])


HTML_STATISTIC = ("Total throughput per run (summed over ranks and parallel copies), recomputed from each "
                  "result's timed windows; mean and sd over runs.")


def lambda_csv(jobs: dict) -> str:
    """Lambda-style: one row per system, one column per job, cells = mean throughput."""
    systems = sorted({s for s, _ in jobs})
    names = sorted({n for _, n in jobs})
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["system \\ job (mean total throughput, items/s)"] + names)
    for s in systems:
        w.writerow([s] + [("" if (s, n) not in jobs or jobs[(s, n)].mean is None else f"{jobs[(s, n)].mean:.2f}")
                          for n in names])
    return buf.getvalue()


def report_command(paths: list[Path], fmt: str, baseline: Path | None, weights: list[str], tolerance: float,
                   output: Path | None, plots: Path | None, wide_csv: Path | None, strict: bool = False) -> int:
    if fmt not in FORMATS:
        raise DnnbenchError(f"unknown format {fmt!r}: choose {', '.join(FORMATS)}")
    if not 0 <= tolerance < 1:
        raise DnnbenchError(f"--tolerance {tolerance}: give a fraction from 0 to below 1, e.g. 0.05")
    weights = parse_weights(weights)
    jobs = collect(paths, strict=strict)
    targets = load_baseline(baseline, strict) if baseline else None
    table = rows(jobs, targets, tolerance)
    total = score(table, weights) if targets else None
    if wide_csv:
        _write(wide_csv, lambda_csv(jobs))
    if plots or fmt == "html":
        from dnnbench.results.plots import write_plots
        folder = plots or (output.parent if output else Path("."))
        pngs = write_plots(jobs, folder)
        if fmt == "html":
            text = html_page(table, pngs, total, with_baseline=targets is not None)
            if output is None:
                output = folder / "report.html"
            _write(output, text)
            return _exit(table)
    text = render(table, fmt, total_score=total, with_baseline=targets is not None)
    if text is not None:
        if output:
            _write(output, text)
        else:
            import sys
            sys.stdout.write(text)
    return _exit(table)


def _exit(table: list[dict]) -> int:
    return 1 if any(r.get("pass") is False for r in table) else 0


def _write(path: Path, text: str) -> None:
    from dnnbench.console import info
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise DnnbenchError(f"cannot write {path}: {exc.strerror or exc}") from None
    info(f"wrote {path}")


def compare_command(a: Path, b: Path, strict: bool = False) -> None:
    from rich.table import Table

    from dnnbench.console import escape, out
    ja = {n: j for (_, n), j in collect([a], system="A", strict=strict).items()}
    jb = {n: j for (_, n), j in collect([b], system="B", strict=strict).items()}
    t = Table(title=escape(f"A = {a}   B = {b}   (mean total throughput)"))
    for h in ("job", "A", "sd% A", "B", "sd% B", "B/A"):
        t.add_column(h, justify="left" if h == "job" else "right")
    for name in sorted(set(ja) | set(jb)):
        x, y = ja.get(name), jb.get(name)
        ratio = y.mean / x.mean if x and y and x.mean and y.mean else None
        t.add_row(escape(name), _fmt(x.mean if x else None), _fmt(x.sd_pct if x else None),
                  _fmt(y.mean if y else None), _fmt(y.sd_pct if y else None), _fmt(ratio, 3))
    out.print(t)
