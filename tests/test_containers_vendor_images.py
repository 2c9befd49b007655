"""Images as vendors ship them, against the real engines: local stand-ins for NGC and ROCm
(scripts/make-vendor-standins.sh, FROM the test base, tagged with the vendors' own names) carry
NVIDIA's entrypoint, a pip constraint file, an EXTERNALLY-MANAGED Python and a conda-style
Python; builds go through this machine's TLS-inspecting proxy with --ca-cert."""
import hashlib
import json
import os
import subprocess

import pytest

from dnnbench.containers import build as build_mod
from dnnbench.containers import catalog, recipes
from dnnbench.runs import plan as plan_mod
from tests.helpers import CA, dnnbench, one_line_error

pytestmark = pytest.mark.engine
MARKER = "== NGC stand-in entrypoint: checks done =="
CONSTRAINED = "12.570.86"          # the stand-in's /etc/pip/constraint.txt pin of nvidia-ml-py
TINY = ["--batch-size", "4", "--number", "2", "--repeat", "2", "--warmup", "1"]


def _tag(kind):
    # DNNBENCH_TEST_IMAGE_TAG keeps checkouts that share one docker daemon apart
    return (os.environ.get("DNNBENCH_TEST_IMAGE_TAG") or "dnnbench-test:local") + f"-{kind}"


def _build_on_standin(family: str, base: str, tmp_path_factory) -> str:
    """`dnnbench build --base BASE --ca-cert ...` on the stand-in: no pull, pip through the proxy."""
    tag = _tag(family)
    dnnbench("build", "--base", base, "--ca-cert", CA, "--tag", tag,
             "--log-dir", tmp_path_factory.mktemp(f"{family}-logs"), check=0)
    return tag


@pytest.fixture(scope="session")
def ngc_image(standins, tmp_path_factory):
    return _build_on_standin("ngc", "ngc-24.10", tmp_path_factory)


@pytest.fixture(scope="session")
def rocm_image(standins, tmp_path_factory):
    return _build_on_standin("rocm", "rocm-6.0.2", tmp_path_factory)


def _inspect(tag):
    out = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]


def _in_image(tag, *cmd):
    return subprocess.run(["docker", "run", "--rm", "--entrypoint", cmd[0], tag, *cmd[1:]],
                          capture_output=True, text=True, timeout=300)


def _run(image, tmp_path, run_id, runtime="docker"):
    """A real run of a built image. NGC's recommended memlock=-1 cannot be granted by this
    machine's docker (its own hard limit is 8 MiB), so a docker run keeps only the other flags."""
    from dnnbench.runs.launch import RunOptions, build_plan, execute
    plan = build_plan(RunOptions(workload="resnet18", image=str(image), results=tmp_path, run_id=run_id,
                                 runtime=runtime, batch_size=4, number=2, repeat=2, warmup=1))
    plan.ulimits.pop("memlock", None)
    data, code = execute(plan, quiet=True)
    return plan, data, code, (tmp_path / run_id / "log.txt").read_text()


# --- NGC ---------------------------------------------------------------------------

def test_ngc_image_takes_the_constrained_version_into_its_own_folder(ngc_image):
    res = _in_image(ngc_image, "python", "-c", "import importlib.metadata as m, pynvml; "
                                               "print(m.version('nvidia-ml-py'), pynvml.__file__)")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [CONSTRAINED, f"{recipes.SITE_DIR}/pynvml.py"]
    # the base's environment is as the vendor left it: nothing installed into the system Python
    res = _in_image(ngc_image, "env", "-u", "PYTHONPATH", "python3", "-c", "import pynvml")
    assert res.returncode != 0 and "No module named 'pynvml'" in res.stderr


def test_ngc_image_keeps_no_trace_of_the_build_ca(ngc_image):
    info = _inspect(ngc_image)
    labels, env = info["Config"]["Labels"], info["Config"]["Env"]
    assert labels[recipes.LABEL_CA] == hashlib.sha256(CA.read_bytes()).hexdigest()
    assert not [e for e in env if e.startswith(("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT"))], env
    res = _in_image(ngc_image, "sh", "-c", f"find / -xdev -name '{recipes.CA_FILE}*' 2>/dev/null; "
                                           "cat /etc/pip.conf 2>/dev/null; echo done")
    assert res.stdout.strip() == "done", res.stdout


def test_ngc_image_keeps_nvidias_entrypoint_and_says_so(ngc_image):
    info = _inspect(ngc_image)
    entry = "/opt/nvidia/nvidia_entrypoint.sh"
    assert info["Config"]["Entrypoint"] == [entry, "python", "-m", "dnnbench.workloads"]
    assert json.loads(info["Config"]["Labels"][recipes.LABEL_ENTRYPOINT]) == [entry]
    assert info["Config"]["Labels"][recipes.LABEL_ARCH] == "x86_64"
    # the image run as it is (no --entrypoint): the banner, then dnnbench's list of workloads
    res = subprocess.run(["docker", "run", "--rm", ngc_image, "--help"], capture_output=True, text=True, timeout=300)
    assert res.stdout.startswith(MARKER), res.stdout + res.stderr


def test_ngc_docker_run_goes_through_the_entrypoint(ngc_image, tmp_path):
    plan, data, code, log = _run(ngc_image, tmp_path, "vendor-ngc-docker")
    assert code == 0 and data["status"] == "ok", log[-2000:]
    assert plan.entrypoint == ["/opt/nvidia/nvidia_entrypoint.sh"]
    assert MARKER in log
    assert "--entrypoint /opt/nvidia/nvidia_entrypoint.sh" in log.splitlines()[0]   # the line a user could rerun


def test_ngc_dry_run_shows_the_chain(tmp_path):
    res = dnnbench("run", "resnet18", "--base", "ngc-24.10", "--dry-run", "--results", tmp_path, check=0)
    shown = json.loads(res.stdout[:res.stdout.rindex("}") + 1])
    assert shown["entrypoint"] == ["/opt/nvidia/nvidia_entrypoint.sh"]
    assert shown["runs"][:4] == ["/opt/nvidia/nvidia_entrypoint.sh", "python", "-m", "dnnbench.workloads"]
    assert "--entrypoint /opt/nvidia/nvidia_entrypoint.sh" in res.stdout


@pytest.fixture(scope="session")
def ngc_sif(built_sif):
    """The tests' one .sif is the NGC stand-in's (tests/conftest.py)."""
    return built_sif


def test_ngc_sif_holds_the_constrained_package_and_no_ca(ngc_sif):
    from dnnbench.containers.engines import apptainer
    exe = apptainer.binary()
    labels = apptainer.labels(ngc_sif)
    assert labels[recipes.LABEL_CA] == hashlib.sha256(CA.read_bytes()).hexdigest()
    assert json.loads(labels[recipes.LABEL_ENTRYPOINT]) == ["/opt/nvidia/nvidia_entrypoint.sh"]
    res = subprocess.run([exe, "exec", "--cleanenv", ngc_sif, "sh", "-c",
                          f"ls /opt/{recipes.CA_FILE} 2>&1; env | grep -c PIP_CERT; python -c "
                          "\"import importlib.metadata as m; print(m.version('nvidia-ml-py'))\""],
                         capture_output=True, text=True, timeout=300)
    out = res.stdout.splitlines()
    assert "No such file" in out[0] and out[1] == "0" and out[2] == CONSTRAINED, res.stdout + res.stderr
    # the runscript is the chain too: `apptainer run` shows the banner before the workloads' help
    res = subprocess.run([exe, "run", "--cleanenv", ngc_sif, "--help"], capture_output=True, text=True, timeout=300)
    assert res.stdout.startswith(MARKER), res.stdout + res.stderr


def test_ngc_apptainer_run_goes_through_the_entrypoint(ngc_sif, tmp_path):
    plan, data, code, log = _run(ngc_sif, tmp_path, "vendor-ngc-sif", runtime="singularity")
    assert code == 0 and data["status"] == "ok", log[-2000:]
    assert plan.entrypoint == ["/opt/nvidia/nvidia_entrypoint.sh"]
    assert MARKER in log


def test_apptainer_runs_ignore_user_site_packages(ngc_sif, tmp_path):
    """The home folder is mounted on HPC nodes: ~/.local must not shadow the image's packages."""
    from dnnbench.containers.engines import apptainer
    plan = plan_mod.RunPlan(runtime="singularity", workload="x", run_id="x", run_dir=str(tmp_path),
                            image=str(ngc_sif), argv=["python", "-c", "import site; print(site.ENABLE_USER_SITE)"])
    res = subprocess.run(apptainer.apptainer_command(plan, apptainer.binary()), capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-1] == "False"


# --- Slurm steps keep their GPUs through --cleanenv -------------------------------------

def test_slurm_step_keeps_the_gpus_slurm_assigned(slurm_cluster, ngc_sif, tmp_path):
    from dnnbench.containers.engines import apptainer
    show = ["python", "-c", "import os; print(os.environ.get('CUDA_VISIBLE_DEVICES'))"]
    plan = plan_mod.RunPlan(runtime="singularity", workload="x", run_id="x", run_dir=str(tmp_path),
                            image=str(ngc_sif), argv=show, gpus=["all"], accelerator="none")
    inner = apptainer.apptainer_command(plan, apptainer.binary())
    srun = ["srun", "--nodes=1", "--ntasks=1", "--export=ALL,CUDA_VISIBLE_DEVICES=2", f"--chdir={tmp_path}"]

    def last_line(argv):
        res = subprocess.run(srun + argv, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        return res.stdout.splitlines()[-1]
    assert last_line(inner) == "None"                     # what --cleanenv alone does to a step
    assert last_line(apptainer.slurm_step(inner)) == "2"


# --- ROCm: no entrypoint, PyTorch in a conda-style environment ------------------------------

def test_rocm_image_runs_the_environments_python(rocm_image, tmp_path):
    info = _inspect(rocm_image)
    assert json.loads(info["Config"]["Labels"][recipes.LABEL_ENTRYPOINT]) == []
    assert info["Config"]["Entrypoint"] == ["/opt/conda/envs/py_3.10/bin/python", "-m", "dnnbench.workloads"]
    plan, data, code, log = _run(rocm_image, tmp_path, "vendor-rocm-docker")
    assert code == 0 and data["status"] == "ok", log[-2000:]
    assert plan.entrypoint == [] and MARKER not in log
    assert data["system"]["command_line"][0] == "/opt/conda/envs/py_3.10/bin/python"


# --- failures that name their cause ---------------------------------------------------

def test_without_the_ca_the_build_says_why(standins, tmp_path, monkeypatch):
    """This machine's proxy re-signs TLS: the pip step fails, and the error shows pip's own lines."""
    monkeypatch.delenv("DNNBENCH_CA_CERT", raising=False)
    res = dnnbench("build", "--base", "ngc-24.10", "--tag", _tag("ngc-noca"), "--log-dir", tmp_path)
    one_line_error(res, "docker build failed")
    assert "No matching distribution found for nvidia-ml-py" in res.stderr or "CERTIFICATE_VERIFY_FAILED" in res.stderr
    assert "hint: the network re-signs TLS" in res.stderr and "--ca-cert" in res.stderr


def test_pips_pep668_refusal_is_a_meaningful_line(test_base):
    """pip's own output on an EXTERNALLY-MANAGED Python, as a failed build log would hold it."""
    res = _in_image(test_base, "python3", "-m", "pip", "install", "--no-index", "nvidia-ml-py")
    assert res.returncode != 0
    lines = build_mod.meaningful_lines(res.stdout + res.stderr)
    assert lines[0] == "error: externally-managed-environment"


def test_wrong_architecture_is_refused_before_building(docker_engine, tmp_path):
    res = dnnbench("build", "--base", "powerai-1.7.0", "--log-dir", tmp_path)
    one_line_error(res, "ppc64le", "x86_64", "--platform linux/ppc64le")
    assert not list(tmp_path.glob("*.log"))   # nothing was started


def test_wrong_architecture_is_refused_before_running(test_base, tmp_path):
    tag = _tag("ppc64le-label")
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(f"FROM {test_base}\nLABEL {recipes.LABEL_BASE}=powerai-1.7.0 "
                                    f"{recipes.LABEL_ARCH}=ppc64le\n")
    subprocess.run(["docker", "build", "-q", "-t", tag, str(ctx)], check=True, capture_output=True)
    try:
        res = dnnbench("run", "resnet18", "--image", tag, "--results", tmp_path)
        one_line_error(res, "ppc64le", "x86_64", "--platform linux/ppc64le")
    finally:
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True)


def test_a_base_missing_from_the_catalog_gets_its_entrypoint_from_the_image(standins, tmp_path):
    """`local:` knows nothing of the image: the build reads its ENTRYPOINT and labels it."""
    tag = _tag("local-ngc")
    dnnbench("build", "--base", f"local:{standins['ngc']}", "--ca-cert", CA, "--tag", tag,
             "--log-dir", tmp_path, check=0)
    labels = _inspect(tag)["Config"]["Labels"]
    assert json.loads(labels[recipes.LABEL_ENTRYPOINT]) == ["/opt/nvidia/nvidia_entrypoint.sh"]


def test_slurm_script_chains_the_entrypoint_and_keeps_step_gpus(ngc_sif, tmp_path):
    res = dnnbench("slurm", "resnet18", "--image", ngc_sif, "--gpus-per-node", "2", "--results", tmp_path,
                   "--dry-run", check=0)
    srun = res.stdout[res.stdout.rindex("srun "):]
    assert "/opt/nvidia/nvidia_entrypoint.sh python -m torch.distributed.run" in srun.replace("\\\n    ", "")
    assert "APPTAINERENV_CUDA_VISIBLE_DEVICES" in srun and "PYTHONNOUSERSITE=1" in srun


def test_the_images_own_entrypoint_wins_over_the_catalog(standins, tmp_path):
    """ngc-21.07's catalog entry says /usr/local/bin/...: an image that starts another one keeps its own."""
    old = catalog.resolve("ngc-21.07")[0].image
    had = subprocess.run(["docker", "image", "inspect", old], capture_output=True).returncode == 0
    if had:
        pytest.fail(f"{old} is already on this machine: this test tags the stand-in with that name")
    subprocess.run(["docker", "tag", standins["ngc"], old], check=True)
    try:
        res = dnnbench("build", "--base", "ngc-21.07", "--ca-cert", CA, "--tag", _tag("ngc-2107"),
                       "--log-dir", tmp_path, check=0)
        assert "not [\"/usr/local/bin/nvidia_entrypoint.sh\"] as the catalog says" in res.stderr.replace("\n", " ")
        labels = _inspect(_tag("ngc-2107"))["Config"]["Labels"]
        assert json.loads(labels[recipes.LABEL_ENTRYPOINT]) == ["/opt/nvidia/nvidia_entrypoint.sh"]
    finally:
        subprocess.run(["docker", "image", "rm", old], capture_output=True)   # the tag only
