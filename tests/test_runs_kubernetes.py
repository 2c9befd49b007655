"""`dnnbench k8s` (runs/kubernetes.py), checked offline as no cluster can run here: every
manifest against Kubernetes' own schemas 1.30 to 1.37 (kubernetes-validate, strict), through
`kubectl create --dry-run=client` (tests/kube_api.py answers its discovery), the JobSet and
TrainJob CRDs' schemas (excerpts of the projects' own, tests/fixtures/k8s/README.md), golden
files; the pod's command is the job kind's, as a Slurm job's; bad input writes nothing."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.helpers import ROOT, cli_inprocess, dnnbench
from tests.kube_api import discovery

FIXTURES = ROOT / "tests" / "fixtures" / "k8s"
GOLDEN = ROOT / "tests" / "golden"
VERSIONS = [f"1.{minor}.0" for minor in range(30, 38)]
IMAGE = "registry.example.org/dnnbench:ngc-24.10"
JOB = ["resnet50", "--nodes", "2", "--gpus-per-node", "8", "--image", IMAGE, "--batch-size", "64", "--amp", "fp16",
       "--run-id", "r1"]
# the variants every kind is rendered in: GPUs of either vendor or none, claims or host paths, a
# queue and namespace or not, a workload or a script
VARIANTS = {
    "nvidia-claims": JOB + ["--base", "ngc-24.10", "--data-claim", "imagenet", "--queue", "team-a.gpu"],
    "amd-host-paths": ["resnet50", "--nodes", "4", "--gpus-per-node", "8", "--image", IMAGE, "--base", "rocm-6.0.2",
                       "--data-host-path", "/datasets/imagenet", "--results-host-path", "/scratch/results",
                       "--namespace", "bench", "--run-id", "r2"],
    "cpu-script": ["--script", "SCRIPT", "--nodes", "3", "--nproc-per-node", "2", "--image", IMAGE,
                   "--results-claim", "shared-results", "--run-id", "Script_Run.3", "--", "--epochs", "1"],
}
KINDS = ("indexed-job", "jobset", "trainjob")


def _render(tmp_path: Path, kind: str, args: list[str]) -> tuple[Path, list[dict]]:
    script = tmp_path / "script"
    script.mkdir(parents=True, exist_ok=True)
    (script / "main.py").write_text("print('trained')\n")
    args = [str(script / "main.py") if a == "SCRIPT" else a for a in args]
    out = tmp_path / kind
    cut = args.index("--") if "--" in args else len(args)     # what follows `--` is the script's
    code, _, err = cli_inprocess("k8s", *args[:cut], "--kind", kind, "-o", out, *args[cut:])
    assert code == 0, err
    files = list(out.iterdir())
    assert len(files) == 1 and files[0].suffix == ".yaml"
    return files[0], [d for d in yaml.safe_load_all(files[0].read_text()) if d]


def _strict(schema: dict) -> dict:
    """A CRD's structural schema as JSON Schema that refuses unknown fields (an API server
    drops them silently, which would hide a misspelt field)."""
    schema = dict(schema)
    if "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        schema.setdefault("additionalProperties", False)
        schema["properties"] = {k: _strict(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("additionalProperties"), dict):
        schema["additionalProperties"] = _strict(schema["additionalProperties"])
    if "items" in schema:
        schema["items"] = _strict(schema["items"])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            schema[key] = [_strict(s) for s in schema[key]]
    return schema


def _crd(kind: str) -> tuple[dict, jsonschema.Draft7Validator]:
    found = yaml.safe_load((FIXTURES / f"{kind.lower()}-crd-schema.yaml").read_text())
    return found, jsonschema.Draft7Validator(_strict(found["openAPIV3Schema"]))


def _validate(doc: dict) -> None:
    """Core kinds against every 1.3x schema; a JobSet's Job as a batch/v1 Job too; CRDs against
    their excerpt."""
    if doc["kind"] in ("JobSet", "TrainJob"):
        crd, validator = _crd(doc["kind"])
        assert doc["apiVersion"] == f"{crd['group']}/{crd['version']}"
        errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, errors
        if doc["kind"] == "JobSet":
            for job in doc["spec"]["replicatedJobs"]:
                _validate({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": doc["metadata"]["name"]},
                           "spec": job["template"]["spec"]})
        return
    for version in VERSIONS:
        kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("kind", KINDS)
def test_every_manifest_validates(kind, variant, tmp_path):
    _, docs = _render(tmp_path, kind, VARIANTS[variant])
    assert docs
    for doc in docs:
        _validate(doc)


def test_kubectl_creates_every_manifest_in_a_client_side_dry_run(tmp_path):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl is not installed (scripts/dev-setup.sh installs Debian's kubernetes-client)")
    files, expected = [], []
    for kind in KINDS:
        for variant, args in VARIANTS.items():
            path, docs = _render(tmp_path / variant, kind, args)
            files.append(path)
            expected += [d["kind"].lower() + "/" + d["metadata"]["name"] for d in docs]
    with discovery() as server:
        res = subprocess.run([kubectl, "create", "--dry-run=client", "--validate=false", "-s", server,
                              "-o", "name", *[a for f in files for a in ("-f", str(f))]],
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    made = [line.split(".", 1)[0] + "/" + line.split("/", 1)[1] if "." in line.split("/")[0] else line
            for line in res.stdout.split()]
    assert made == expected


def test_the_indexed_job_meets_at_pod_0_one_pod_a_node(tmp_path):
    _, docs = _render(tmp_path, "indexed-job", VARIANTS["nvidia-claims"])
    service, job = docs
    name = job["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["selector"] == {
        "batch.kubernetes.io/job-name": name}           # the label the Job controller gives its pods
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 2
    pod = spec["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] == name
    (container,) = pod["containers"]
    args = container["args"]
    assert f"--master_addr={name}-0.{name}" in args and "--node_rank=$(JOB_COMPLETION_INDEX)" in args
    index = next(e for e in container["env"] if e["name"] == "JOB_COMPLETION_INDEX")
    assert index["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 8}
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a.gpu"
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/data"]["readOnly"] is True and not mounts["/results"].get("readOnly")
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"] == {"claimName": "imagenet", "readOnly": True}
    assert volumes["results"]["persistentVolumeClaim"] == {"claimName": "dnnbench-results"}


def test_amd_gpus_and_host_paths(tmp_path):
    _, docs = _render(tmp_path, "jobset", VARIANTS["amd-host-paths"])
    (jobset,) = docs
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {"amd.com/gpu": 8}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["data"]["hostPath"] == {"path": "/datasets/imagenet", "type": "Directory"}
    assert volumes["results"]["hostPath"]["path"] == "/scratch/results"
    name = jobset["metadata"]["name"]
    assert f"--master_addr={name}-node-0-0.{name}" in pod["containers"][0]["args"]   # JobSet's pod hostnames
    assert jobset["spec"]["network"] == {"enableDNSHostnames": True, "subdomain": name}


def _module_args(argv: list[str]) -> list[str]:
    return argv[argv.index("-m", argv.index("torch.distributed.run")):]


def test_the_pod_runs_what_a_slurm_job_runs(tmp_path):
    """One definition of what runs (the job kind's): the words after torchrun's own flags are the
    same in the Slurm script, the Indexed Job's pods and the TrainJob's."""
    res = dnnbench("slurm", *JOB, "--image", str(tmp_path / "x.sif"), "--dry-run", check=0)
    command = res.stdout.split("srun --kill-on-bad-exit=1 bash -c \"$TASK\" task \\\n")[-1]
    slurm = _module_args(shlex.split(command.replace("\\\n", " ")))
    assert slurm[:3] == ["-m", "dnnbench.workloads", "resnet50"] and "--amp" in slurm
    _, (_, job) = _render(tmp_path, "indexed-job", JOB)
    assert _module_args(job["spec"]["template"]["spec"]["containers"][0]["args"]) == slurm
    _, (trainjob,) = _render(tmp_path, "trainjob", JOB)
    assert _module_args(trainjob["spec"]["trainer"]["command"]) == slurm
    assert trainjob["spec"]["trainer"]["numNodes"] == 2 and trainjob["spec"]["trainer"]["numProcPerNode"] == 8


def test_a_script_reaches_the_pods_as_a_config_map(tmp_path):
    _, docs = _render(tmp_path, "indexed-job", VARIANTS["cpu-script"])
    config, _, job = docs
    assert config["kind"] == "ConfigMap" and config["data"] == {"main.py": "print('trained')\n"}
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "files-0", "mountPath": "/script", "readOnly": True} in container["volumeMounts"]
    args = _module_args(container["args"])
    assert args[:2] == ["-m", "dnnbench.workloads.instrument"] and args[-3:] == ["/script/main.py", "--epochs", "1"]
    assert "resources" not in container and "--nproc_per_node=2" in container["args"]


@pytest.mark.parametrize("kind", KINDS)
def test_golden(kind, tmp_path):
    """Any change to what a cluster is given shows here; refresh with DNNBENCH_UPDATE_GOLDEN=1."""
    path, _ = _render(tmp_path, kind, VARIANTS["nvidia-claims"])
    golden = GOLDEN / f"k8s-{kind}.yaml"
    if os.environ.get("DNNBENCH_UPDATE_GOLDEN"):
        golden.write_text(path.read_text())
    assert golden.exists(), f"no golden file {golden}: run with DNNBENCH_UPDATE_GOLDEN=1 and review it"
    assert path.read_text() == golden.read_text()


@pytest.mark.parametrize("args, fragment", [
    (["--nodes", "0"], "--nodes"),
    (["--gpus-per-node", "x"], "--gpus-per-node"),
    (["--gpus-per-node", "1.5"], "--gpus-per-node"),
    (["--image", "registry.example.org/dnnbench:with space"], "--image"),
    (["--image", "registry.example.org/dnnbench:v1\n"], "--image"),
    (["--queue", "team a"], "--queue"),
    (["--queue", "-team"], "--queue"),
    (["--queue", "team/a"], "--queue"),
    (["--queue", "q" * 64], "--queue"),
    (["--queue", 'team"a'], "--queue"),
    (["--data-claim", "a", "--data-host-path", "/d"], "exclude each other"),
    (["--data-claim", "Not_A_Claim"], "--data-claim"),
    (["--data-host-path", "relative/path"], "--data-host-path"),
    (["--namespace", "Bad NS"], "--namespace"),
    (["--kind", "pytorchjob"], "--kind"),
    (["--env", "RANK=3"], "RANK"),
])
def test_bad_input_is_one_line_and_writes_nothing(args, fragment, tmp_path):
    out = tmp_path / "manifests"
    code, _, err = cli_inprocess("k8s", "resnet50", "--image", IMAGE, *args, "-o", out)
    assert code == 2 and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and fragment in lines[0] and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_bad_input_from_the_real_entry_point(tmp_path):
    """The same refusal from a subprocess (what a user sees); and no --image at all."""
    res = dnnbench("k8s", "resnet50", "--image", IMAGE, "--queue", "team a", "-o", tmp_path / "m")
    assert res.returncode == 2 and res.stderr.startswith("error: --queue 'team a'") and len(res.stderr.splitlines()) == 1
    res = dnnbench("k8s", "resnet50", "-o", tmp_path / "m")
    assert res.returncode == 2 and "--image" in res.stderr and not (tmp_path / "m").exists()
