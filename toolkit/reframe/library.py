"""dnnbench's ReFrame test library: the base classes a site subclasses (or the checks in
`checks/` register as they are). A check runs `dnnbench run` or `dnnbench train` as its job; its
sanity and performance functions read the run's result.json through dnnbench's own reader
(figures.py), never a regular expression over the output. References are ReFrame's own
`reference` dict per system and partition, or the median of a job in dnnbench's history store
(`reference_job`)."""
from __future__ import annotations

import os
import shlex
import sys
import time
import uuid
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, sanity_function, variable
from reframe.core.exceptions import PerformanceError, ReframeError, SanityError

from dnnbench.errors import DnnbenchError
from dnnbench.reframe import figures
from dnnbench.runs.checks import check_writable


class DnnbenchCheck(rfm.RunOnlyRegressionTest):
    """What every dnnbench check shares: the command, where results go, the runtime and image,
    reading the result and its throughput."""

    #: How to start dnnbench on the partition's nodes (shell words): by default the Python that
    #: runs ReFrame, which has dnnbench beside it (`pip install 'dnnbench[reframe]'`).
    dnnbench = variable(str, value=f"{shlex.quote(sys.executable)} -m dnnbench")
    #: The workload (`dnnbench workloads` lists them).
    workload = variable(str, value="resnet50")
    #: Per-GPU batch size; 0: the workload's own.
    batch_size = variable(int, value=0)
    #: Autocast precision: none, fp16 or bf16.
    precision = variable(str, value="none")
    #: docker, apptainer (singularity) or host; empty: a container when `image` or `base` is set,
    #: of the platform the partition declares (`container_platforms`), else host.
    runtime = variable(str, value="")
    #: A Docker tag or .sif file; or `base`, the image of a catalog base (`dnnbench bases`).
    image = variable(str, value="")
    base = variable(str, value="")
    #: GPUs as `dnnbench run --gpus` takes them; empty: all on a partition with the feature
    #: `gpu`, else the CPU.
    gpus = variable(str, value="")
    #: The dataset folder; empty: synthetic data.
    data = variable(str, value="")
    #: The results folder (the run goes in RESULTS/<run_id>/); empty: the check's output folder.
    #: A lasting folder keeps every night's results for `dnnbench report` and `history`.
    results = variable(str, value="")
    #: More `dnnbench run` options, as words (`-S options=--channels-last,--compile`).
    options = variable(typ.List[str], value=[])
    #: The median of this job's newest `reference_last` ok results in dnnbench's history store
    #: (on the run's GPU model) becomes the throughput reference of the current partition,
    #: with `reference_lower` and `reference_upper` as its bounds (fractions, as ReFrame's).
    reference_job = variable(str, value="")
    reference_last = variable(int, value=20)
    reference_lower = variable(float, value=-0.1)
    reference_upper = variable(float, type(None), value=None)
    #: The history store (a SQLite file or postgresql:// URL); empty: dnnbench's default
    #: ($DNNBENCH_DB, else ~/.local/share/dnnbench/history.db).
    reference_db = variable(str, value="")
    #: Set by the check: the run's folder name and result file (they show in the perflog).
    run_id = variable(str, value="")
    result_file = variable(str, value="")

    valid_systems = ["+gpu"]
    valid_prog_environs = ["*"]
    num_tasks = 1
    maintainers = ["dnnbench"]

    command = "run"

    @run_after("setup")
    def dnnbench_command(self):
        """The job: one dnnbench command, its run folder named here so the sanity and the
        performance functions find its result."""
        # by default in the check's output folder, which ReFrame keeps (the stage folder goes)
        # (a --dry-run has no output folder: its stage folder then)
        results = Path(self.results or os.path.join(self.outputdir or self.stagedir, "results")).absolute()
        try:     # said now, before a job waits in a queue to find it out
            check_writable(results, "results dir")
        except DnnbenchError as exc:
            raise ReframeError(f"{self.name}: {exc}") from None
        self.run_id = "-".join((time.strftime("%Y%m%d-%H%M%S"), self.unique_name,
                                self.current_partition.name, uuid.uuid4().hex[:6]))
        self.result_file = str(results / self.run_id / "result.json")
        self.executable = self.dnnbench
        words = [self.command, self.workload, "--results", str(results), "--run-id", self.run_id,
                 *self._runtime_options()]
        if self.batch_size:
            words += ["--batch-size", str(self.batch_size)]
        if self.precision != "none":
            words += ["--amp", self.precision]
        if self.data:
            words += ["--data", self.data]
        self.executable_opts = [shlex.quote(w) for w in words + self.extra_options() + list(self.options)]

    def extra_options(self) -> list[str]:
        """Options of the kind of check (run: its timing; train: its target)."""
        return []

    def _runtime_options(self) -> list[str]:
        from dnnbench.containers.engines import lookup
        words = []
        runtime = self.runtime
        if not runtime and (self.image or self.base):
            platform = self.current_partition.container_runtime
            if platform is not None:
                engine = lookup(platform.lower())
                if engine is None:
                    raise ReframeError(f"partition {self.current_partition.fullname}: dnnbench runs no "
                                       f"{platform} container: set the check's runtime")
                runtime = platform.lower()      # one of the engine's own names
                environ = self.current_partition.container_environs.get(platform)
                if environ is not None:   # the platform's modules and variables, as ReFrame's own
                    had_modules, had_vars = getattr(self, "modules"), getattr(self, "env_vars")   # untyped
                    self.modules = [*had_modules, *environ.modules]
                    self.env_vars = {**had_vars, **environ.env_vars}
        if not runtime and not (self.image or self.base):
            runtime = "host"
        self.runtime = runtime         # the perflog says how it ran
        if runtime:
            words += ["--runtime", runtime]
        if self.image:
            words += ["--image", self.image]
        if self.base:
            words += ["--base", self.base]
        self.gpus = self.gpus or ("all" if "gpu" in self.current_partition.features else "cpu")
        words += ["--gpus", self.gpus]
        return words

    def run_result(self) -> dict:
        """The run's result, read once; a problem is ReFrame's SanityError with its one line."""
        cached = getattr(self, "_dnnbench_result", None)
        if cached is not None:
            return cached
        try:
            data = figures.read(Path(self.result_file).parent, figures.job_log(Path(self.stagedir, self.job.stderr)))
        except figures.ResultProblem as exc:
            raise SanityError(str(exc)) from None
        self._dnnbench_result = data
        return data

    def passes(self, data: dict) -> None:
        figures.check_ok(data, self.result_file)

    @sanity_function
    def result_is_ok(self):
        """The result's status is ok and it has a throughput (for training: the target reached)."""
        try:
            self.passes(self.run_result())
        except figures.ResultProblem as exc:
            raise SanityError(str(exc)) from None
        return True

    def figure(self, name: str) -> float:
        """One figure of the run's throughput; a missing one (no CI from a single window) is
        left out by ReFrame with a warning that says why."""
        value = figures.throughput(self.run_result())[name]
        if value is None:
            raise figures.ResultProblem(f"no {name}: too few timed windows to tell")
        return value

    @run_after("setup")
    def dnnbench_figures(self):
        try:
            unit = figures.unit(self.workload)
        except figures.ResultProblem as exc:
            raise ReframeError(f"{self.name}: {exc}") from None
        self.perf_variables = {
            "throughput": sn.make_performance_function(lambda: self.figure("value"), unit),
            "throughput_ci95_low": sn.make_performance_function(lambda: self.figure("ci95_low"), unit),
            "throughput_ci95_high": sn.make_performance_function(lambda: self.figure("ci95_high"), unit),
            **self.more_figures(),
        }

    def more_figures(self) -> dict:
        return {}

    @run_before("performance")
    def reference_from_history(self):
        """`reference_job`: the throughput reference of this partition from the history store."""
        if not self.reference_job or self.is_dry_run():     # a dry run has no result to judge
            return
        try:
            value, _ = figures.history_reference(self.run_result(), self.reference_job, last=self.reference_last,
                                                 db=self.reference_db or None)
        except figures.ResultProblem as exc:
            raise PerformanceError(str(exc)) from None
        part = self.current_partition.fullname
        scope = getattr(self.reference, "scope", None)    # the site's other references for this partition stay
        kept = dict(scope(part)) if scope is not None else {}
        self.reference = {part: {**kept, "throughput": (value, self.reference_lower, self.reference_upper,
                                                        figures.unit(self.workload))}}


class DnnbenchRun(DnnbenchCheck):
    """`dnnbench run`: a workload's training throughput (benchmark windows)."""

    #: Timed windows: iterations per window, windows, untimed iterations first (0: dnnbench's).
    number = variable(int, value=0)
    repeat = variable(int, value=0)
    warmup = variable(int, value=-1)

    def extra_options(self) -> list[str]:
        words = []
        for option, value in (("--number", self.number), ("--repeat", self.repeat)):
            if value:
                words += [option, str(value)]
        if self.warmup >= 0:
            words += ["--warmup", str(self.warmup)]
        return words


class DnnbenchSmoke(DnnbenchRun):
    """A tiny CPU job on any system (ReFrame's generic one too): a few steps of resnet18 on the
    host runtime (or in the partition's container platform with `image`), seconds of work. Does
    dnnbench run here and write a result?"""

    descr = "dnnbench: a few CPU steps of resnet18 (seconds)"
    valid_systems = ["*"]
    tags = {"smoke", "dnnbench"}
    workload = "resnet18"
    batch_size = 2
    number = 1
    repeat = 3
    warmup = 1
    gpus = "cpu"
    time_limit = "2m"


class DnnbenchTrain(DnnbenchCheck):
    """`dnnbench train` to a target accuracy: time to target, best evaluation, throughput."""

    command = "train"
    #: The target (top-1 %, HR@10 for ncf) and the most epochs to reach it.
    target_accuracy = variable(float)
    epochs = variable(int, value=0)

    @run_before("setup")     # after init ReFrame drops a skipped check without a word
    def needs_data(self):
        self.skip_if(not self.data, f"{self.name} trains on a real dataset: set it with -S {self.name}.data=DIR")

    def extra_options(self) -> list[str]:
        words = ["--target-accuracy", f"{self.target_accuracy:g}"]
        if self.epochs:
            words += ["--epochs", str(self.epochs)]
        return words

    def passes(self, data: dict) -> None:
        figures.check_trained(data, self.result_file)

    def more_figures(self) -> dict:
        return {"time_to_target": sn.make_performance_function(lambda: figures.time_to_target(self.run_result()),
                                                               "s"),
                "best": sn.make_performance_function(lambda: figures.best(self.run_result()), "%")}
