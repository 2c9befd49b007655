"""dnnbench.exports: JUnit XML read back by junitparser, OpenMetrics text by prometheus-client's
own parser, pushes to Debian's real Pushgateway (and Prometheus scraping it), the GitHub step
summary; hostile names and a gateway that is down or never answers."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import junitparser
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.parser import text_string_to_metric_families as prometheus_text_families

from dnnbench.exports import changes_out, junit, openmetrics, push as push_mod, watch_out
from tests.helpers import ROOT, cli_inprocess, dnnbench

FIXTURE = ROOT / "tests" / "fixtures" / "results" / "cpu-suite"
# names a user or a host can give: quotes, a newline, markup, 10,000 characters, a control
# character XML cannot hold, a lone surrogate no UTF-8 output can carry
HOSTILE = ['job "quoted" \'single\'', "two\nlines\r\tand tab", "<testcase name='x'>&amp;</testcase>", "a&b<c>d",
           "x" * 10_000, "bell\x07\x00nul", "\\back\\slash\\", "ünïcödé ✓", "lone \udc80 surrogate"]


def _row(name: str, **more) -> dict:
    return {"system": name, "job": name, "workload": name, "image": name, "base": None, "digest": f"sha256:{name}",
            "gpu_model": name, "hosts": [name, "node2"], "unit": "images/s", "n": 2, "failed": 0,
            "throughput": 123.5, "ci95_low": 120.0, "ci95_high": 127.0, "median": 123.0, "sd_pct": 1.5,
            "seconds": 4.25, **more}


def _properties(case: junitparser.TestCase) -> dict:
    """A testcase's properties as junitparser reads them (the last of a repeated name)."""
    found = case.child(junitparser.Properties)
    return {p.name: p.value for p in found.iterchildren(junitparser.Property)} if found is not None else {}


def _parse_junit(text: str, tmp_path: Path) -> junitparser.JUnitXml:
    path = tmp_path / "junit.xml"
    path.write_text(text, encoding="utf-8")
    return junitparser.JUnitXml.fromfile(str(path))


@pytest.mark.parametrize("name", HOSTILE)
def test_junit_carries_any_name_whole(name, tmp_path):
    xml = _parse_junit(junit.render({name: [_row(name)]}), tmp_path)
    suite = next(iter(xml))
    case = next(iter(suite))
    expected = junit_text(name)
    assert suite.name == expected and case.name == expected and case.classname == expected
    props = _properties(case)
    assert props["digest"] == f"sha256:{expected}" and props["throughput"] == "123.5"
    assert case.time == pytest.approx(4.25) and case.is_passed


def junit_text(name: str) -> str:
    """What XML can carry of a name: all of it (line breaks and tabs as character references)
    but for what XML 1.0 cannot hold at all, which becomes U+FFFD."""
    from dnnbench.exports.text import xml_text
    return xml_text(name)


def test_report_junit_outcomes(tmp_path):
    """A real report's rows: a baseline fail and a missing job are failures, an inconclusive
    verdict is skipped, a job with no ok run a failure, a pass passes; one testsuite per suite."""
    results = tmp_path / "cpu-suite"
    shutil.copytree(FIXTURE, results)
    damaged = results / "resnet18-ddp-bs2" / "r1" / "result.json"
    data = json.loads(damaged.read_text())
    data["status"] = "oom"
    damaged.write_text(json.dumps(data))
    baseline = tmp_path / "baseline.yaml"
    baseline.write_text("resnet18-bs4: 1000\nncf-bs64: {floor: 1}\ngone-bs1: 5\n")
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    code, _, err = cli_inprocess("report", results, "--baseline", baseline, "--junit", tmp_path / "out" / "j.xml",
                                 env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert code == 1, err                 # the baseline's fail decides the exit, as without --junit
    xml = _parse_junit((tmp_path / "out" / "j.xml").read_text(), tmp_path)
    suites = list(xml)
    assert [s.name for s in suites] == ["cpu-suite"]
    cases = {c.name: c for c in suites[0]}
    assert set(cases) == {"ncf-bs64", "resnet18-bs2", "resnet18-bs4", "resnet18-ddp-bs2", "gone-bs1"}

    def outcome(case):
        return type(case.result[0]).__name__ if case.result else "passed"
    assert outcome(cases["resnet18-bs4"]) == "Failure" and "baseline fail" in cases["resnet18-bs4"].result[0].message
    assert outcome(cases["gone-bs1"]) == "Failure"
    assert outcome(cases["resnet18-ddp-bs2"]) == "Failure" and cases["resnet18-ddp-bs2"].result[0].type == "run"
    assert outcome(cases["ncf-bs64"]) == "Skipped"        # one run: inconclusive against its floor
    assert outcome(cases["resnet18-bs2"]) == "passed"
    assert suites[0].tests == 5 and suites[0].failures == 3 and suites[0].skipped == 1
    props = _properties(cases["resnet18-bs4"])
    assert float(props["throughput"]) > 0 and props["unit"] == "images/s" and props["host"] == "vm"
    assert cases["resnet18-bs4"].time > 0          # the seconds of its timed windows
    text = summary.read_text()   # appended after what was there, a row per job
    assert text.startswith("earlier step\n### dnnbench report against the baseline")
    assert text.count("\n| CPU | resnet18-bs4 |") == 1 and "| fail |" in text


def test_report_openmetrics_parsed_by_prometheus_client():
    code, out, err = cli_inprocess("report", FIXTURE, "--format", "openmetrics")
    assert code == 0, err
    assert out.endswith("# EOF\n")
    families = {f.name: f for f in text_string_to_metric_families(out)}
    throughput = families["dnnbench_throughput_items_per_second"]
    assert throughput.type == "gauge" and throughput.unit == "items_per_second"
    jobs = {s.labels["dnnbench_job"]: s for s in throughput.samples}
    assert set(jobs) == {"ncf-bs64", "resnet18-bs2", "resnet18-bs4", "resnet18-ddp-bs2"}
    labels = jobs["resnet18-bs4"].labels
    assert labels["workload"] == "resnet18" and labels["gpu_model"] == "CPU" and labels["host"] == "vm"
    assert set(openmetrics.ROW_LABELS) <= set(labels)
    assert families["dnnbench_timed_seconds"].unit == "seconds"
    assert families["dnnbench_throughput_sd_ratio"].unit == "ratio"
    # the same figure as the JSON report: one number, two doors
    code, out, _ = cli_inprocess("report", FIXTURE, "--format", "json")
    rows = {r["job"]: r for r in json.loads(out)["jobs"]}
    assert jobs["resnet18-bs4"].value == pytest.approx(rows["resnet18-bs4"]["throughput"])


@pytest.mark.parametrize("name", HOSTILE)
def test_openmetrics_labels_carry_any_name(name):
    families = openmetrics.report_families([_row(name, target=100.0, diff_pct=23.5, target_verdict="pass")])
    parsed = {f.name: f for f in text_string_to_metric_families(openmetrics.text(families))}
    sample = parsed["dnnbench_throughput_items_per_second"].samples[0]
    from dnnbench.exports.text import label
    assert sample.labels["dnnbench_job"] == label(name) and sample.labels["host"] == f"{label(name)},node2"
    verdicts = {s.labels["verdict"]: s.value for s in parsed["dnnbench_baseline_verdict"].samples}
    assert verdicts == {"pass": 1, "fail": 0, "inconclusive": 0, "missing": 0}
    assert parsed["dnnbench_baseline_diff_ratio"].samples[0].value == pytest.approx(0.235)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def _until(what: str, check, seconds: float = 60.0):
    """Poll `check` until it returns something true, within a bound (a stuck daemon fails the
    test with `what`, never hangs it)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            got = check()
        except OSError:
            got = None
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds:.0f} s")


def _daemon(argv: list[str], ready: str, log: Path):
    """A daemon started and its readiness endpoint answering (or its exit, with its log)."""
    proc = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT)

    def up():
        if proc.poll() is not None:
            return "exited"
        with urllib.request.urlopen(ready, timeout=5) as r:
            return "ready" if r.status == 200 else None
    try:
        _until(f"{argv[0]} ready ({log})", up)
    except BaseException:
        proc.kill()
        raise
    assert proc.poll() is None, log.read_text()
    return proc


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """Debian's prometheus-pushgateway on a free loopback port, without persistence."""
    if shutil.which("prometheus-pushgateway") is None:
        pytest.fail("prometheus-pushgateway is not installed (scripts/dev-setup.sh installs it)")
    port = _free_port()
    log = tmp_path_factory.mktemp("gateway") / "gateway.log"
    proc = _daemon(["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}", "--persistence.file="],
                   f"http://127.0.0.1:{port}/-/ready", log)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


def _pushed(gateway: str) -> list:
    return list(prometheus_text_families(_get(f"{gateway}/metrics")))


def test_report_push_reaches_the_gateway_and_prometheus_scrapes_it(gateway, tmp_path):
    code, out, err = cli_inprocess("report", FIXTURE, "--format", "json", "--push", gateway)
    assert code == 0, err
    assert json.loads(out)["jobs"]                      # the report itself, as without --push
    families = {f.name: f for f in _pushed(gateway)}
    samples = [s for s in families["dnnbench_throughput_items_per_second"].samples
               if s.labels.get("job") == "dnnbench-report"]
    assert {s.labels["dnnbench_job"] for s in samples} == {"ncf-bs64", "resnet18-bs2", "resnet18-bs4",
                                                           "resnet18-ddp-bs2"}
    # Debian's Prometheus scrapes the gateway (honor_labels, as a Pushgateway wants) and its
    # HTTP API answers a query on the pushed figure
    if shutil.which("prometheus") is None:
        pytest.fail("prometheus is not installed (scripts/dev-setup.sh installs it)")
    port = _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(f"""global: {{scrape_interval: 1s}}
scrape_configs:
  - job_name: pushgateway
    honor_labels: true
    static_configs: [{{targets: ["{gateway.split('//')[1]}"]}}]
""")
    proc = _daemon(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{port}"], f"http://127.0.0.1:{port}/-/ready",
                   tmp_path / "prometheus.log")
    try:
        query = urllib.parse.quote('dnnbench_throughput_items_per_second{dnnbench_job="resnet18-bs4"}')

        def answered():
            data = json.loads(_get(f"http://127.0.0.1:{port}/api/v1/query?query={query}"))
            return data["data"]["result"]
        result = _until("Prometheus has scraped the pushed figure", answered)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert result[0]["metric"]["job"] == "dnnbench-report" and result[0]["metric"]["workload"] == "resnet18"
    pushed = next(s.value for s in samples if s.labels["dnnbench_job"] == "resnet18-bs4")
    assert float(result[0]["value"][1]) == pytest.approx(pushed)


@pytest.mark.parametrize("name", HOSTILE[:5])
def test_hostile_labels_survive_the_gateway(gateway, name):
    families = openmetrics.report_families([_row(name)])
    assert push_mod.push(gateway, families, "dnnbench-hostile")
    pushed = {f.name: f for f in _pushed(gateway)}
    got = [s for s in pushed["dnnbench_throughput_items_per_second"].samples
           if s.labels.get("job") == "dnnbench-hostile"]
    assert [s.labels["dnnbench_job"] for s in got] == [name] and got[0].value == 123.5


def test_watch_and_changes_push_their_verdicts(gateway, tmp_path):
    verdicts = [{"before": "img:1", "after": 'img:"2"\n', "why": "change detection", "verdict": "slower",
                 "pct": "-12.0 %", "stuck": ""},
                {"before": "img:3", "after": "img:4", "why": "newest release", "verdict": "same", "pct": "+0.1 %",
                 "stuck": ""}]
    summary = tmp_path / "summary.md"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GITHUB_STEP_SUMMARY", str(summary))
        assert watch_out("resnet50", verdicts, 1, gateway) == 1     # its own exit stands
        found = [{"job": "resnet50-bs64", "gpu": "H100 <SXM>", "change_pct": -8.0, "ci95_low_pct": -10.0,
                  "ci95_high_pct": -6.0, "p": 0.001, "before": {"image": "a|b"}, "after": {"image": "c"}}]
        assert changes_out(found, 3, 1, gateway) == 1
    pushed = {f.name: f for f in _pushed(gateway)}
    judged = {s.labels["after"]: s.labels["verdict"] for s in pushed["dnnbench_watch_verdict"].samples}
    assert judged == {'img:"2"\n': "slower", "img:4": "same"}
    assert [s.value for s in pushed["dnnbench_watch_slower_releases"].samples] == [1]
    assert pushed["dnnbench_change_ratio"].samples[0].value == pytest.approx(0.92)
    assert [s.value for s in pushed["dnnbench_changes_slowdowns"].samples] == [1]
    text = summary.read_text()
    assert "### dnnbench watch resnet50" in text and "| img:1 | img:\"2\"\\\\n | slower |" in text
    assert "H100 &lt;SXM&gt;" in text and "a\\|b" in text     # no name opens HTML or splits a row
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert all(line.count(" | ") == rows[0].count(" | ") for line in rows[:3])


def test_a_gateway_that_is_down_costs_one_line_and_exit_3(tmp_path):
    port = _free_port()                         # nothing listens there
    out_file = tmp_path / "report.md"
    code, _, err = cli_inprocess("report", FIXTURE, "-f", "md", "-o", out_file, "--junit", tmp_path / "j.xml",
                                 "--push", f"http://127.0.0.1:{port}")
    assert code == push_mod.PUSH_FAILED, err
    assert "| resnet18-bs4 |" in out_file.read_text() and (tmp_path / "j.xml").exists()   # nothing lost
    lines = [line for line in err.splitlines() if "push" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: push to http://127.0.0.1:") and "Traceback" not in err


def test_a_gateway_that_never_answers_is_given_up_on(tmp_path, monkeypatch):
    """A gateway that takes the connection and never answers: the push gives up at its limit."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    taken = []

    def accept():
        try:
            while True:
                taken.append(server.accept()[0])     # held open, never answered
        except OSError:
            pass
    threading.Thread(target=accept, daemon=True).start()
    monkeypatch.setattr(push_mod, "PUSH_S", 0.5)
    try:
        code, out, err = cli_inprocess("report", FIXTURE, "-f", "json", "--push",
                                       f"http://127.0.0.1:{server.getsockname()[1]}")
    finally:
        server.close()
        for conn in taken:
            conn.close()
    assert code == push_mod.PUSH_FAILED and json.loads(out)["jobs"]
    assert taken and "timed out" in err and err.count("push to") == 1


@pytest.mark.parametrize("url", ["gateway:9091", "ftp://x", "http://a b", "http://x/\n", ""])
def test_a_push_url_that_is_no_url_is_refused_before_anything(url, tmp_path):
    code, _, err = cli_inprocess("report", FIXTURE, "-o", tmp_path / "r.md", "--push", url)
    assert code == 2 and err.startswith("error: ") and "--push" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "r.md").exists()


@pytest.mark.parametrize("url", ["http://ci:s3cret@gateway:9091", "https://s3cret@gateway/x",
                                 "http://ci:s3cret@gate way", "http://a@b@s3cret@gateway:9091/"])
def test_a_push_url_with_a_password_is_refused_without_showing_it(url, tmp_path):
    code, _, err = cli_inprocess("report", FIXTURE, "-o", tmp_path / "r.md", "--push", url)
    assert code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert "s3cret" not in err and "***@" in err and not (tmp_path / "r.md").exists()


@pytest.mark.parametrize("command", ["report", "suite"])
@pytest.mark.parametrize("target", ["folder", "under-a-file", "empty"])
def test_a_junit_file_that_cannot_be_written_is_refused_before_anything(command, target, tmp_path):
    """--junit is checked as it is parsed: no report written, no suite started (a suite of hours
    used to run whole, then end in "cannot write" and exit 2)."""
    (tmp_path / "a-file").write_text("")
    junit_path = {"folder": tmp_path, "under-a-file": tmp_path / "a-file" / "j.xml", "empty": ""}[target]
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\ndefaults: {runtime: host}\njobs:\n  - {workload: resnet18, batch_size: 2}\n")
    args = (["report", FIXTURE, "-o", tmp_path / "r.md"] if command == "report"
            else ["suite", "run", suite, "--results", tmp_path / "results"])
    code, _, err = cli_inprocess(*args, "--junit", junit_path)
    assert code == 2 and err.startswith("error: Invalid value for '--junit'") and len(err.splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "s.yaml"]


def test_a_bad_push_url_from_the_real_entry_point(tmp_path):
    res = dnnbench("history", "changes", "--push", "gateway:9091", "--db", tmp_path / "h.db")
    assert res.returncode == 2 and res.stderr.startswith("error: Invalid value for '--push'") and \
        len(res.stderr.splitlines()) == 1 and not (tmp_path / "h.db").exists()


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(max_size=300), host=st.text(max_size=50))
def test_any_text_survives_both_doors(name, host, tmp_path):
    """Generated names: what the JUnit reader and the OpenMetrics parser read back is the name,
    but for what XML cannot hold at all (U+FFFD) and lone surrogates (U+FFFD)."""
    from dnnbench.exports.text import label, xml_text
    row = dict(_row(name), hosts=[host])
    xml = _parse_junit(junit.render({"s": [row]}), tmp_path)
    case = next(iter(next(iter(xml))))
    assert case.name == xml_text(name) and _properties(case)["host"] == xml_text(host)
    parsed = {f.name: f for f in text_string_to_metric_families(openmetrics.text(openmetrics.report_families([row])))}
    sample = parsed["dnnbench_throughput_items_per_second"].samples[0]
    assert sample.labels["dnnbench_job"] == label(name) and sample.labels["host"] == label(host)
