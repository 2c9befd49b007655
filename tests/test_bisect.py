"""`compare-images` and `bisect` on real images: four releases of one image, the third of which
brings a regression (its optimizer step got slower, as a release that changed a kernel or a
threading default would), built on the test image by the real Docker engine."""
import json
import subprocess
import uuid

import pytest

from dnnbench.runs.bisect import image_list
from dnnbench.errors import DnnbenchError
from tests.helpers import dnnbench, one_line_error

pytestmark = pytest.mark.engine
# a step of resnet18 at batch 1 is ~0.1-0.5 s on this CPU, busy or not: 2 s more is a regression
# far beyond any noise
SLOWER = '''import time
import torch.optim
_step = torch.optim.SGD.step
def step(self, *args, **kwargs):
    time.sleep(2.0)
    return _step(self, *args, **kwargs)
torch.optim.SGD.step = step
'''
TINY = ["--batch-size", "1", "--warmup", "1", "--number", "1", "--repeat", "3", "--max-windows", "4"]


@pytest.fixture(scope="module")
def releases(built_image, tmp_path_factory):
    """r1, r2 (same code, a new label), r3 (slower), r4 (slower, a new label): in release order."""
    root = tmp_path_factory.mktemp("releases")
    (root / "slow").mkdir()
    (root / "slow" / "sitecustomize.py").write_text(SLOWER)
    tag = f"dnnbench-test-bisect:{uuid.uuid4().hex[:8]}"
    steps = {"r1": "", "r2": "LABEL release=r2\n",
             "r3": "COPY slow/ /opt/slow/\nENV PYTHONPATH=/opt/slow:${PYTHONPATH}\n",
             "r4": "COPY slow/ /opt/slow/\nENV PYTHONPATH=/opt/slow:${PYTHONPATH}\nLABEL release=r4\n"}
    made = []
    for name, lines in steps.items():
        (root / "Dockerfile").write_text(f"FROM {built_image}\n{lines}")
        ref = f"{tag}-{name}"
        subprocess.run(["docker", "build", "-q", "-t", ref, str(root)], check=True, capture_output=True, timeout=600)
        made.append(ref)
    yield made
    subprocess.run(["docker", "rmi", "-f", *made], capture_output=True)


def test_bisect_finds_the_first_slower_release_resumes_and_tables_it(releases, tmp_path):
    args = ["bisect", "resnet18", "--images", ",".join(releases), "--results", tmp_path, "--run-id", "b",
            "--tolerance", "0.1", *TINY]
    res = dnnbench(*args, timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"first slower: {releases[2]} (" in res.stdout and f"last good: {releases[1]}" in res.stdout
    folder = tmp_path / "b"
    results = sorted(folder.glob("*/result.json"))
    assert len(results) == 4 and all(json.loads(p.read_text())["status"] == "ok" for p in results)
    # every step is an ordinary result: report reads them
    report = json.loads(dnnbench("report", folder, "-f", "json", check=0).stdout)
    assert sum(j["n"] for j in report["jobs"]) >= 4
    # the same again resumes: every step read back, none run
    again = dnnbench(*args, timeout=600)
    assert again.returncode == 0 and "(0 run now, 4 read back)" in again.stdout
    # compare-images over the same steps: read back, one row per release, verdicts against r1
    table = dnnbench("compare-images", "resnet18", "--images", ",".join(releases), "--results", tmp_path,
                     "--run-id", "b", "--tolerance", "0.1", *TINY, timeout=600)
    assert table.returncode == 0, table.stdout + table.stderr
    rows = [line.split() for line in table.stdout.splitlines() if line.startswith("dnnbench-test-bisect")]
    assert [r[0] for r in rows] == releases and rows[0][-1] == "first"
    assert rows[2][-1] == rows[3][-1] == "slower"
    # r2 is r1's code: whatever noise makes of its verdict, its ratio is far from the regression's
    ratios = [float(r[-2]) for r in rows]
    assert ratios[1] > 0.5 > max(ratios[2], ratios[3]), rows
    # ends the same within noise (r1 and r2: the same code): nothing to bisect, exit 1
    same = dnnbench("bisect", "resnet18", "--images", f"{releases[0]},{releases[1]}", "--results", tmp_path,
                    "--run-id", "b", "--tolerance", "0.5", *TINY, timeout=1200)
    assert same.returncode == 1 and "nothing to bisect" in same.stdout, same.stdout + same.stderr


@pytest.mark.parametrize("images,bases,fragment", [
    (["a"], None, "at least two"),
    (["a", "a"], None, "twice"),
    (None, "ngc-25.01..ngc-24.01", "older than"),
    (None, "ngc-24.01..rocm-6.0.2", "different families"),
    (None, "ngc-24.01", "FIRST..LAST"),
    (["a", "b"], "ngc-24.01..ngc-24.02", "one of the two"),
])
def test_the_list_is_checked(images, bases, fragment):
    with pytest.raises(DnnbenchError, match=fragment):
        image_list(images, bases)


def test_a_base_range_is_the_catalogs_releases_in_order():
    listed = image_list(None, "ngc-24.01..ngc-24.05")
    assert [b for _, b in listed] == ["ngc-24.01", "ngc-24.02", "ngc-24.03", "ngc-24.04", "ngc-24.05"]


def test_bisect_refuses_bad_input_in_one_line(tmp_path):
    one_line_error(dnnbench("bisect", "resnet18", "--good", "x", "--bad", "y", "--runtime", "host",
                            "--results", tmp_path), "docker or singularity")
    one_line_error(dnnbench("bisect", "resnet18", "--good", "x", "--results", tmp_path), "--good and --bad")
    one_line_error(dnnbench("bisect", "resnet18", "--images", "a,b", "--good", "c", "--results", tmp_path),
                   "--good 'c' is not in the list")
