"""`dnnbench refs import` and `refs list` on excerpts of the public files themselves (tests/
fixtures/refs, sources named there), a real SQLite store, the real CLI in this process; every
kind of bad input refused whole with one line."""
from __future__ import annotations

import csv
import json
import os
import sqlite3
import statistics
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import ROOT, cli_inprocess

FIXTURES = ROOT / "tests" / "fixtures" / "refs"
V1 = FIXTURES / "lambda" / "pytorch-train-throughput-fp16.csv"
V1_FP32 = FIXTURES / "lambda" / "pytorch-train-throughput-fp32.csv"
V2 = FIXTURES / "lambda" / "pytorch-train-throughput-v2-fp16.csv"
SUMMARY = FIXTURES / "mlperf" / "v5.1" / "Quanta_Cloud_Technology" / "summary.json"
SUMMARIZER = FIXTURES / "mlperf" / "summarizer-5.1.0"
MILABENCH = FIXTURES / "milabench" / "H100.yaml"
ALL = [V1, V1_FP32, V2, SUMMARY, *sorted(SUMMARIZER.glob("summary*")), MILABENCH]


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "store" / "history.db"
    monkeypatch.setenv("DNNBENCH_DB", str(path))
    return path


def refs(db: Path, where: str = "1=1") -> list[dict]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute(f"SELECT * FROM reference_numbers WHERE {where}")]


def one(rows: list[dict], **facts) -> dict:
    found = [r for r in rows if all(r[k] == v for k, v in facts.items())]
    assert len(found) == 1, (facts, found)
    return found[0]


def test_every_public_excerpt_imports_once_and_again_changes_nothing(db):
    code, _, err = cli_inprocess("refs", "import", *ALL)
    assert code == 0, err
    first = refs(db)
    assert len(first) > 100
    code, _, err = cli_inprocess("refs", "import", *ALL)
    assert code == 0 and " 0 new," in err and "0 updated" in err, err
    assert refs(db) == first
    with sqlite3.connect(db) as conn:     # never a result, never in a job's series
        assert conn.execute("SELECT count(*) FROM results").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM series").fetchone()[0] == 0


def test_lambda_v1_values_as_published(db):
    assert cli_inprocess("refs", "import", V1, V1_FP32)[0] == 0
    rows = refs(db, "workload = 'resnet50'")
    assert one(rows, system="H100 80GB SXM5", precision="fp16")["value"] == 2616
    assert one(rows, system="8x H100 80GB SXM5")["value"] == 20728
    assert one(rows, system="8x H100 80GB SXM5")["gpu_count"] == 8
    assert one(rows, system="A100 80GB SXM4", precision="fp16")["value"] == 1582
    dell = one(rows, system="Dell H100 80GB SXM5", precision="fp16")
    assert dell["gpu"] == "H100 80GB SXM5" and dell["unit"] == "images/s" and dell["batch_size"] is None
    # a 0.0 cell is not measured: no reference, never a zero
    assert not refs(db, "system = 'Dell H100 80GB SXM5' AND source_workload LIKE 'transformerxl%'")
    assert not refs(db, "value = 0")


def test_lambda_v2_nodes_of_one_system_are_one_reference_with_their_spread(db):
    assert cli_inprocess("refs", "import", V2)[0] == 0
    with V2.open() as f:
        table = list(csv.DictReader(f))
    nodes = [float(r["resnet50"]) for r in table if r[""].startswith("LambdaOD_Texas_1xH100_80GB_SXM5_")]
    assert len(nodes) == 11
    r = one(refs(db, "workload = 'resnet50'"), system="LambdaOD_Texas_1xH100_80GB_SXM5_v2")
    assert (r["value"], r["spread_low"], r["spread_high"], r["samples"]) == \
        (statistics.median(nodes), min(nodes), max(nodes), 11)
    assert (r["gpu"], r["gpu_count"], r["precision"]) == ("H100 80GB SXM5", 1, "fp16")
    assert one(refs(db, "workload = 'resnet50'"), system="LambdaOD_Texas_8xH100_80GB_SXM5_v2")["gpu_count"] == 8


def test_mlperf_both_layouts_and_the_summarizers_output_agree(db):
    assert cli_inprocess("refs", "import", SUMMARY, *SUMMARIZER.glob("summary*"))[0] == 0
    rows = refs(db, "source_workload = 'retinanet'")
    # the round's summary.json, the summarizer's csv and json: one reference; the detailed
    # layout states the global batch (GBS), so it is another
    plain = one(rows, batch_size=None)
    detailed = one(rows, batch_size=256)
    assert plain["value"] == pytest.approx(34.0729611111) and detailed["value"] == pytest.approx(plain["value"])
    assert (plain["unit"], plain["gpu"], plain["gpu_count"], plain["version"]) == \
        ("minutes", "NVIDIA H200-SXM5-141GB", 8, "v5.1")
    assert plain["workload"] is None and plain["precision"] is None
    # nulls are not submitted: the summary's 14 cells hold 5 figures
    assert len(refs(db, "file = 'summary.json' AND batch_size IS NULL")) == 5


def test_milabench_observations_of_one_batch_are_one_reference(db):
    code, _, err = cli_inprocess("refs", "import", MILABENCH, "--gpu", "H100 80GB SXM5")
    assert code == 0, err
    r = one(refs(db, "source_workload = 'resnet50'"), batch_size=608)
    assert (r["value"], r["spread_low"], r["spread_high"], r["samples"]) == (2643.07, 2569.21, 2733.54, 3)
    assert (r["workload"], r["precision"], r["gpu"], r["gpu_count"]) == ("resnet50", "fp16", "H100 80GB SXM5", 1)
    assert one(refs(db, "source_workload = 'bert-fp16'"), batch_size=64)["workload"] is None
    assert {r["gpu_count"] for r in refs(db, "source_workload = 'llm-lora-ddp-gpus'")} == {None}


def test_version_is_kept_and_part_of_the_identity(db):
    assert cli_inprocess("refs", "import", V1, "--version", "aa5addb")[0] == 0
    assert cli_inprocess("refs", "import", V1, "--version", "v2")[0] == 0
    assert {r["version"] for r in refs(db)} == {"aa5addb", "v2"}
    assert len(refs(db)) == 2 * len(refs(db, "version = 'v2'"))


def test_list_json_has_one_object_per_reference_with_its_fields(db):
    assert cli_inprocess("refs", "import", V1, V2)[0] == 0
    code, out, _ = cli_inprocess("refs", "list", "--workload", "resnet50", "--gpu", "NVIDIA H100 80GB HBM3",
                                 "--format", "json")
    listed = json.loads(out)
    assert code == 0 and {r["system"] for r in listed} == {
        "H100 80GB SXM5", "Dell H100 80GB SXM5", "2x H100 80GB SXM5", "8x H100 80GB SXM5",
        "LambdaOD_Texas_1xH100_80GB_SXM5_v2", "LambdaOD_Texas_8xH100_80GB_SXM5_v2"}
    assert set(listed[0]) == {"source", "file", "version", "system", "gpu", "gpu_count", "source_workload",
                              "workload", "precision", "batch_size", "value", "unit", "spread_low", "spread_high",
                              "samples"}
    code, out, _ = cli_inprocess("refs", "list", "--format", "csv", "--source", "lambda")
    assert code == 0 and len(list(csv.DictReader(out.splitlines()))) == len(refs(db))


def test_list_table_fits_80_columns(db):
    assert cli_inprocess("refs", "import", *ALL)[0] == 0
    code, out, _ = cli_inprocess("refs", "list", env={"COLUMNS": "80"})
    lines = out.splitlines()
    assert code == 0 and max(len(line) for line in lines) <= 80 and any("2,616.0" in line for line in lines)
    # minutes to train and images/s share the value column: each row keeps its unit at 80 columns
    assert any("2,616.0" in line and "images/s" in line for line in lines), out
    assert any(line.startswith("rgat") and "minutes" in line for line in lines), out


# -- bad input: one line naming the file and why, exit 1, nothing of that file imported ---------

def _edit_v1(edit) -> str:
    lines = V1.read_text().splitlines()
    edit(lines)
    return "\n".join(lines) + "\n"


def _cell(lines, row, column, value):
    header = lines[0].split(",")
    cells = lines[row].split(",")
    cells[header.index(column)] = value
    lines[row] = ",".join(cells)


BAD = {
    "a row missing a column": (lambda lines: lines.__setitem__(2, lines[2].rsplit(",", 1)[0]),
                               "line 3: 13 cells under a header of 14"),
    "a row with an extra column": (lambda lines: lines.__setitem__(2, lines[2] + ",1.0"),
                                   "line 3: 15 cells under a header of 14"),
    "a header with an extra column": (lambda lines: (lines.__setitem__(0, lines[0] + ",foo"),
                                                     [lines.__setitem__(i, lines[i] + ",1") for i in range(1, len(lines))]),
                                      "column 'foo' is not a benchmark Lambda publishes"),
    "a header missing num_gpu": (lambda lines: [lines.__setitem__(i, ",".join(
                                     c for k, c in enumerate(lines[i].split(",")) if k != 1)) for i in range(len(lines))],
                                 "not a layout Lambda publishes"),
    "a negative cell": (lambda lines: _cell(lines, 4, "resnet50", "-2616.0"), "resnet50: '-2616.0' is not a finite"),
    "a non-numeric cell": (lambda lines: _cell(lines, 4, "resnet50", "fast"), "resnet50: 'fast' is not a number"),
    "a NaN cell": (lambda lines: _cell(lines, 4, "ncf", "nan"), "ncf: 'nan' is not a number"),
    "an infinite cell": (lambda lines: _cell(lines, 4, "ncf", "1e999"), "ncf: '1e999' is not a finite"),
    "a duplicated system": (lambda lines: lines.append(lines[4]), "the same system as line 5"),
    "a GPU name with control characters": (lambda lines: lines.__setitem__(
        2, "RTX \x1b[31m4090" + lines[2][len("RTX 4090"):]), "holds control characters"),
}


def _refused(db: Path, path: Path, *args, fragment: str) -> str:
    code, out, err = cli_inprocess("refs", "import", path, V1_FP32, *args)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1, err
    assert len(errors) == 1 and str(path) in errors[0] and fragment in errors[0], err
    assert "nothing imported from it" in errors[0] and "Traceback" not in err
    assert "\x1b" not in err + out
    assert refs(db) and not refs(db, f"file = '{path.name}'")    # the good file imported, none of the bad
    return errors[0]


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_lambda_csv_is_refused_whole(db, tmp_path, case):
    edit, fragment = BAD[case]
    bad = tmp_path / "pytorch-train-throughput-fp16.csv"
    bad.write_text(_edit_v1(edit))
    _refused(db, bad, fragment=fragment)


def test_several_bad_rows_are_counted_and_the_first_named(db, tmp_path):
    def edit(lines):
        for row in range(1, 6):
            _cell(lines, row, "gnmt", "x")
    bad = tmp_path / "pytorch-train-throughput-fp16.csv"
    bad.write_text(_edit_v1(edit))
    line = _refused(db, bad, fragment="5 row(s) cannot be read: line 2 (A100 80GB SXM4) gnmt")
    assert "and 2 more" in line


def _summary(entries) -> str:
    return json.dumps(entries)


BAD_FILES = {
    "summary.json of an unknown layout": ("summary.json", lambda: _summary({"systems": []}),
                                          "not a layout MLPerf publishes"),
    "summary.json without accelerators": ("summary.json", lambda: _summary(
        [{k: v for k, v in e.items() if k != "accelerator_model_name"} for e in json.loads(SUMMARY.read_text())]),
        "no 'accelerator_model_name'"),
    "summary.json with minutes as text": ("summary.json", lambda: _summary(
        [dict(e, rgat="fast") for e in json.loads(SUMMARY.read_text())]), "rgat: 'fast' is not a number"),
    "YAML with no observations": ("H100.yaml", lambda: "resnet50:\n  arg: --batch-size\n  optimized: 128\n",
                                  "no benchmark with `observations:`"),
    "YAML observation without perf": ("H100.yaml", lambda: "resnet50:\n  observations:\n  - {batch_size: 8}\n",
                                      "resnet50 observation 1: no batch_size and perf"),
    "not UTF-8": ("pytorch-train-throughput-fp16.csv", lambda: V1.read_bytes().replace(b"RTX", b"RT\xff"),
                  "is not UTF-8 text"),
    "a file no source publishes": ("notes.csv", lambda: "a,b\n1,2\n", "not a file of a known source"),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_is_refused_whole(db, tmp_path, case):
    name, content, fragment = BAD_FILES[case]
    bad = tmp_path / name
    text = content()
    bad.write_bytes(text if isinstance(text, bytes) else text.encode())
    _refused(db, bad, fragment=fragment)


def test_a_summary_with_only_nulls_imports_nothing_and_says_so(db, tmp_path):
    nulls = tmp_path / "summary.json"
    nulls.write_text(_summary([{k: (None if k in ("retinanet", "rgat", "dlrm_dcnv2", "llama2_70b_lora") else v)
                                for k, v in e.items()} for e in json.loads(SUMMARY.read_text())]))
    code, _, err = cli_inprocess("refs", "import", nulls)
    assert code == 0 and "0 reference(s)" in err and "14 not measured" in err, err


def test_a_link_a_fifo_and_a_huge_file_are_refused_without_reading_them(db, tmp_path):
    link = tmp_path / "pytorch-train-throughput-fp16.csv"
    link.symlink_to(V1)
    _refused(db, link, fragment="symbolic link")
    fifo = tmp_path / "fifo-fp16.csv"
    os.mkfifo(fifo)
    _refused(db, fifo, fragment="FIFO")        # refused at once: a read would block forever
    huge = tmp_path / "huge-fp16.csv"
    with huge.open("wb") as f:                 # 1 GB, sparse: nothing written
        f.truncate(1 << 30)
    _refused(db, huge, fragment="1073741824 bytes")


def test_a_gpu_option_with_control_characters_is_refused(db):
    code, out, err = cli_inprocess("refs", "import", MILABENCH, "--gpu", "H100\x1b]0;x\x07")
    assert code == 2 and "--gpu must be printable text" in err and "\x1b" not in err + out
    assert not refs(db)


def test_usage_errors_exit_2(db):
    code, _, err = cli_inprocess("refs", "import", V1, "--source", "tensorflow")
    assert code == 2 and "choose lambda, mlperf, milabench" in err
    code, _, err = cli_inprocess("refs", "import", V1, "--precision", "fp8")
    assert code == 2 and "unknown precision" in err
    code, _, err = cli_inprocess("refs", "list", "--format", "xml")
    assert code == 2 and "unknown format" in err


def test_a_lambda_file_whose_name_states_no_precision_needs_one(db, tmp_path):
    bare = tmp_path / "throughput.csv"
    bare.write_bytes(V1.read_bytes())
    _refused(db, bare, fragment="give --precision")
    assert cli_inprocess("refs", "import", bare, "--precision", "fp16")[0] == 0


# -- generated: any cell is a figure (> 0), not measured (0) or refuses its file ----------------

CELLS = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                  st.text(alphabet=st.characters(blacklist_characters=',\n\r"', blacklist_categories=("Cs",)),
                          max_size=8))


@settings(max_examples=200, deadline=None)
@given(cell=CELLS)
def test_a_cell_is_a_figure_not_measured_or_a_refused_file(cell):
    from dnnbench.refs import lambda_csv
    lines = V1.read_text().splitlines()
    _cell(lines, 4, "resnet50", cell)
    parsed = lambda_csv.read("\n".join(lines) + "\n", str(V1))
    try:     # a figure is written with digits, a point and an exponent only
        value = float(cell) if set(cell) <= set("0123456789.eE+- ") else None
    except ValueError:
        value = None
    if value is None or value in (float("inf"), float("-inf")) or value < 0:
        assert len(parsed.bad) == 1 and "line 5" in parsed.bad[0]
        return
    assert not parsed.bad
    mine = [r for r in parsed.references if r["system"] == "H100 80GB SXM5" and r["source_workload"] == "resnet50"]
    assert ([r["value"] for r in mine] == [value]) if value > 0 else (mine == [])
