"""`history peers` with published references: only what measured the same thing is placed
against a result (workload, unit, precision, GPU model through the alias table, GPU count,
global batch where stated); otherwise the nearest, with what differs, and no figure against it."""
from __future__ import annotations

import json
import shutil

import pytest

from tests import refs_results
from tests.helpers import ROOT, cli_inprocess

FIXTURES = ROOT / "tests" / "fixtures" / "refs"
LAMBDA = [FIXTURES / "lambda" / n for n in ("pytorch-train-throughput-fp16.csv", "pytorch-train-throughput-fp32.csv",
                                             "pytorch-train-throughput-v2-fp16.csv")]
MLPERF = FIXTURES / "mlperf" / "summarizer-5.1.0" / "summary_detailed.json"
MILABENCH = FIXTURES / "milabench" / "H100.yaml"


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """Lambda's and MLPerf's excerpts imported once; each test gets its own copy of the store."""
    path = tmp_path_factory.mktemp("refs") / "history.db"
    code, _, err = cli_inprocess("refs", "import", *LAMBDA, MLPERF, "--db", path)
    assert code == 0, err
    return path


@pytest.fixture
def db(tmp_path, monkeypatch, imported):
    path = tmp_path / "store" / "history.db"
    path.parent.mkdir()
    shutil.copy(imported, path)
    monkeypatch.setenv("DNNBENCH_DB", str(path))
    return path


def peers(path, *args) -> dict:
    code, out, err = cli_inprocess("history", "peers", path, "--json", *args)
    assert code == 0, err
    return json.loads(out)["references"]


@pytest.mark.parametrize("theirs, mine, same", [
    ("H100 80GB SXM5", "NVIDIA H100 80GB HBM3", True),
    ("H100_80GB_SXM5", "NVIDIA H100 80GB HBM3", True),          # Lambda v2's spelling
    ("H100 80GB PCIe Gen5", "NVIDIA H100 PCIe", True),
    ("H100 80GB SXM5", "NVIDIA H100 PCIe", False),
    ("A100 80GB SXM4", "NVIDIA A100-SXM4-80GB", True),
    ("A100 80GB SXM4", "NVIDIA A100 80GB PCIe", False),
    ("NVIDIA H200-SXM5-141GB", "NVIDIA H200", True),             # MLPerf's name, nvidia-smi's
    ("H100", "NVIDIA H100 80GB HBM3", False),                   # milabench's file: PCIe or SXM5?
    ("Weird GPU 9000", "Weird GPU 9000", False),                 # unknown matches nothing, not even itself
])
def test_gpu_names_match_through_the_alias_table_only(theirs, mine, same):
    from dnnbench.refs import tables
    a, b = tables.gpu_model(theirs), tables.gpu_model(mine)
    assert (a is not None and a == b) is same


def test_every_alias_names_one_model():
    from dnnbench.refs import reference, tables
    spellings = [reference.key(n) for model, names in tables.GPUS.items() for n in {model, *names}]
    assert len(spellings) == len(set(spellings))


def test_a_result_is_placed_against_lambdas_figures_for_its_gpu(db, tmp_path):
    result = refs_results.write(tmp_path, 2700.0)
    block = peers(result)
    by_system = {r["system"]: r for r in block["matched"]}
    assert set(by_system) == {"H100 80GB SXM5", "Dell H100 80GB SXM5", "LambdaOD_Texas_1xH100_80GB_SXM5_v2"}
    assert by_system["H100 80GB SXM5"]["vs_reference_pct"] == pytest.approx((2700 / 2616 - 1) * 100, rel=1e-3)
    spread = by_system["LambdaOD_Texas_1xH100_80GB_SXM5_v2"]
    assert spread["in_spread"] == "below" and spread["spread"] == [2783.0, 2797.0]
    code, out, _ = cli_inprocess("history", "peers", result, env={"COLUMNS": "80"})
    assert code == 0 and "reference lambda H100 80GB SXM5: 2,616.0 images/s, this result 3.2 % above" in out
    assert "below its spread 2,783.0 to 2,797.0 (n=11)" in " ".join(out.split())
    assert max(len(line) for line in out.splitlines()) <= 80


def test_fp32_is_not_placed_against_fp16(db, tmp_path):
    block = peers(refs_results.write(tmp_path, 1800.0, amp="none", count=2))
    assert block["matched"] == []
    differs = [d for r in block["nearest"] for d in r["differs"]]
    assert "fp16 vs fp32" in differs and "2 vs 2 GPUs" not in differs
    assert all(r.get("vs_reference_pct") is None for r in block["nearest"])   # no figure across unlike things


def test_the_gpu_count_must_agree(db, tmp_path):
    block = peers(refs_results.write(tmp_path, 20000.0, count=8))
    assert {r["system"] for r in block["matched"]} == {"8x H100 80GB SXM5", "LambdaOD_Texas_8xH100_80GB_SXM5_v2"}


def test_a_batch_the_source_states_must_agree(db, tmp_path):
    assert cli_inprocess("refs", "import", MILABENCH, "--gpu", "H100 80GB SXM5")[0] == 0
    block = peers(refs_results.write(tmp_path, 2700.0, batch=512))
    milabench = [r for r in block["matched"] if r["source"] == "milabench"]
    assert [(r["source_workload"], r["batch_size"]) for r in milabench] == [("resnet50", 512), ("resnet50-noio", 512)]
    # at 192 no milabench observation compares; Lambda (no batch stated) still does
    block = peers(refs_results.write(tmp_path, 2700.0, batch=192, name="r192"))
    assert {r["source"] for r in block["matched"]} == {"lambda"}


def test_an_unknown_gpu_matches_nothing_and_says_why(db, tmp_path):
    result = refs_results.write(tmp_path, 2700.0, gpu="Weird GPU 9000")
    block = peers(result)
    assert block["matched"] == [] and block["nearest"]
    assert all("not in the GPU alias table: Weird GPU 9000" in " ".join(r["differs"]) for r in block["nearest"])
    code, out, _ = cli_inprocess("history", "peers", result)
    assert code == 0 and "none measured the same (nearest, not compared)" in out and " % above" not in out


def test_a_cpu_result_is_told_apart_from_every_gpu_in_words(db, tmp_path):
    result = refs_results.write(tmp_path, 0.77, count=0, amp="none", batch=2)
    data = json.loads(result.read_text())
    data["world_size"] = 1                      # one process, on the CPU
    result.write_text(json.dumps(data))
    block = peers(result)
    differs = [d for r in block["nearest"] for d in r["differs"]]
    assert block["matched"] == [] and "A100 80GB SXM4 vs no GPU (CPU)" in differs and "1 vs no GPUs" in differs
    assert not any("None" in d or "alias table" in d for d in differs), differs


def test_where_nothing_matches_the_nearest_say_what_differs(tmp_path, monkeypatch):
    monkeypatch.setenv("DNNBENCH_DB", str(tmp_path / "milabench.db"))
    assert cli_inprocess("refs", "import", MILABENCH, "--gpu", "H100 80GB SXM5")[0] == 0
    result = refs_results.write(tmp_path, 2500.0, batch=192)
    block = peers(result)
    assert block["matched"] == []
    assert block["nearest"][0]["differs"] == ["batch 248 vs 192"]     # the closest batch first
    block = peers(refs_results.write(tmp_path, 2500.0, batch=248, amp="none", name="fp32"))
    assert block["nearest"][0]["differs"] == ["fp16 vs fp32"]
    code, out, _ = cli_inprocess("history", "peers", result)
    assert code == 0 and "differs: batch 248 vs 192" in out


def test_minutes_to_train_are_never_placed_against_a_throughput(db, tmp_path):
    from dnnbench.refs import match
    mine = match.Mine(workload="resnet50", unit="images/s", precision="fp16", gpu="NVIDIA H200", gpu_count=8,
                      batch=256, value=20000.0)
    mlperf = {"source": "mlperf", "system": "x", "workload": "resnet50", "source_workload": "resnet",
              "unit": "minutes", "precision": "fp16", "gpu": "NVIDIA H200-SXM5-141GB", "gpu_count": 8,
              "batch_size": 256, "value": 30.0}
    assert match.differences(mine, mlperf) == ["minutes vs images/s"]
    assert match.compare(mine, [mlperf])["matched"] == []


def test_no_reference_of_the_workload_says_how_to_import(tmp_path, monkeypatch):
    monkeypatch.setenv("DNNBENCH_DB", str(tmp_path / "empty.db"))
    result = refs_results.write(tmp_path, 100.0, workload="vgg16")
    cli_inprocess("history", "import", result)
    code, out, _ = cli_inprocess("history", "peers", result)
    assert code == 0 and "none of this workload imported (`dnnbench refs import`)" in out


def test_the_docs_list_every_workload_and_gpu_name_of_the_tables():
    from dnnbench.refs import tables
    doc = (ROOT / "docs" / "reference-numbers.md").read_text()
    for (source, name), (workload, unit, why) in tables.WORKLOADS.items():
        assert f"| {source} | `{name}` | {workload or '-'} | {unit} | {why} |" in doc
    for model, names in tables.GPUS.items():
        assert f"| {model} | " + ", ".join(f"`{n}`" for n in names) + " |" in doc
