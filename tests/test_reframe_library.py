"""dnnbench's ReFrame test library (toolkit/reframe/) run by the real ReFrame (reframe-hpc): the
smoke check on this machine's `local` partition and on the namespace Slurm cluster in Apptainer,
a site's reference that the run misses failing ReFrame's performance check, a reference from the
history store, training to a target, and bad input. The figures are read back from ReFrame's
own perflog and checked against what dnnbench's report says of the same result."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from dnnbench.reframe import CHECKS
from tests.helpers import ROOT, dnnbench

pytest.importorskip("reframe")   # a test dependency (pyproject's test extra); never skipped in CI

# ReFrame's own entry point in this Python: the checkout's dnnbench is the one it loads
REFRAME = [sys.executable, "-c", "import sys; from reframe.frontend.cli import main; sys.argv[0] = 'reframe'; "
                                 "sys.exit(main())"]
FIXTURES = ROOT / "tests" / "fixtures" / "results" / "cpu-suite"

# A site's configuration, as a ReFrame user writes one: this machine as a `local` partition; the
# namespace cluster as a Slurm partition with the Apptainer container platform. The cluster keeps
# no accounting (sacct: "Slurm accounting storage is disabled"), so ReFrame polls it with its
# `squeue` scheduler: the same Slurm backend and job script as `slurm`, which reads sacct.
LOCAL = {"name": "local", "scheduler": "local", "launcher": "local", "environs": ["builtin"], "max_jobs": 1}
SLURM = {"name": "debug", "scheduler": "squeue", "launcher": "srun", "access": ["--partition=debug"],
         "environs": ["builtin"], "container_platforms": [{"type": "Apptainer"}], "max_jobs": 1}

# A site's own checks on top of the library: a reference this CPU cannot reach, and one from
# the history store (bounds wide enough that any measured figure passes: the point is its value)
SITE = '''
import reframe as rfm
from dnnbench.reframe.library import DnnbenchSmoke


@rfm.simple_test
class site_too_slow(DnnbenchSmoke):
    reference = {"dnnbench-test:local": {"throughput": (1e6, -0.1, None, "images/s")}}


@rfm.simple_test
class site_from_history(DnnbenchSmoke):
    reference_job = "resnet18-bs4"
    reference_lower = -1.0
'''

# A stand-in for dnnbench that writes a recorded result where the check looks for it, without
# its timed windows with `bare` (as a damaged or foreign result file would be): what the
# check reads of a result, without a run
STAND_IN = f'''
import json, os, sys
args = sys.argv[1:]
folder = os.path.join(args[args.index("--results") + 1], args[args.index("--run-id") + 1])
data = json.load(open({str(FIXTURES / "resnet18-bs4" / "r1" / "result.json")!r}))
if os.environ.get("BARE"):
    data["windows"] = []
os.makedirs(folder)
json.dump(data, open(os.path.join(folder, "result.json"), "w"))
'''


def _reframe(where: Path, partition: dict | None, *args, env=None, timeout=600, action="-r"):
    """`reframe -C SITE ... -r` with everything it writes under `where` (its log file, the
    topology it detects; never under ~/.reframe); without a partition, on ReFrame's generic
    system (the configuration then names no system)."""
    where.mkdir(parents=True, exist_ok=True)
    config = where / "site.py"
    systems = [{"name": "dnnbench-test", "descr": "dnnbench's tests", "hostnames": [".*"], "partitions": [partition]}]
    config.write_text("site_configuration = " + repr({"general": [{"topology_prefix": str(where / "topology")}],
                                                      **({"systems": systems} if partition else {})}))
    res = subprocess.run([*REFRAME, "-C", str(config), "--prefix", str(where / "rfm"),
                          "--report-file", str(where / "report.json"), *args, action],
                         cwd=where, capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, "TMPDIR": str(where), **(env or {})})
    report = json.loads((where / "report.json").read_text()) if (where / "report.json").exists() else {}
    cases = {c["display_name"]: c for run in report.get("runs", []) for c in run["testcases"]}
    return res, cases


def _perflog(where: Path, partition: str, check: str) -> list[dict]:
    """ReFrame's perflog of a check: its header names the columns, one line per run."""
    lines = (where / "rfm" / "perflogs" / "dnnbench-test" / partition / f"{check}.log").read_text().splitlines()
    header = lines[0].split("|")
    return [dict(zip(header, line.split("|"))) for line in lines[1:]]


def _report_figures(result: Path) -> dict:
    """The run as `dnnbench report` states it (the user's view of the same result)."""
    rep = json.loads(dnnbench("report", result, "--format", "json", check=0).stdout)
    return rep["jobs"][0]


def _said(res, cases: dict) -> str:
    reasons = [f"{name}: {c['fail_phase']}: {c['fail_reason']}" for name, c in cases.items() if c["result"] != "pass"]
    return f"exit {res.returncode}\n" + "\n".join(reasons) + f"\n{res.stdout[-3000:]}\n{res.stderr[-2000:]}"


@pytest.fixture(scope="module")
def local_smoke(tmp_path_factory):
    """`reframe -c CHECKS -t smoke -r` on the local partition, as the README says."""
    where = tmp_path_factory.mktemp("rfm-local")
    res, cases = _reframe(where, LOCAL, "-c", str(CHECKS), "-t", "smoke")
    return where, res, cases


def test_smoke_passes_on_the_local_partition_with_dnnbenchs_figures_in_the_perflog(local_smoke):
    where, res, cases = local_smoke
    assert res.returncode == 0, _said(res, cases)
    assert list(cases) == ["dnnbench_smoke"] and cases["dnnbench_smoke"]["result"] == "pass"
    [row] = _perflog(where, "local", "dnnbench_smoke")
    assert row["result"] == "pass" and row["workload"] == "resnet18" and row["runtime"] == "host"
    result = Path(row["result_file"])
    assert result.parent.name == row["run_id"] and result.is_relative_to(where / "rfm" / "output")   # kept
    data = json.loads(result.read_text())
    assert data["status"] == "ok" and data["host"]["runtime"] == "host" and data["options"]["batch_size"] == 2
    # the figures ReFrame logged are dnnbench's own: those its report gives for the same result
    job = _report_figures(result)
    assert row["throughput_unit"] == "images/s" == job["unit"]
    assert float(row["throughput_value"]) == pytest.approx(job["throughput"], rel=1e-9)
    assert float(row["throughput_ci95_low_value"]) == pytest.approx(job["ci95_low"], rel=1e-9)
    assert float(row["throughput_ci95_high_value"]) == pytest.approx(job["ci95_high"], rel=1e-9)
    assert f"P: throughput: {row['throughput_value']} images/s" in res.stdout


def test_reframes_generic_system_takes_the_smoke_check(tmp_path):
    """No system of the site's: the generic system selects the smoke check and sets its
    job up (a dry run: the run itself is the local partition's test above). The folder is
    the README's `$(python -m dnnbench.reframe)`."""
    checks = subprocess.run([sys.executable, "-m", "dnnbench.reframe"], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert checks == str(CHECKS) and (CHECKS / "dnnbench_checks.py").is_file()
    res, cases = _reframe(tmp_path, None, "-c", checks, "-t", "smoke", "-P", "precision=none,bf16",
                          "-S", "reference_job=resnet18-bs2", "-S", "reference_upper=0.2",   # nothing to judge yet
                          action="--dry-run")
    assert res.returncode == 0, _said(res, cases)
    assert "selected system:   'generic'" in res.stdout
    assert {name: c["result"] for name, c in cases.items()} == {"dnnbench_smoke %.precision=none": "pass",
                                                               "dnnbench_smoke %.precision=bf16": "pass"}
    scripts = [p.read_text() for p in sorted((tmp_path / "rfm" / "stage" / "generic").rglob("rfm_job.sh"))]
    assert all(" -m dnnbench run resnet18 " in t and "--runtime host --gpus cpu" in t for t in scripts)
    assert sorted("--amp bf16" in t for t in scripts) == [False, True]      # -P: one case each


# a GPU partition whose container platform is Apptainer, with the variables a site sets for it
GPU = {"name": "gpu", "scheduler": "local", "launcher": "local", "environs": ["builtin"], "features": ["gpu"],
       "container_platforms": [{"type": "Apptainer", "env_vars": [["APPTAINER_CACHEDIR", "/scratch/cache"]]}]}


def test_a_gpu_partition_runs_the_throughput_check_in_its_container_platform(tmp_path):
    """The runtime comes from the partition's container platform (with its variables), the GPUs
    from its `gpu` feature (a dry run: this machine has no GPU)."""
    sif = tmp_path / "x.sif"
    res, cases = _reframe(tmp_path, GPU, "-c", str(CHECKS), "-t", "throughput", "-S", f"image={sif}",
                          "-S", "workload=bert", action="--dry-run")
    assert res.returncode == 0 and list(cases) == ["dnnbench_throughput"], _said(res, cases)
    [script] = (tmp_path / "rfm" / "stage").rglob("rfm_job.sh")
    text = script.read_text()
    assert "export APPTAINER_CACHEDIR=/scratch/cache" in text
    assert "run bert --results " in text and f"--runtime apptainer --image {sif} --gpus all --amp fp16" in text
    assert "P: throughput: None sequences/s" in res.stdout            # the workload's own unit


def test_a_container_platform_dnnbench_does_not_run_fails_at_setup(tmp_path):
    partition = dict(GPU, container_platforms=[{"type": "Sarus"}])
    res, cases = _reframe(tmp_path, partition, "-c", str(CHECKS), "-t", "throughput", "-S", "image=x",
                          action="--dry-run")
    case = cases["dnnbench_throughput"]
    assert res.returncode != 0 and case["fail_phase"] == "setup", _said(res, cases)
    assert "dnnbench runs no Sarus container: set the check's runtime" in case["fail_reason"]


@pytest.fixture(scope="module")
def site_checks(tmp_path_factory):
    """A site's subclasses: one reference out of reach, one from a history store that holds the
    recorded resnet18-bs4 results (tests/fixtures/results/cpu-suite)."""
    where = tmp_path_factory.mktemp("rfm-site")
    store = {"DNNBENCH_DB": str(where / "history.db")}
    dnnbench("history", "import", FIXTURES / "resnet18-bs4", env=store, check=0)
    (where / "site_checks.py").write_text(SITE)
    res, cases = _reframe(where, LOCAL, "-c", str(where / "site_checks.py"), env=store)
    return where, res, cases, store


def test_a_reference_the_run_misses_fails_reframes_performance_check(site_checks):
    where, res, cases, _ = site_checks
    assert res.returncode != 0, _said(res, cases)
    case = cases["site_too_slow"]
    assert case["result"] == "fail" and case["fail_phase"] == "performance", case
    assert "failed to meet reference(s): throughput=" in case["fail_reason"]
    assert "FAILURE INFO for site_too_slow" in res.stdout
    [row] = _perflog(where, "local", "site_too_slow")
    assert row["result"] == "fail" and float(row["throughput_ref"]) == 1e6 and float(row["throughput_value"]) > 0


def test_a_reference_from_the_history_store_is_the_jobs_median(site_checks):
    where, res, cases, store = site_checks
    assert cases["site_from_history"]["result"] == "pass", cases["site_from_history"]
    listed = json.loads(dnnbench("history", "list", "--job", "resnet18-bs4", "--format", "json", env=store,
                                 check=0).stdout)
    recorded = [r["throughput"] for r in listed if r["run_id"].startswith("recorded.")]
    assert len(recorded) == 2
    [row] = _perflog(where, "local", "site_from_history")
    assert float(row["throughput_ref"]) == pytest.approx(statistics.median(recorded), rel=1e-9)
    assert row["reference_job"] == "resnet18-bs4" and row["throughput_lower_thres"] == "-1.0"


def test_training_to_a_target_reports_the_time_to_target(tmp_path):
    """dnnbench_train on real data (the UCI digits), a target one epoch reaches."""
    from dnnbench.datasets.digits import write_digits
    digits = write_digits(tmp_path / "digits")
    res, cases = _reframe(tmp_path, LOCAL, "-c", str(CHECKS), "-n", "dnnbench_train",
                          "-S", "valid_systems=*", "-S", f"data={digits}", "-S", "workload=resnet18",
                          "-S", "target_accuracy=5", "-S", "epochs=1", "-S", "batch_size=32",
                          "-S", "options=--image-size,16,--workers,0")
    assert res.returncode == 0, _said(res, cases)
    [row] = _perflog(tmp_path, "local", "dnnbench_train")
    data = json.loads(Path(row["result_file"]).read_text())
    assert data["training"]["reached"] is True
    assert float(row["time_to_target_value"]) == pytest.approx(data["training"]["time_to_target_s"], rel=1e-9)
    assert row["time_to_target_unit"] == "s" and float(row["best_value"]) == pytest.approx(data["training"]["best"])
    assert float(row["throughput_value"]) > 0


def test_the_training_check_without_a_dataset_is_skipped_with_why(tmp_path):
    res, cases = _reframe(tmp_path, LOCAL, "-c", str(CHECKS), "-n", "dnnbench_train", "-S", "valid_systems=*")
    assert res.returncode == 0, _said(res, cases)
    assert cases["dnnbench_train"]["result"] == "skip"
    assert "SKIP" in res.stdout and "set it with -S dnnbench_train.data=DIR" in res.stdout


def _blocker(tmp_path: Path) -> Path:
    (tmp_path / "a-file").write_text("")
    return tmp_path / "a-file"


@pytest.mark.parametrize("settings, phase, fragments", [
    # a results folder it cannot write: said before any job is submitted
    (lambda t: [f"results={_blocker(t)}"], "setup", ["results dir", "a-file is not writable"]),
    (lambda t: [f"results={_blocker(t) / 'sub'}"], "setup", ["a-file is not a folder"]),
    (lambda t: ["workload=nope"], "setup", ["unknown workload 'nope'"]),
    # what dnnbench refuses reaches the sanity message as dnnbench's own error line
    (lambda t: ["batch_size=-3"], "sanity", ["dnnbench said: error:", "--batch-size"]),
    # a result with status ok and no throughput
    (lambda t: [f"dnnbench=BARE=1 {sys.executable} {t / 'stand_in.py'}"], "sanity",
     ["status ok but no throughput", "has no timed window"]),
    # a reference from a history store that has no result of the job
    (lambda t: [f"dnnbench={sys.executable} {t / 'stand_in.py'}", "reference_job=no-such-job"], "performance",
     ["reference_job 'no-such-job'"]),
])
def test_bad_input_fails_the_check_with_one_clear_reason(tmp_path, settings, phase, fragments):
    (tmp_path / "stand_in.py").write_text(STAND_IN)
    res, cases = _reframe(tmp_path, LOCAL, "-c", str(CHECKS), "-t", "smoke",
                          *[word for setting in settings(tmp_path) for word in ("-S", setting)])
    assert res.returncode != 0, _said(res, cases)
    case = cases["dnnbench_smoke"]
    assert case["result"] == "fail" and case["fail_phase"] == phase, case
    for fragment in fragments:
        assert fragment in case["fail_reason"], case["fail_reason"]
    assert "Traceback" not in res.stdout + res.stderr
    if (tmp_path / "a-file").exists():
        assert (tmp_path / "a-file").read_text() == ""      # nothing written over what blocked it


@pytest.mark.engine
def test_smoke_passes_on_slurm_in_apptainer(slurm_cluster, built_sif, tmp_path):
    """The namespace cluster as a ReFrame Slurm partition whose container platform is
    Apptainer: with an image, the check runs dnnbench in it on a node."""
    res, cases = _reframe(tmp_path, SLURM, "-c", str(CHECKS), "-t", "smoke", "-S", f"image={built_sif}")
    assert res.returncode == 0, _said(res, cases)
    [row] = _perflog(tmp_path, "debug", "dnnbench_smoke")
    data = json.loads(Path(row["result_file"]).read_text())
    assert data["status"] == "ok" and data["host"]["runtime"] == "singularity"
    assert data["system"]["host"] in slurm_cluster and row["job_nodelist"] == data["system"]["host"]
    assert float(row["throughput_value"]) == pytest.approx(_report_figures(Path(row["result_file"]))["throughput"],
                                                            rel=1e-9)
    script = (tmp_path / "rfm" / "output" / "dnnbench-test" / "debug" / "builtin" / "dnnbench_smoke" / "rfm_job.sh")
    assert "#SBATCH --partition=debug" in script.read_text() and "--runtime apptainer" in script.read_text()
    assert row["runtime"] == "apptainer"


def test_every_setting_and_figure_is_documented():
    """docs/reframe.md's tables name every variable the library adds to ReFrame's and every
    performance variable a check reports."""
    import reframe as rfm

    from dnnbench.reframe.library import DnnbenchRun, DnnbenchTrain
    text = (ROOT / "docs" / "reframe.md").read_text()
    own = set(DnnbenchRun._rfm_var_space.vars) | set(DnnbenchTrain._rfm_var_space.vars)
    added = own - set(rfm.RunOnlyRegressionTest._rfm_var_space.vars)
    assert {"workload", "reference_job", "image"} <= added
    assert [name for name in sorted(added) if f"`{name}`" not in text] == []
    source = (ROOT / "toolkit" / "reframe" / "library.py").read_text()
    figures = {"throughput", "throughput_ci95_low", "throughput_ci95_high", "time_to_target", "best"}
    assert all(f'"{name}"' in source and f"`{name}`" in text for name in figures)


def test_the_checks_folder_command_prints_the_folder_and_explains_itself():
    run = [sys.executable, "-m", "dnnbench.reframe"]
    plain = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and plain.stdout.strip() == str(CHECKS) and plain.stderr == ""
    told = subprocess.run([*run, "--help"], capture_output=True, text=True, timeout=60)
    assert told.returncode == 0 and "reframe -c" in told.stdout and str(CHECKS) not in told.stdout
    wrong = subprocess.run([*run, "smoke"], capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and wrong.stdout == "" and wrong.stderr.startswith("error: ")
