"""`dnnbench k8s`: Kubernetes manifests for a workload or a script on N nodes (runs/kubernetes.py)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from dnnbench.cli.harness_options import INJECTED, choice, in_range, with_harness_options, with_params
from dnnbench.cli.host_options import with_host_options
from dnnbench.cli.runs import SCRIPT_PARAMS, WORKLOAD_OR_SCRIPT, run_options, workload_or_script
from dnnbench.runs.kubernetes import KINDS
from dnnbench.workloads.options import BY_NAME

if TYPE_CHECKING:
    Kind = str
else:
    Kind = choice("Kind", KINDS)

K8S_HELP = """Write Kubernetes manifests that run a workload (or --script) on N nodes, one pod per node.

--kind indexed-job (default): a batch/v1 Indexed Job and a headless Service; torchrun's
rendezvous is pod 0, reached by the Service's DNS name, and each pod's completion index is its
node rank. --kind jobset: the same Job inside a JobSet (jobset.x-k8s.io/v1alpha2). --kind
trainjob: a Kubeflow Trainer v2 TrainJob on the torch-distributed runtime.

Each pod runs what a Slurm job's steps run (the job kind's command under torchrun) and rank 0
writes RESULTS/<run-id>/result.json on the results volume: a PersistentVolumeClaim
(--results-claim, default dnnbench-results) or a folder on the nodes (--results-host-path).
The dataset is mounted read-only at /data from --data-claim or --data-host-path. GPUs are
requested as nvidia.com/gpu limits, or amd.com/gpu for a ROCm --base. --queue adds Kueue's
kueue.x-k8s.io/queue-name label.

The manifests are checked offline (Kubernetes' schemas, kubectl's client-side dry run, the
JobSet and TrainJob CRD schemas); they were not run on a cluster where dnnbench is developed
(docs/kubernetes.md).

Examples:

\b
  dnnbench k8s resnet50 --nodes 2 --gpus-per-node 8 \\
      --image registry.example.org/dnnbench:ngc-24.10 --base ngc-24.10 \\
      --data-claim imagenet --queue team-a -o manifests/
  dnnbench k8s --script train.py --nodes 4 --gpus-per-node 4 --kind jobset \\
      --image nvcr.io/nvidia/pytorch:24.10-py3 -- --epochs 1

Options after `--` go to the workload (or the script) unchanged."""


def k8s(
    ctx: typer.Context,
    workload: Optional[str] = WORKLOAD_OR_SCRIPT,
    nodes: int = typer.Option(1, "--nodes", "-N", callback=in_range(BY_NAME["nodes"]), help="Nodes (one pod each)."),
    gpus_per_node: int = typer.Option(0, "--gpus-per-node", "-G", callback=in_range(BY_NAME["gpus_per_node"]),
                                      help="GPUs per pod, one process each; 0 runs on CPUs (gloo)."),
    nproc_per_node: Optional[int] = typer.Option(None, "--nproc-per-node", callback=in_range(BY_NAME["nproc_per_node"]),
                                                 help="CPU runs: processes per pod (default 1)."),
    kind: Kind = typer.Option("indexed-job", "--kind", help="indexed-job, jobset or trainjob."),
    queue: Optional[str] = typer.Option(None, "--queue", help="Kueue LocalQueue (the kueue.x-k8s.io/queue-name label)."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace of the objects "
                                            "(default: kubectl's)."),
    data_claim: Optional[str] = typer.Option(None, "--data-claim", help="Dataset: this PersistentVolumeClaim, "
                                             "read-only at /data."),
    data_host_path: Optional[str] = typer.Option(None, "--data-host-path", help="Dataset: this folder on the "
                                                 "nodes, read-only at /data."),
    results_claim: Optional[str] = typer.Option(None, "--results-claim", help="Results: this PersistentVolumeClaim "
                                                "(default dnnbench-results), at /results."),
    results_host_path: Optional[str] = typer.Option(None, "--results-host-path", help="Results: this folder on "
                                                    "the nodes, at /results."),
    python: Optional[str] = typer.Option(None, "--python", help="The image's Python (default: the --base's, "
                                         "else python3)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write DIR/<name>.yaml (default: print)."),
    host: dict = INJECTED,
    harness: dict = INJECTED,
    script_opts: dict = INJECTED,
):
    from dnnbench.errors import DnnbenchError
    from dnnbench.runs.kubernetes import K8sOptions, Volume, k8s_command
    workload, extra = workload_or_script(workload, list(ctx.args), script_opts["script"])
    volumes: dict = {}
    for what, claim, path, default in (("data", data_claim, data_host_path, None),
                                       ("results", results_claim, results_host_path, "dnnbench-results")):
        if claim is not None and path is not None:
            raise DnnbenchError(f"--{what}-claim and --{what}-host-path exclude each other")
        volumes[what] = Volume(claim=claim, host_path=path) if claim or path else (
            Volume(claim=default) if default else None)
    opts = run_options(workload, host, extra=extra, **script_opts, **harness)
    raise typer.Exit(k8s_command(K8sOptions(
        run=opts, nodes=nodes, gpus_per_node=gpus_per_node, nproc_per_node=nproc_per_node, kind=kind, queue=queue,
        namespace=namespace, data=volumes["data"], results=volumes["results"], python=python), output))


def register(app: typer.Typer) -> None:
    command = with_params(SCRIPT_PARAMS, key="script_opts")(with_harness_options()(with_host_options("k8s")(k8s)))
    app.command("k8s", context_settings={"allow_extra_args": True, "ignore_unknown_options": False},
                help=K8S_HELP)(command)
