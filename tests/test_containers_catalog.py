"""The base catalog: explicit facts per base, resolution rules, clear errors."""
import pytest

from dnnbench.containers import catalog
from dnnbench.errors import DnnbenchError


def test_every_family_is_catalogued_with_required_facts():
    bases = catalog.catalog()
    assert {b.family for b in bases.values()} == {"ngc", "rocm", "powerai", "cpu"}
    for base in bases.values():
        for key in catalog.REQUIRED:
            assert getattr(base, key), (base.name, key)


def test_ngc_facts_from_release_notes():
    bases = catalog.catalog()
    old = bases["ngc-21.07"]
    assert old.image == "nvcr.io/nvidia/pytorch:21.07-py3"
    assert (old.python, old.pytorch[:4], old.cuda[:4]) == ("3.8", "1.10", "11.4")
    assert "nvprof" in old.profilers
    new = bases["ngc-25.01"]
    assert (new.distro, new.python) == ("ubuntu24.04", "3.12")
    assert new.run["ipc"] == "host"
    assert new.run["ulimits"] == {"memlock": -1, "stack": 67108864}


def test_powerai_needs_license_and_is_ppc64le():
    base = catalog.catalog()["powerai-1.6.2"]
    assert base.env["LICENSE"] == "yes"
    assert base.arch == "ppc64le"
    assert base.image.startswith("ibmcom/powerai:1.6.2-all")


def test_rocm_and_cpu():
    bases = catalog.catalog()
    assert bases["rocm-6.0.2"].accelerator == "amd"
    assert bases["rocm-6.0.2"].image == "rocm/pytorch:rocm6.0.2_ubuntu22.04_py3.10_pytorch_2.1.2"
    assert bases["cpu"].accelerator == "none"


def test_uncatalogued_ngc_borrows_nearest_release_with_warning():
    base, warnings = catalog.resolve("ngc-24.11")
    assert base.image == "nvcr.io/nvidia/pytorch:24.11-py3"
    assert base.inferred_from == "ngc-24.10"
    assert base.pytorch is None
    assert warnings and "ngc-24.10" in warnings[0]


@pytest.mark.parametrize("name", ["ngc-21.7", "ngc-21.13", "ngc-2107", "ngc-abc"])
def test_malformed_ngc_tag(name):
    with pytest.raises(DnnbenchError, match="malformed NGC base"):
        catalog.resolve(name)


def test_unknown_base_suggests_close_matches():
    with pytest.raises(DnnbenchError, match=r"did you mean .*rocm-6\.0\.2"):
        catalog.resolve("rocm-6.0.3")


def test_local_image():
    base, _ = catalog.resolve("local:myimg:1.0")
    assert (base.image, base.bootstrap, base.family) == ("myimg:1.0", "docker-daemon", "local")
    with pytest.raises(DnnbenchError, match="not a valid image reference"):
        catalog.resolve("local:Bad Image")
