"""`dnnbench k8s`: Kubernetes manifests for a job on N nodes, the way clusters place training:
an Indexed Job with a headless Service (torchrun's rendezvous on pod 0, reached by the
Service's DNS name; JOB_COMPLETION_INDEX the node rank; one pod per node), a JobSet, or a
Kubeflow Trainer v2 TrainJob; Kueue's queue label where a queue is named.

What runs in each pod is the job kind's own command (runs/kinds.py: `module_args`, the same as
a Slurm job's steps and a local run's), behind torchrun; the result is written as every
placement writes it, to RESULTS/<run-id>/result.json, RESULTS a volume (a claim or a host
path). Only the placement is this module's: pods, volumes, GPU limits, the rendezvous.

The manifests are rendered and checked offline (no cluster can run on the machines this is
developed on): nothing here talks to a cluster.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from dnnbench import names
from dnnbench.errors import DnnbenchError
from dnnbench.runs import kinds
from dnnbench.runs import plan as plan_mod
from dnnbench.runs.options import RunOptions

KINDS = ("indexed-job", "jobset", "trainjob")
PORT = 29500                       # torchrun's rendezvous, on pod 0
CONTAINER = "dnnbench"             # the container's name (TrainJob's runtime calls it `node`)
TRAINJOB_CONTAINER = "node"
TRAINJOB_RUNTIME = "torch-distributed"   # Kubeflow Trainer's ClusterTrainingRuntime for torchrun
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
GPU_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}
CONFIGMAP_MAX = 1_000_000          # a ConfigMap holds at most 1 MiB: a script folder beyond it goes in the image
# a label value: 63 characters at most, alphanumerics at both ends, - _ . between
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
# an object name for a Service and a Job's pods' hostnames: a DNS-1123 label (lowercase)
_DNS_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?")
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
NAME_MAX = 40     # JobSet names its pods <name>-node-0-<i>: the whole must stay a 63-character label


@dataclass
class Volume:
    """A dataset or results volume: a PersistentVolumeClaim, or a path on the node."""
    claim: str | None = None
    host_path: str | None = None

    def source(self, read_only: bool) -> dict:
        if self.claim:
            return {"persistentVolumeClaim": {"claimName": self.claim, **({"readOnly": True} if read_only else {})}}
        return {"hostPath": {"path": self.host_path, "type": "Directory" if read_only else "DirectoryOrCreate"}}


@dataclass
class K8sOptions:
    run: RunOptions                          # workload or --script, harness options, image, base, run id, env
    nodes: int = 1
    gpus_per_node: int = 0
    nproc_per_node: int | None = None        # CPU runs: processes per pod (gloo)
    kind: str = "indexed-job"
    queue: str | None = None
    namespace: str | None = None
    data: Volume | None = None
    results: Volume = field(default_factory=lambda: Volume(claim="dnnbench-results"))
    python: str | None = None                # the image's Python: the base's, else python3


def _check(o: K8sOptions) -> None:
    """Every option a manifest carries, checked before anything is rendered or written."""
    if o.kind not in KINDS:
        raise DnnbenchError(f"--kind {o.kind!r}: choose {', '.join(KINDS)}")
    if isinstance(o.nodes, bool) or not isinstance(o.nodes, int) or o.nodes < 1:
        raise DnnbenchError(f"--nodes {o.nodes!r}: give 1 or more (one pod per node)")
    if isinstance(o.gpus_per_node, bool) or not isinstance(o.gpus_per_node, int) or o.gpus_per_node < 0:
        raise DnnbenchError(f"--gpus-per-node {o.gpus_per_node!r}: give a whole number, 0 for CPU")
    if o.nproc_per_node is not None and (o.nproc_per_node < 1 or o.gpus_per_node):
        raise DnnbenchError("--nproc-per-node is for CPU runs (at least 1); with GPUs one process runs per GPU")
    image = o.run.image
    if not image:
        raise DnnbenchError("--image: name the image by its registry reference (the cluster pulls it)")
    from dnnbench.containers.catalog import IMAGE_REF
    if not IMAGE_REF.fullmatch(image):
        raise DnnbenchError(f"--image {image!r}: not an image reference (registry/name:tag, no spaces)")
    if o.queue is not None and not (o.queue and _LABEL_VALUE.fullmatch(o.queue)):
        raise DnnbenchError(f"--queue {o.queue!r}: a Kueue LocalQueue name is a label value: 63 characters at "
                            f"most, letters and digits at both ends, - _ . between")
    if o.namespace is not None and not _DNS_LABEL.fullmatch(o.namespace):
        raise DnnbenchError(f"--namespace {o.namespace!r}: lowercase letters, digits and -, 63 at most")
    for what, volume in (("data", o.data), ("results", o.results)):
        if volume is None:
            continue
        if volume.claim is not None and not _DNS_NAME.fullmatch(volume.claim):
            raise DnnbenchError(f"--{what}-claim {volume.claim!r}: a claim's name is lowercase letters, digits, "
                                f"- and . (253 at most)")
        if volume.host_path is not None and not (volume.host_path.startswith("/") and volume.host_path.isprintable()):
            raise DnnbenchError(f"--{what}-host-path {volume.host_path!r}: an absolute path on the nodes")


_DNS_NAME = re.compile(r"(?=.{1,253}$)[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?")


def object_name(run_id: str) -> str:
    """The objects' name from the run id: a DNS label, short enough for every pod's hostname."""
    name = re.sub(r"[^a-z0-9-]+", "-", f"dnnbench-{run_id}".lower()).strip("-")
    return name[:NAME_MAX].rstrip("-")


def python_of(o: K8sOptions) -> str:
    """The image's Python: --python, else the catalog base's (python3 on NGC), else python3."""
    if o.python:
        if not re.fullmatch(r"[A-Za-z0-9_./-]+", o.python):
            raise DnnbenchError(f"--python {o.python!r}: a program name or path")
        return o.python
    if o.run.base:
        from dnnbench.containers import catalog
        return catalog.resolve(o.run.base)[0].python_bin
    return "python3"


def gpu_resource(base: str | None) -> str:
    """`nvidia.com/gpu` or `amd.com/gpu`: the base's accelerator where the catalog knows it,
    else NVIDIA's (the device plugin most clusters run)."""
    if base:
        from dnnbench.containers import catalog
        accelerator = catalog.resolve(base)[0].accelerator
        if accelerator in GPU_RESOURCE:
            return GPU_RESOURCE[accelerator]
    return GPU_RESOURCE["nvidia"]


@dataclass
class Rendered:
    name: str
    run_id: str
    documents: list[dict]


def _config_maps(name: str, mounts: list, labels: dict) -> tuple[list[dict], list[dict], list[dict]]:
    """The kind's own mounts (a script's folder) as ConfigMaps: a host folder cannot reach a
    cluster otherwise. (ConfigMaps, volumes, volume mounts); one error line for a folder that
    does not fit in one."""
    from dnnbench.workloads import fileio
    maps, volumes, mounted = [], [], []
    for k, m in enumerate(mounts):
        folder = Path(m.source)
        files = {}
        for path in sorted(folder.iterdir()):
            if path.name.startswith(".") or path.name == "__pycache__":
                continue
            if not fileio.is_regular(str(path)) or not _CONFIG_KEY.fullmatch(path.name):
                raise DnnbenchError(f"{folder}: {path.name} is not a plain file; a script folder reaches the pods "
                                    f"as a ConfigMap of its files (build the script into the image instead)")
            try:
                files[path.name] = fileio.read_text(str(path), CONFIGMAP_MAX)
            except (OSError, ValueError) as exc:     # unreadable, too large, not UTF-8
                raise DnnbenchError(f"{path}: cannot be put in a ConfigMap ({exc})") from None
        if sum(len(v.encode()) for v in files.values()) > CONFIGMAP_MAX:
            raise DnnbenchError(f"{folder}: more than 1 MiB, more than a ConfigMap holds (build it into the image)")
        map_name = f"{name}-files-{k}"
        maps.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": map_name, "labels": labels},
                     "data": files})
        volumes.append({"name": f"files-{k}", "configMap": {"name": map_name}})
        mounted.append({"name": f"files-{k}", "mountPath": m.target, "readOnly": True})
    return maps, volumes, mounted


def _env(values: dict) -> list[dict]:
    return [{"name": k, "value": str(v)} for k, v in sorted(values.items())]


def render(o: K8sOptions) -> Rendered:
    """The manifests, after every check (the kind's own, as a Slurm job's are checked)."""
    _check(o)
    opts = dataclasses.replace(o.run, data=None)    # the dataset is the cluster's volume, not a folder here
    kind = kinds.kind_of(opts)
    checked = kind.check(opts, None)
    run_id = opts.run_id or names.new_run_id(checked.workload, "k8s")
    name = object_name(run_id)
    gpus = o.gpus_per_node > 0
    o = dataclasses.replace(o, python=python_of(o))
    per_node = o.gpus_per_node if gpus else (o.nproc_per_node or 1)
    where = kinds.Where(contained=True, results_in=plan_mod.RESULTS_DIR,
                        data_in=plan_mod.DATA_DIR if o.data is not None else None, run_dir=Path(plan_mod.RESULTS_DIR))
    module_args = kind.module_args(opts, None, checked, run_id=run_id, where=where, device="cuda" if gpus else "cpu")
    labels = {"app.kubernetes.io/name": "dnnbench", "app.kubernetes.io/instance": name}
    own_labels = dict(labels, **({QUEUE_LABEL: o.queue} if o.queue else {}))
    maps, file_volumes, file_mounts = _config_maps(name, kind.mounts(opts, None, checked), labels)
    volumes = [{"name": "results", **o.results.source(read_only=False)}]
    mounts: list[dict] = [{"name": "results", "mountPath": plan_mod.RESULTS_DIR}]
    if o.data is not None:
        volumes.append({"name": "data", **o.data.source(read_only=True)})
        mounts.append({"name": "data", "mountPath": plan_mod.DATA_DIR, "readOnly": True})
    volumes += file_volumes + [{"name": "shm", "emptyDir": {"medium": "Memory"}}]   # DataLoader workers' /dev/shm
    mounts += file_mounts + [{"name": "shm", "mountPath": "/dev/shm"}]
    env = {"DNNBENCH_RUN_ID": run_id, "DNNBENCH_IMAGE": opts.image, **opts.env, **kind.env(where)}
    limits = {gpu_resource(opts.base): o.gpus_per_node} if gpus else {}
    meta = {"name": name, "labels": own_labels, **({"namespace": o.namespace} if o.namespace else {})}
    if o.kind == "trainjob":
        docs = [_trainjob(o, meta, module_args, per_node, env, limits, volumes, mounts)]
    else:
        # torchrun on each pod: static rendezvous at pod 0 by its DNS name, the pod's index its rank
        head = f"{name}-0.{name}" if o.kind == "indexed-job" else f"{name}-node-0-0.{name}"
        argv = [o.python, "-m", "torch.distributed.run", f"--nnodes={o.nodes}", f"--nproc_per_node={per_node}",
                "--node_rank=$(JOB_COMPLETION_INDEX)", f"--master_addr={head}", f"--master_port={PORT}",
                *module_args]
        container = {"name": CONTAINER, "image": opts.image, "args": [_literal(a) for a in argv],
                     "workingDir": kind.workdir,
                     "env": [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                         "fieldPath": f"metadata.annotations['{INDEX_ANNOTATION}']"}}}] + _env(env),
                     "ports": [{"name": "rendezvous", "containerPort": PORT}],
                     "volumeMounts": mounts, **({"resources": {"limits": limits}} if limits else {})}
        job_spec = {"completionMode": "Indexed", "completions": o.nodes, "parallelism": o.nodes, "backoffLimit": 0,
                    "template": {"metadata": {"labels": labels},
                                 "spec": {"restartPolicy": "Never", "containers": [container], "volumes": volumes,
                                          **({"subdomain": name} if o.kind == "indexed-job" else {})}}}
        if o.kind == "indexed-job":
            service = {"apiVersion": "v1", "kind": "Service",
                       "metadata": {**meta, "labels": labels},
                       "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                                "selector": {"batch.kubernetes.io/job-name": name},
                                "ports": [{"name": "rendezvous", "port": PORT, "targetPort": PORT}]}}
            docs = [service, {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job_spec}]
        else:
            docs = [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
                     "spec": {"network": {"enableDNSHostnames": True, "subdomain": name},
                              "failurePolicy": {"maxRestarts": 0},
                              "replicatedJobs": [{"name": "node", "replicas": 1, "template": {"spec": job_spec}}]}}]
    for m in maps:
        if o.namespace:
            m["metadata"]["namespace"] = o.namespace
    return Rendered(name, run_id, maps + docs)


def _literal(word: str) -> str:
    """An argument as the container gets it: Kubernetes expands $(NAME) in args, so a `$(` of
    the user's is written `$$(` (which it turns back into `$(`); ours is JOB_COMPLETION_INDEX."""
    return word if word == "--node_rank=$(JOB_COMPLETION_INDEX)" else word.replace("$(", "$$(")


def _trainjob(o: K8sOptions, meta: dict, module_args: list[str], per_node: int, env: dict, limits: dict,
              volumes: list[dict], mounts: list[dict]) -> dict:
    """A Kubeflow Trainer v2 TrainJob on the torch-distributed runtime: the runtime sets torchrun's
    nodes, rank and rendezvous (its PET_ variables); the volumes go in as a runtime patch (which
    takes no working directory: the runtime's stands)."""
    assert o.python is not None      # render() filled it in (python_of)
    trainer: dict = {"image": o.run.image, "command": [_literal(a) for a in
                                                       [o.python, "-m", "torch.distributed.run", *module_args]],
               "numNodes": o.nodes, "numProcPerNode": per_node, "env": _env(env)}
    if limits:
        trainer["resourcesPerNode"] = {"limits": limits}
    pod = {"volumes": volumes, "containers": [{"name": TRAINJOB_CONTAINER, "volumeMounts": mounts}]}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta,
            "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime",
                                    "name": TRAINJOB_RUNTIME},
                     "trainer": trainer,
                     "runtimePatches": [{"manager": "dnnbench", "trainingRuntimeSpec": {"template": {"spec": {
                         "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
                             "spec": pod}}}}]}}}}]}}


def yaml_text(rendered: Rendered) -> str:
    import yaml
    head = (f"# dnnbench k8s: {rendered.run_id}; rendered and validated offline, not run on a cluster here.\n"
            f"# The result: RESULTS/{rendered.run_id}/result.json on the results volume.\n")
    return head + yaml.safe_dump_all(rendered.documents, sort_keys=False, default_flow_style=False, width=100)


def k8s_command(o: K8sOptions, output: Path | None) -> int:
    """Render, then print (no -o) or write DIR/<name>.yaml whole; nothing is written before every
    check has passed."""
    from dnnbench.console import info
    from dnnbench.workloads import fileio
    rendered = render(o)
    text = yaml_text(rendered)
    if output is None:
        import sys
        sys.stdout.write(text)
        return 0
    target = output / f"{rendered.name}.yaml"
    try:
        fileio.make_dirs(str(output))
        fileio.write_atomic_text(str(target), text)
    except OSError as exc:
        raise DnnbenchError(f"cannot write {target}: {exc.strerror or exc}") from None
    info(f"wrote {target} ({', '.join(d['kind'] for d in rendered.documents)}); apply it with "
         f"`kubectl create -f {target}`; the result: RESULTS/{rendered.run_id}/result.json on the results volume")
    return 0
