"""JUnit XML: one testsuite per suite (or results folder), one testcase per job, as CI systems
read it (GitLab, Jenkins, GitHub's test reporters). A job's time is the seconds of its timed
windows; its figures are properties; a job with no ok run, or one that fails its baseline,
is a failure; one whose verdict against the baseline is inconclusive is skipped."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from .text import xml_text

# the row fields (results/report.rows) a testcase carries as properties, where they are known
PROPERTIES = ("throughput", "unit", "ci95_low", "ci95_high", "median", "sd_pct", "n", "failed", "scaling",
              "tta_s", "best", "target", "diff_pct", "target_verdict", "digest", "gpu_model", "workload",
              "system", "image", "base")


def _case(suite: ET.Element, row: dict) -> str:
    """One job's testcase; returns its outcome: passed, failure or skipped."""
    case = ET.SubElement(suite, "testcase", name=xml_text(row.get("job")),
                         classname=xml_text(row.get("system") or "-"), time=f"{float(row.get('seconds') or 0):.3f}")
    props = ET.SubElement(case, "properties")
    for key in PROPERTIES:
        value = row.get(key)
        if value is not None and value != "":
            ET.SubElement(props, "property", name=key, value=xml_text(f"{value:.6g}" if isinstance(value, float)
                                                                       else value))
    for host in row.get("hosts") or []:
        ET.SubElement(props, "property", name="host", value=xml_text(host))
    verdict = row.get("target_verdict")
    if verdict in ("fail", "missing"):
        why = ("no result of this job" if verdict == "missing" else
               f"{row.get('diff_pct') or 0:+.1f} % against target {row.get('target')}: below it")
        failure = ET.SubElement(case, "failure", message=xml_text(f"baseline {verdict}: {why}"), type="baseline")
        failure.text = xml_text(f"{row.get('job')}: baseline {verdict} ({row.get('bounds') or row.get('target')})")
        return "failure"
    if not row.get("n") and row.get("failed"):
        failure = ET.SubElement(case, "failure", message=xml_text(f"no ok run: {row.get('failed')} failed"),
                                type="run")
        failure.text = xml_text(f"{row.get('job')}: every run failed ({row.get('failed')})")
        return "failure"
    if verdict == "inconclusive":
        ET.SubElement(case, "skipped", message=xml_text(f"inconclusive against the baseline: "
                                                          f"{row.get('target_why') or 'the interval straddles it'}"))
        return "skipped"
    return "passed"


def render(suites: dict[str, list[dict]]) -> str:
    """The XML of {suite name: its report rows}."""
    root = ET.Element("testsuites", name="dnnbench")
    totals = {"tests": 0, "failures": 0, "skipped": 0, "time": 0.0}
    for name, table in suites.items():
        suite = ET.SubElement(root, "testsuite", name=xml_text(name))
        outcomes = [_case(suite, row) for row in table]
        counts = {"tests": len(outcomes), "failures": outcomes.count("failure"),
                  "skipped": outcomes.count("skipped"), "time": sum(float(r.get("seconds") or 0) for r in table)}
        for key, value in counts.items():
            suite.set(key, f"{value:.3f}" if key == "time" else str(value))
            totals[key] += value
        suite.set("errors", "0")
    for key, value in totals.items():
        root.set(key, f"{value:.3f}" if key == "time" else str(int(value)))
    root.set("errors", "0")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def check_target(path) -> None:
    """Where --junit will write, checked before the command's work (a suite of hours must not end
    in "cannot write"): nothing there but a file, under a folder that is one or can be made."""
    import os
    from pathlib import Path

    from dnnbench.errors import DnnbenchError
    from dnnbench.workloads import fileio
    for parent in Path(path).absolute().parents:      # the nearest that exists must be a folder
        if os.path.lexists(parent):
            if not os.path.isdir(parent):
                raise DnnbenchError(f"{str(path)!r}: {parent} is {fileio.kind_at(str(parent))}, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise DnnbenchError(f"{str(path)!r}: cannot write in {parent}")
            break
    kind = fileio.kind_at(str(path))
    if kind not in ("missing", "a regular file", "a symbolic link"):
        raise DnnbenchError(f"{str(path)!r}: {kind} is there, not a file")


def write(path, suites: dict[str, list[dict]]) -> None:
    """The XML written whole (atomically) to `path`; one error line when it cannot be."""
    from pathlib import Path

    from dnnbench.console import info
    from dnnbench.errors import DnnbenchError
    from dnnbench.workloads import fileio
    text = render(suites)
    try:
        fileio.make_dirs(str(Path(path).parent))
        fileio.write_atomic_text(str(path), text)
    except OSError as exc:
        raise DnnbenchError(f"cannot write {path}: {exc.strerror or exc}") from None
    info(f"wrote {path} (JUnit: {sum(len(t) for t in suites.values())} test cases)")
