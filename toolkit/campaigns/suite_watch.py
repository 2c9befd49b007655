"""A suite's `watch:` list: each entry is a `dnnbench watch` (campaigns/watch.py, the one
mechanism) over its releases, run after the suite's jobs in RESULTS/<suite>/watch/<name>/, so the
same `suite run --resume` reads its finished runs back as the watch itself does."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from dnnbench.errors import DnnbenchError

FOLDER = "watch"     # RESULTS/<suite>/watch/<entry name>/: the watch's --results and --run-id
# the suite's `defaults:` a watch takes (a watch does not sweep, repeat, run a script or an image)
FROM_DEFAULTS = ("workload", "batch_size", "amp", "options", "data", "gpus", "runtime")


@dataclass
class Entry:
    name: str
    workload: str
    images: list[str] | None
    bases: str | None
    releases: list[tuple[str, str | None]]     # bisect.image_list's: (image ref, base or None)
    every: int
    rounds: int | None
    tolerance: float
    spec: dict = field(default_factory=dict)   # batch_size, amp, options, data, gpus, runtime


@dataclass
class Outcome:
    entry: Entry
    status: str          # slower, nothing, failed, interrupted
    said: str = ""       # the slower release(s), or why it failed


def load(doc, path: Path, defaults: dict) -> list[Entry]:
    """The `watch:` entries, each checked as a job is (file:line), defaults merged, its list of
    releases and the watch's own arguments checked as `dnnbench watch` checks them."""
    from dnnbench import names
    from dnnbench.campaigns import suite_schema
    top = getattr(doc, "key_lines", {})
    entries: list[Entry] = []
    for raw in doc.get("watch") or []:
        line = getattr(raw, "line", top.get("watch", 1))
        if not isinstance(raw, dict):
            raise DnnbenchError(f"{path}:{line}: each watch entry is a mapping with `workload:` and `images:` "
                                f"or `bases:`")
        where = lambda key: f"{path}:{getattr(raw, 'key_lines', {}).get(key, line)}"  # noqa: E731
        own = suite_schema.check_watch(raw, where)
        entry = _entry(own, defaults, where)
        try:
            names.path_component(entry.name, "watch entry name")
        except DnnbenchError as exc:
            raise DnnbenchError(f"{where('name')}: {exc}") from None
        if any(e.name == entry.name for e in entries):
            raise DnnbenchError(f"{where('name')}: watch entry {entry.name!r} appears twice; give one a `name:`")
        entries.append(entry)
    return entries


def _entry(own: dict, defaults: dict, where) -> Entry:
    from dnnbench.containers.engines import lookup
    from dnnbench.lists import members
    from dnnbench.campaigns import bisect
    from dnnbench.runs.checks import check_options
    from dnnbench.runs.options import RunOptions
    from dnnbench.workloads import WORKLOADS
    from dnnbench.workloads.options import BY_NAME
    tolerance = own.get("tolerance", BY_NAME["tolerance"].default)   # `dnnbench watch --tolerance`'s default
    taken = {k: defaults[k] for k in FROM_DEFAULTS if defaults.get(k) is not None}
    spec = {**taken, **own, "options": {**taken.get("options", {}), **own.get("options", {})}}
    workload = spec.get("workload")
    if workload not in WORKLOADS:
        close = difflib.get_close_matches(str(workload), list(WORKLOADS), n=2)
        raise DnnbenchError(f"{where('workload')}: " + ("a watch entry needs `workload:`" if workload is None
                                                        else f"unknown workload {workload!r}")
                            + (f"; did you mean {', '.join(close)}?" if close else ""))
    for key in ("batch_size", "amp"):    # a list in the defaults is a job's sweep
        if isinstance(spec.get(key), list):
            raise DnnbenchError(f"{where(key)}: a watch runs one {key} and the defaults give a list: "
                                f"give `{key}:` here")
    engine = lookup(spec.get("runtime") or "docker")
    if engine is not None and not engine.contained:
        raise DnnbenchError(f"{where('runtime')}: a watch compares images in containers: runtime docker or "
                            f"singularity")
    images, bases = own.get("images"), own.get("bases")
    if (images is None) == (bases is None):
        raise DnnbenchError(f"{where('images' if images is not None else 'workload')}: a watch entry takes "
                            f"`images:` (in release order) or `bases:` (X..Y), one of the two")
    key = "images" if images is not None else "bases"
    releases: list = []
    checks = ((key, lambda: releases.extend(bisect.image_list(images, bases))),
              ("tolerance", lambda: bisect.job_template(RunOptions(workload=workload), tolerance)),
              ("options", lambda: check_options(RunOptions(workload=workload, batch_size=spec.get("batch_size"),
                                                           amp=spec.get("amp"), **spec["options"]))))
    if isinstance(images, str):
        try:
            images = members(images, "images:")
        except DnnbenchError as exc:
            raise DnnbenchError(f"{where(key)}: {exc}") from None
    for at, check in checks:    # the watch's own checks, now rather than after the suite's jobs
        try:
            check()
        except DnnbenchError as exc:
            raise DnnbenchError(f"{where(at)}: {exc}") from None
    return Entry(name=spec.get("name") or workload, workload=workload, images=images, bases=bases,
                 releases=releases, every=spec.get("every") or 1, rounds=spec.get("rounds"), tolerance=tolerance,
                 spec={k: spec.get(k) for k in ("batch_size", "amp", "options", "data", "gpus", "runtime")})


def folder(suite_dir: Path, entry: Entry) -> Path:
    return suite_dir / FOLDER / entry.name


def options(entry: Entry, suite_dir: Path, overrides: dict):
    """The watch's options, as `dnnbench watch` makes them from its command line: the suite's
    --runtime, --env and harness options (--until-ci) over the entry's."""
    from dnnbench.runs.options import RunOptions
    from dnnbench.campaigns.suite_schema import OPTION_NAMES
    spec = entry.spec
    given = lambda key: overrides[key] if overrides.get(key) is not None else spec["options"].get(key)  # noqa: E731
    data, gpus = spec.get("data"), spec.get("gpus")
    return RunOptions(workload=entry.workload, data=Path(data) if data else None,
                      gpus=None if gpus is None else str(gpus),
                      runtime=overrides.get("runtime") or spec.get("runtime") or "docker",
                      results=suite_dir / FOLDER, run_id=entry.name,
                      env=dict(overrides.get("env") or {}), batch_size=spec.get("batch_size"), amp=spec.get("amp"),
                      **{key: given(key) for key in OPTION_NAMES})


def preflight(entries: list[Entry], suite_dir: Path, overrides: dict) -> set[str]:
    """Every release's plan of every entry checked as `dnnbench watch` checks them before its
    first run; the runtimes they need."""
    import dataclasses

    from dnnbench.containers.engines import named
    from dnnbench.campaigns import bisect
    runtimes = set()
    for e in entries:
        template = bisect.job_template(options(e, suite_dir, overrides), e.tolerance)
        template = dataclasses.replace(template, run_id=e.name)
        try:
            if not named(template.runtime).contained:    # `suite run --runtime host`
                raise DnnbenchError(f"runtime {template.runtime}: a watch compares images in containers "
                                    f"(docker or singularity)")
            bisect.check_first(template, e.releases, folder(suite_dir, e))
        except DnnbenchError as exc:
            raise DnnbenchError(f"watch {e.name}: {exc}") from None
        runtimes.add(named(template.runtime).name)
    return runtimes


def check_store() -> None:
    """The store a watch records in and reads from, refused in one line before the suite's
    first run rather than after its jobs (as `dnnbench watch` refuses it before its first)."""
    from dnnbench.history import store
    store.Store(create=True).close()


def run(entry: Entry, suite_dir: Path, overrides: dict) -> Outcome:
    """One entry through `dnnbench watch`'s own code; a failure is its outcome, never raised,
    except an interruption (the suite stops there, as for a job)."""
    from dnnbench.campaigns.watch import Verdict, watch_command
    judged: list[Verdict] = []
    try:
        watch_command(options(entry, suite_dir, overrides), entry.images, entry.bases, entry.tolerance,
                      entry.rounds, entry.every, judged=judged)
    except KeyboardInterrupt:
        return Outcome(entry, "interrupted")
    except DnnbenchError as exc:
        return Outcome(entry, "interrupted" if exc.exit_code == 130 else "failed", str(exc))
    slower = [v for v in judged if v.verdict == "slower"]
    if not slower:
        return Outcome(entry, "nothing")
    said = []
    for v in slower:
        a, b = entry.releases[v.lo][0], entry.releases[v.hi][0]
        said.append(f"{b} (after {a}): {v.pct}" if not v.stuck else f"after {a}, up to {b}: {v.pct}")
    return Outcome(entry, slower[0].verdict, "; ".join(said))    # the rule's own word (results/rounds.py)


def show(outcomes: list[Outcome]) -> None:
    """One row per watch entry: what it found, at 80 columns."""
    from dnnbench.console import Column, escape, print_table
    words = {"slower": "slower: ", "nothing": "no slower release found", "failed": "failed: ",
             "interrupted": "interrupted"}
    rows = [[escape(o.entry.name), str(len(o.entry.releases)), escape(words[o.status] + o.said)] for o in outcomes]
    print_table("watch list", [Column("watch", key=True), Column("releases", right=True, rank=2),
                               Column("found", decides=True)], rows)
