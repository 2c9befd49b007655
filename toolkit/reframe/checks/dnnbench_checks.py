"""dnnbench's ReFrame checks: `reframe -c $(python -m dnnbench.reframe) -t smoke -r`.

dnnbench_smoke (tag smoke) runs on any system, ReFrame's generic one included: a few steps of
resnet18 on the CPU, seconds. dnnbench_throughput (tag throughput) measures a workload's training
throughput on partitions with the feature `gpu`; dnnbench_train (tag train) trains to a target
there. Every setting is a variable: `-S dnnbench_throughput.workload=bert`, or several values at
once with `-P workload=resnet50,bert -P precision=none,fp16`. References per system and partition
go in a subclass's `reference` (dnnbench.reframe.library has the classes), or come from dnnbench's
history (`-S reference_job=JOB`). docs/reframe.md has the rest."""
import reframe as rfm

from dnnbench.reframe.library import DnnbenchRun, DnnbenchSmoke, DnnbenchTrain


@rfm.simple_test
class dnnbench_smoke(DnnbenchSmoke):
    pass


@rfm.simple_test
class dnnbench_throughput(DnnbenchRun):
    """A workload's training throughput on the partition's GPUs (resnet50 in fp16 unless set)."""

    descr = "dnnbench: training throughput"
    tags = {"throughput", "dnnbench"}
    precision = "fp16"


@rfm.simple_test
class dnnbench_train(DnnbenchTrain):
    """Training to a target accuracy on a real dataset (`-S dnnbench_train.data=DIR`): resnet50
    to MLPerf's 75.9 % top-1 unless set."""

    descr = "dnnbench: time to a target accuracy"
    tags = {"train", "dnnbench"}
    workload = "resnet50"
    target_accuracy = 75.9
