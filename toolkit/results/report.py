"""`dnnbench report` and `compare`: statistics over runs, recomputed from the raw windows of
every result file (never from a summary someone wrote), grouped per system and job."""
from __future__ import annotations

import collections
import csv
import io
import json
import math
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from dnnbench.workloads import fileio, schema

from dnnbench.console import visible
from dnnbench.containers.engines import lookup
from dnnbench.errors import DnnbenchError
from dnnbench.results.naming import image_digest
from dnnbench.results import baseline as baseline_mod, fleet, load, numbers
from dnnbench.results.formats import View, format_of
from dnnbench.results.formats.cells import fmt as _fmt
from dnnbench.results.job_names import column_name
from dnnbench.results.naming import gpu_model, gpu_name, job_name
from dnnbench.results.record import verdict_of
from dnnbench.workloads import busy



@dataclass
class Job:
    system: str
    job: str
    workload: str
    batch_size: int | None
    amp: str
    world_size: int
    unit: str
    image: str | None = None                              # the image it ran on (tag or .sif), part of its identity
    base: str | None = None
    model: str = ""                                       # GPU model(s) without the count, or CPU
    rates: list[float] = field(default_factory=list)     # one per ok run: its headline throughput
    results: list[dict] = field(default_factory=list)    # the ok runs themselves (their windows)
    efficiencies: list[float] = field(default_factory=list)  # scaling efficiency the runs measured
    failed: list[str] = field(default_factory=list)      # statuses of the runs that were not ok
    paths: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)    # one label per ok run (workloads/verdict.py)
    digests: list[str] = field(default_factory=list)     # the images by digest its runs recorded (exports label by it)
    # (how many results it was computed from, the headline): recomputed when more are added
    _headline: tuple[int, dict] | None = field(default=None, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.rates)

    @property
    def headline(self) -> dict:
        """The job's figure and its CI, median, sd and trimmed figures (numbers.job_headline)."""
        if self._headline is None or self._headline[0] != len(self.results):
            self._headline = (len(self.results), numbers.job_headline(self.results))
        return self._headline[1]

    @property
    def throughput(self) -> float | None:
        """The headline: items over seconds summed over every timed window of the job's runs."""
        return self.headline["value"]

    @property
    def sd(self) -> float | None:
        return self.headline["sd"]

    @property
    def sd_pct(self) -> float | None:
        return self.headline["sd_pct"]


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
    for name, why in skipped:
        warn(f"skipped {name}: {why}")
    if skipped and strict:
        raise DnnbenchError(f"{len(skipped)} result file(s) skipped (named above) and --strict is set")
    if not results:
        raise DnnbenchError(f"no readable {schema.RESULT_FILE} under {', '.join(map(str, paths))}"
                            + (f" ({len(skipped)} skipped, named above)" if skipped else ""))
    return results


def rate(data: dict) -> float | None:
    """Total throughput of one run, from its raw windows (parallel copies summed)."""
    return numbers.run_headline(data)["value"]


def _section(data: dict, name: str) -> dict:
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def image_of(data: dict) -> tuple[str | None, str | None]:
    """The image a run ran on (docker tag or .sif path; None on the host runtime) and its base."""
    host = _section(data, "host")
    image, base = host.get("image"), host.get("base")
    return (image if isinstance(image, str) and image else None), (base if isinstance(base, str) and base else None)


def machine_of(data: dict) -> str | None:
    """The machine a run ran on: what the host side recorded (`host.machine`: a container's own
    hostname is its id under docker), else the hostname the run saw where that is the machine's
    (Apptainer and the host runtime share it); None when unknown."""
    host = _section(data, "host")
    if isinstance(host.get("machine"), str) and host["machine"]:
        return host["machine"]
    engine = lookup(host.get("runtime")) if isinstance(host.get("runtime"), str) else None
    if engine is not None and not engine.sees_machine:
        return None      # an older docker result: its system.host is the container id
    system = _section(data, "system")
    return system.get("host") if isinstance(system.get("host"), str) else None


def collect(paths: list[Path], system: str | None = None, strict: bool = False) -> dict[tuple, Job]:
    """Jobs keyed by (system, job, image, base): runs of different images are never pooled;
    `system` overrides the label (e.g. for compare)."""
    from dnnbench.console import warn
    jobs: dict[tuple, Job] = {}
    seen: dict[tuple, Path] = {}
    for path, data in read_results(paths, strict):
        if data.get("copy_of"):
            continue   # counted in its parallel run's combined result
        # one run counts once, however often it is reached: `report R R`, a copied run folder
        # (the same run id, start time and windows), a folder named twice by different paths
        identity = (data.get("run_id"), data.get("started"), data.get("workload"),
                    json.dumps(data.get("windows"), sort_keys=True)[:100000])
        if identity in seen:
            if not fileio.same_file(seen[identity], path):
                warn(f"{path} is the same run as {seen[identity]} (run id {data.get('run_id')}, started "
                     f"{data.get('started')}): counted once")
            continue
        seen[identity] = path
        opts = data.get("options") or {}
        label = system or data.get("system_label") or gpu_name(data)
        image, base = image_of(data)
        key = (label, job_name(data), image, base)
        job = jobs.setdefault(key, Job(system=label, job=key[1], workload=data["workload"],
                                       batch_size=opts.get("batch_size"), amp=opts.get("amp") or "none",
                                       world_size=int(data.get("world_size") or 1), unit="",
                                       image=image, base=base, model=gpu_model(data)))
        job.paths.append(str(path))
        made_on = image_digest(data)
        if made_on and made_on not in job.digests:
            job.digests.append(made_on)
        r = rate(data) if data["status"] == "ok" else None
        if r is None:
            job.failed.append(data["status"])
        else:
            job.unit = job.unit or data.get("unit", "")   # an ok run's: a failed run never measured one
            job.rates.append(r)
            job.results.append({**numbers.essentials(data), "host": machine_of(data), "run_id": data.get("run_id"),
                                "busy": busy.of_result(data)})
            job.verdicts.append(verdict_of(data)["label"])
            if (data.get("scaling") or {}).get("efficiency"):
                job.efficiencies.append(data["scaling"]["efficiency"])
    return jobs


def load_baseline(path: Path, strict: bool = False) -> dict[str, float | baseline_mod.Bounds | baseline_mod.Measured]:
    """Targets per job: a YAML/JSON mapping {job: throughput} (or {job: {throughput: x}}, or
    ReFrame-style bounds {job: {target: x, lower: -0.05, upper: null}} / {job: {floor: x}}, see
    results/baseline.py), or a results folder whose jobs' figures become the targets."""
    if path.is_dir():      # its runs, each one observation (results/rounds.py judges them apart)
        return {j.job: baseline_mod.Measured(values=list(j.rates), loads=load.of_runs(j.results), target=j.throughput)
                for j in collect([path], strict=strict).values() if j.throughput}
    from dnnbench import yaml_files
    data = yaml_files.load(path, "baseline")
    if isinstance(data, dict) and "targets" in data:
        data = data["targets"]
    if not isinstance(data, dict):
        raise DnnbenchError(f"baseline {path}: expected a mapping of job -> throughput")
    out: dict[str, float | baseline_mod.Bounds | baseline_mod.Measured] = {}
    for job, value in data.items():
        if baseline_mod.is_bounds(value):
            out[str(job)] = baseline_mod.parse(path, str(job), value)
            continue
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
        from dnnbench.workloads.options import BY_NAME
        why = BY_NAME["weight"].problem(weights[name]) if sep else "no '='"
        if why:
            raise DnnbenchError(f"--weight expects JOB=NUMBER, got {item!r}: {why}")
    return weights


def scaling_efficiency(j: Job, jobs: dict) -> float | None:
    """Throughput at N ranks / (N x one rank's): from a one-rank job of the same workload, batch
    size, precision and GPU model among these results, else what the runs measured themselves."""
    if j.world_size <= 1 or j.throughput is None:
        return None
    for ref in jobs.values():
        if (ref.world_size == 1 and ref.throughput and (ref.workload, ref.batch_size, ref.amp, ref.model)
                == (j.workload, j.batch_size, j.amp, j.model)):
            return j.throughput / (j.world_size * ref.throughput)
    return statistics.mean(j.efficiencies) if j.efficiencies else None


def job_verdict(labels: list[str]) -> str | None:
    """The runs' most common verdict, with its share when they disagree."""
    if not labels:
        return None
    label, k = collections.Counter(labels).most_common(1)[0]
    return label if k == len(labels) else f"{label} ({k}/{len(labels)})"


def rows(jobs: dict, baseline: dict | None, tolerance: float) -> list[dict]:
    out = []
    for _, j in sorted(jobs.items(), key=lambda kv: tuple(str(k or "") for k in kv[0])):
        system, name = j.system, j.job
        row = {"system": system, "job": name, "image": j.image, "base": j.base, "workload": j.workload, "batch_size": j.batch_size, "amp": j.amp,
               "world_size": j.world_size, "unit": j.unit, "n": j.n, "failed": len(j.failed),
               "throughput": j.throughput, **_statistics(j.headline), "scaling": scaling_efficiency(j, jobs),
               "verdict": job_verdict(j.verdicts), **time_to_target(j.results),
               "slow_hosts": fleet.slow_hosts(j.results), "undecided_hosts": fleet.undecided(j.results),
               "ci_note": load.explain(j.headline, [w for r in j.results for w in r.get("windows") or []]),
               "busy": [r["busy"] for r in j.results if r.get("busy")], **exported(j)}
        if baseline is not None:
            row.update(baseline_mod.judge(baseline.get(name), j.results, j.headline, tolerance))
        out.append(row)
    if baseline is not None:     # a baseline job no result names: missing, and the gate fails
        ran = {j.job for j in jobs.values()}
        for name in sorted(set(baseline) - ran):
            row = {"system": "-", "job": name, "image": None, "base": None, "ci_note": None, "workload": None, "batch_size": None, "amp": None, "world_size": None,
                   "unit": None, "n": 0, "failed": 0, "throughput": None, **_statistics({}), "scaling": None,
                   "verdict": None, "digest": None, "gpu_model": None, "hosts": [], "seconds": 0}
            row.update(baseline_mod.judge(baseline[name], [], {}, tolerance))
            out.append(row)
    return out


def exported(j: Job) -> dict:
    """What JUnit and OpenMetrics label and time a job by (dnnbench.exports): the images by
    digest, the GPU model, the hosts its ok runs ran on, and the seconds its timed windows took."""
    seconds = sum(w.get("seconds") or 0 for r in j.results for w in r.get("windows") or []
                  if isinstance(w, dict) and isinstance(w.get("seconds"), (int, float)))
    return {"digest": ",".join(j.digests) or None, "gpu_model": j.model or None,
            "hosts": sorted({r["host"] for r in j.results if isinstance(r.get("host"), str)}), "seconds": seconds}


def time_to_target(results: list[dict]) -> dict:
    """A training job's time to its target as MLPerf reports it: with 5 or more runs that reached
    it, the olympic mean (the fastest and the slowest dropped, the rest averaged), else the mean;
    how many runs reached it, and the best evaluation of any (with its metric: top-1, HR@10). Empty
    for runs that did not train."""
    trainings = [r["training"] for r in results if isinstance(r.get("training"), dict)]
    if not trainings:
        return {}
    times = sorted(t["time_to_target_s"] for t in trainings if t.get("reached") and schema.finite(t.get("time_to_target_s")))
    kept = times[1:-1] if len(times) >= 5 else times
    bests = [t["best"] for t in trainings if schema.finite(t.get("best"))]
    return {"reached": f"{len(times)}/{len(trainings)}", "tta_s": statistics.fmean(kept) if kept else None,
            "tta_olympic": len(times) >= 5, "best": max(bests) if bests else None,
            "metric": schema.metric_name(trainings[0].get("metric"))}


def _statistics(h: dict) -> dict:
    keys = ("ci95_low", "ci95_high", "ci95_pct", "median", "windows", "sd", "sd_pct", "trimmed", "trimmed_n")
    return {k: h.get(k) for k in keys}


def score(table: list[dict], weights: dict[str, float]) -> float | None:
    """Weighted geometric mean of throughput/target over the jobs that have both."""
    num = den = 0.0
    for r in table:
        if r.get("target") and r.get("throughput"):
            w = weights.get(r["job"], weights.get(r["workload"], 1.0))
            num += w * math.log(r["throughput"] / r["target"])
            den += w
    return math.exp(num / den) if den else None


def render(table: list[dict], fmt: str, *, total_score: float | None, with_baseline: bool,
           wide: bool = False, pngs: list | None = None, sections: list | None = None) -> str | None:
    """The report in one of formats.FORMATS: the text to write, or None where it printed itself."""
    return format_of(fmt).render(View(table, total_score, with_baseline, wide, pngs or [], sections or []))


def lambda_csv(jobs: dict) -> str:
    """Lambda-style: one row per system, one column per job, cells = mean throughput."""
    by_cell = {(j.system, column_name(j, jobs)): j for j in jobs.values()}
    systems = sorted({s for s, _ in by_cell})
    names = sorted({n for _, n in by_cell})
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow([f"system \\ job (throughput, {numbers.STATISTIC}, items/s)"] + names)
    for s in systems:
        w.writerow([s] + [("" if (s, n) not in by_cell or by_cell[(s, n)].throughput is None
                           else f"{by_cell[(s, n)].throughput:.2f}")
                          for n in names])
    return buf.getvalue()


def report_command(paths: list[Path], fmt: str, baseline: Path | None, weights: list[str], tolerance: float,
                   output: Path | None, plots: Path | None, wide_csv: Path | None, strict: bool = False,
                   wide: bool = False, junit: Path | None = None, push: str | None = None,
                   html_extra=None) -> int:
    """The report. html_extra(page, jobs): what the caller adds to an html page (the CLI adds the
    published references, from the history store above this package)."""
    form = format_of(fmt)   # before any result is read
    if not 0 <= tolerance < 1:
        raise DnnbenchError(f"--tolerance {tolerance}: give a fraction from 0 to below 1, e.g. 0.05")
    weight_of = parse_weights(weights)
    jobs = collect(paths, strict=strict)
    # what was read is never written over: -o, --wide-csv and --plots are checked against every
    # input (result files, the folders named, the baseline) before anything is written
    inputs = [p for j in jobs.values() for p in j.paths] + list(paths) + ([baseline] if baseline else [])
    for out_path in (output, wide_csv, junit):
        if out_path is not None:
            _refuse_input(out_path, inputs)
    targets = load_baseline(baseline, strict) if baseline else None
    table = rows(jobs, targets, tolerance)
    total = score(table, weight_of) if targets else None
    if wide_csv:
        _write(wide_csv, lambda_csv(jobs))
    pngs = []
    if plots:
        from dnnbench.console import info
        from dnnbench.results.plots import write_plots
        pngs = write_plots(jobs, plots, inputs)
        for name, _ in pngs:          # what was written, by name: a user opens them next
            info(f"wrote {plots / name}")
    elif form.embeds_plots:
        from dnnbench.results.plots import plots as make_plots
        pngs = make_plots(jobs)        # in memory: the page embeds them, no PNG left beside it
    sections = []
    if form.embeds_plots:      # a page: the MLPerf scores the screen prints after its table
        from dnnbench.results.mlperf import score_tables
        sections = score_tables(jobs)
    text = render(table, fmt, total_score=total, with_baseline=targets is not None, wide=wide, pngs=pngs,
                  sections=sections)
    if form.name == "html" and text is not None and html_extra is not None:
        text = html_extra(text, jobs)
    if text is not None:
        if output:
            _write(output, text)
        else:
            import sys
            sys.stdout.write(text)
    if form.name == "table" and output is None:   # training jobs with MLPerf logs: their score
        from dnnbench.results.mlperf import print_scores
        print_scores(jobs)
    from dnnbench.exports import exported
    return exported(_exit(table), table, junit=junit, suite=paths[0].resolve().name if len(paths) == 1 else "report",
                    summary="dnnbench report against the baseline" if targets is not None else None,
                    push=push, group="dnnbench-report")


def _exit(table: list[dict]) -> int:
    return 1 if any(r.get("target_verdict") in ("fail", "missing") for r in table) else 0


def _refuse_input(path: Path, inputs: list) -> None:
    for src in inputs:
        src = Path(src)
        try:
            fileio.refuse_overwrite_of(path, [src])
        except OSError:
            raise DnnbenchError(f"{path} is an input of this report ({src}): write the output elsewhere") from None
        if src.is_dir() and not src.is_symlink() and os.path.realpath(path).startswith(
                os.path.realpath(src).rstrip(os.sep) + os.sep) and path.name == schema.RESULT_FILE:
            raise DnnbenchError(f"{path} would be read as a result of {src} next time: write the output elsewhere")


def _write(path: Path, text: str) -> None:
    from dnnbench.console import info
    try:
        fileio.make_dirs(str(path.parent))
        fileio.write_atomic_text(str(path), text)
    except OSError as exc:
        raise DnnbenchError(f"cannot write {path}: {exc.strerror or exc}") from None
    info(f"wrote {path}")


def compare_command(a: Path, b: Path, tolerance: float = 0.05, strict: bool = False,
                    wide: bool = False) -> dict[str, str]:
    """A and B side by side, job by job, with B/A, its 99 % interval over runs and a verdict
    (results/rounds.apart: measured apart, so never alternated); returns the verdicts."""
    from dnnbench.console import Column, escape, out, print_table
    from dnnbench.results import rounds
    found_a, found_b = collect([a], system="A", strict=strict), collect([b], system="B", strict=strict)
    ja = {column_name(j, found_a): j for j in found_a.values()}
    jb = {column_name(j, found_b): j for j in found_b.values()}
    columns = [Column("job", key=True), Column("A", right=True, rank=9), Column("+-95% A", right=True, rank=6),
               Column("B", right=True, rank=9), Column("+-95% B", right=True, rank=6),
               Column("B/A", right=True, headline=True), Column("B/A 99% CI", right=True, rank=7), Column("verdict", decides=True)]
    verdicts, cells, why = {}, [], []
    for name in sorted(set(ja) | set(jb)):
        x, y = ja.get(name), jb.get(name)
        hx, hy = (x.headline if x else {}), (y.headline if y else {})
        # each run's wall or contention-corrected figure, one basis for both sides
        runs_x, runs_y = ([numbers.run_headline(r) for r in job.results] if job else [] for job in (x, y))
        key, note = rounds.basis(runs_x + runs_y)
        j = rounds.apart([h[key] for h in runs_x if h[key]], [h[key] for h in runs_y if h[key]], tolerance,
                         loads_a=load.of_runs(x.results) if x else [], loads_b=load.of_runs(y.results) if y else [],
                         basis=note)
        verdicts[name] = "-" if j.ratio is None else j.verdict
        if j.ratio is not None and j.why and (j.verdict == "inconclusive" or j.basis):
            why.append(f"{name}: {j.verdict}: {j.why}")
        span = "-" if j.low is None or j.high is None else f"{j.low:.3f}-{j.high:.3f}"
        cells.append([escape(visible(name, one_line=True)), numbers.fmt(hx.get("value")), _fmt(hx.get("ci95_pct")),
                      numbers.fmt(hy.get("value")), _fmt(hy.get("ci95_pct")), _fmt(j.ratio, 3), span,
                      verdicts[name]])
    print_table(escape(f"A = {visible(a, one_line=True)}   B = {visible(b, one_line=True)}   (throughput = "
                       f"{numbers.STATISTIC}; verdict: the 99% interval of B/A over runs, measured apart, "
                       f"not alternated, within 1 +- {tolerance:g})"), columns, cells, wide=wide)
    for line in why:
        out.print(escape(visible(line, one_line=True)))
    return verdicts
