"""The MLPerf Training log of a `dnnbench train` run: `mlperf_log.txt` in the run folder,
written through mlperf-logging's own `mllog` (`:::MLLOG {...}` lines), with the keys the
training rules (ruleset 4.0.0) require: the submission fields, cache_clear, init_start/stop,
the hyperparameters, run_start/stop with a status, epochs, blocks, evaluations and sample counts.

Every start of a run (a first start, a `--resume`, a Slurm requeue) appends its own segment:
init_start ... init_stop, run_start, its epochs, run_stop. A segment cut off by a signal ends
with run_stop status "aborted" (metadata says it is resumable), and the next one starts again
with init_start: the log never claims one continuous run that did not happen. The checker
accepts exactly one run_start and run_stop and no init_start after a run started, so it judges
a resumed run's log not compliant, as MLPerf's rules would (a run is one uninterrupted process).

mllog is imported lazily: an image without mlperf-logging trains as before and says so in one
line, unless the run asked for the log (--mlperf): then it is refused before the data and the
model, with the way to get mlperf-logging where the run is (the Python it uses, or its image).
Only rank 0 writes. Python 3.7+, stdlib only (mlperf-logging where installed).
"""
import io
import logging
import os
import sys
import time

from . import fileio
from .errors import UsageError

LOG_FILE = "mlperf_log.txt"
RULESET = "4.0.0"
# the benchmark each trainable workload is logged as (the image classifiers are ResNet's
# benchmark in the open division; only resnet50 is the closed division's model)
BENCHMARKS = {"ncf": "ncf"}
DEFAULT_BENCHMARK = "resnet"
STATUSES = ("research", "onprem", "cloud", "preview")   # submission_status, as the rules allow


def benchmark_of(workload):
    return BENCHMARKS.get(workload, DEFAULT_BENCHMARK)


def missing(image=None):
    """The way to get mlperf-logging where the run is, in one line: into the image the host
    named (DNNBENCH_IMAGE, set for every container run), else into the Python this run uses."""
    image = image or os.environ.get("DNNBENCH_IMAGE")
    if image:
        return ("--mlperf: image %s lacks mlperf-logging, which writes the MLPerf log: use an image with it (a "
                "Dockerfile FROM it with `RUN %s -m pip install mlperf-logging`, given with --image), or train with "
                "--runtime host after `pip install mlperf-logging` in its venv" % (image, sys.executable))
    return ("--mlperf: mlperf-logging, which writes the MLPerf log, is not installed in the Python this run uses: "
            "%s -m pip install mlperf-logging" % sys.executable)


def _now_ms():
    return int(time.time() * 1000)


class Log(object):
    """One start's segment of mlperf_log.txt; every method is a no-op without mllog or off rank 0."""

    def __init__(self, args, workload, rank):
        self.mllog = None
        self.args, self.workload = args, workload
        self.started = self.stopped = False
        self.block_open = False
        try:
            from mlperf_logging.mllog import mllog   # the package, not a copy of its format
        except ImportError:
            if getattr(args, "mlperf", None):     # asked for: refused before the first step, every rank
                raise UsageError(missing())
            if rank == 0:
                sys.stderr.write("mlperf-logging is not installed here: no %s (%s)\n"
                                 % (LOG_FILE, missing().split(": ", 1)[1]))
            return
        if rank != 0:
            return
        self.path = os.path.join(args.results, LOG_FILE)
        # a resume's segment is held in memory until the resume has taken up its checkpoint
        # (commit): a refused resume leaves the run folder as it was, its log included
        self.pending = bool(args.resume)
        if self.pending:
            self.stream = io.StringIO()
        else:
            self.stream = self._open()
            if self.stream is None:
                return
        logger = logging.getLogger("dnnbench.mlperf")
        logger.propagate = False
        logger.setLevel(logging.INFO)
        for old in list(logger.handlers):   # one log per process: an earlier one's file is closed
            logger.removeHandler(old)
        self.handler = logging.StreamHandler(self.stream)
        logger.addHandler(self.handler)
        self.logger = logger
        # call sites named from the package's folder, not this machine's paths
        self.mllog = mllog.MLLogger(logger=logger, default_stack_offset=2,
                                    root_dir=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self.mllog.event("cache_clear", value=False, metadata={
            "note": "dnnbench does not drop the page cache (root only); the dataset may be cached"})
        self.mllog.start("init_start", metadata={"dnnbench_run_id": args.run_id, "resume": bool(args.resume)})

    def _open(self):
        try:
            fileio.make_dirs(self.args.results)
            return fileio.open_append(self.path)
        except OSError as exc:   # a link or FIFO planted there: refused, the training goes on
            sys.stderr.write("warning: no MLPerf log: %s: %s\n" % (self.path, exc.strerror or exc))
            return None

    def commit(self):
        """The resume took up its checkpoint: its segment so far goes to the file, and on."""
        if self.mllog is None or not self.pending:
            return
        self.pending = False
        stream = self._open()
        if stream is None:
            self._detach()
            return
        stream.write(self.stream.getvalue())
        self.handler.setStream(stream)
        self.stream = stream

    def _detach(self):
        self.logger.removeHandler(self.handler)
        self.stream.close()
        self.mllog = None

    def _event(self, key, value=None, metadata=None):
        if self.mllog is not None:
            self.mllog.event(key, value=value, metadata=metadata)

    def run_start(self, run):
        """The submission fields and hyperparameters, init_stop and run_start: call when the
        model, data and optimizer are ready (after a resume's checkpoint is loaded)."""
        if self.mllog is None:
            return
        a, task, dist = self.args, run.task, run.dist
        division = a.mlperf or "open"
        platform = a.submission_platform or _platform(run.result.get("system") or {}, dist.world_size)
        for key, value in (("submission_org", a.submission_org or "dnnbench"),
                           ("submission_platform", platform),
                           ("submission_division", division),
                           ("submission_status", a.submission_status or "research"),
                           ("submission_benchmark", benchmark_of(self.workload.name)),
                           ("seed", a.seed),
                           ("global_batch_size", a.batch_size * dist.world_size),
                           ("gradient_accumulation_steps", 1),
                           ("train_samples", _count(task, "train")),
                           ("eval_samples", _count(task, "val"))):
            self._event(key, value)
        for key, value in optimizer_keys(run.opt, task, a, dist.world_size):
            self._event(key, value)
        if run.epoch or run.step_in_epoch:
            self._event("dnnbench_resumed_from", "epoch %d step %d" % (run.epoch, run.step_in_epoch),
                        {"note": "a second segment: the checker counts one run_start per run"})
        self.mllog.end("init_stop")
        self.mllog.start("run_start")
        self.started = True

    def epoch_start(self, epoch, step):
        if self.mllog is None:
            return
        every = self.args.eval_every
        if not self.block_open:
            first = epoch + 1
            count = every - epoch % every
            self.mllog.start("block_start", metadata={"first_epoch_num": first, "epoch_count": count})
            self.block = (first, count)
            self.block_open = True
        meta = {"epoch_num": epoch + 1}
        if step:
            meta["dnnbench_resumed_at_step"] = step
        self.mllog.start("epoch_start", metadata=meta)

    def epoch_stop(self, epoch):
        """epoch: the epochs done (1-based, as MLPerf numbers them)."""
        if self.mllog is None:
            return
        self.mllog.end("epoch_stop", metadata={"epoch_num": epoch})   # (a block closes after its evaluation)

    def eval_start(self, epoch):
        if self.mllog is not None:
            self.mllog.start("eval_start", metadata={"epoch_num": epoch})

    def eval_result(self, epoch, value, reached):
        """value: the evaluation's metric in % (logged as a fraction, as MLPerf does); run_stop
        success right here when it reached the target, where dnnbench's own clock stops too."""
        if self.mllog is None:
            return
        self.mllog.event("eval_accuracy", value=value / 100.0, metadata={"epoch_num": epoch})
        self.mllog.end("eval_stop", metadata={"epoch_num": epoch})
        self._close_block()
        if reached:
            self.run_stop("success")

    def _close_block(self):
        if self.block_open:
            first, count = self.block
            self.mllog.end("block_stop", metadata={"first_epoch_num": first, "epoch_count": count})
            self.block_open = False

    def run_stop(self, status, why=None):
        """The segment's end; a no-op when it ended already (or never started)."""
        if self.mllog is None or self.stopped or not self.started:
            return
        if self.block_open:
            self._close_block()
        meta = {"status": status}
        if why:
            meta["dnnbench_reason"] = why
        self.mllog.end("run_stop", metadata=meta)
        self.stopped = True

    def close(self, result):
        """The end of the process: run_stop from the result's status where the segment is still
        open (interrupted: resumable; ended without reaching the target: aborted)."""
        if self.mllog is None:
            return
        if self.pending:    # a resume that never took up a checkpoint: nothing of it is logged
            self._detach()
            return
        status = result.get("status")
        training = result.get("training") or {}
        if training.get("reached"):
            self.run_stop("success")
        elif status == "interrupted":
            self.run_stop("aborted", "interrupted, resumable with --resume: the next segment follows")
        elif status == "ok":
            self.run_stop("aborted", "target not reached" if training.get("target") is not None
                          else "no target: the epochs ran out")
        else:
            self.run_stop("aborted", "%s: %s" % (status, result.get("message") or ""))
        self._detach()


def optimizer_keys(opt, task, args, world_size):
    """The optimizer's hyperparameters under the names the rules give them (SGD's sgd_opt_*,
    as closed_resnet_sgd.yaml names them; the schedule the training actually follows)."""
    group = opt.param_groups[0]
    name = type(opt).__name__.lower()
    keys = [("opt_name", name), ("opt_base_learning_rate", task.base_lr)]
    if name == "sgd":
        keys += [("sgd_opt_base_learning_rate", task.base_lr), ("sgd_opt_momentum", group.get("momentum", 0.0)),
                 ("sgd_opt_weight_decay", group.get("weight_decay", 0.0)),
                 ("model_bn_span", args.batch_size)]
        poly = getattr(task, "poly", None)
        if poly is not None:
            keys += poly.mlperf_keys(args)
        else:   # pytorch/examples' step decay: not the closed division's polynomial one
            keys += [("opt_learning_rate_warmup_epochs", 0),
                     ("opt_learning_rate_decay_boundary_epochs",
                      list(range(args.lr_step, args.epochs, args.lr_step))),
                     ("opt_learning_rate_decay_factor", 0.1)]
    else:
        keys += [("opt_weight_decay", group.get("weight_decay", 0.0))]
    return keys


def _count(task, split):
    """Samples in the training or evaluation set (train_samples, eval_samples)."""
    if split == "train":
        for name in ("train", "train_u"):
            if hasattr(task, name):
                return len(getattr(task, name))
    else:
        for name in ("val", "eval_u"):
            if hasattr(task, name):
                return len(getattr(task, name))
    return 0


def _platform(system, world_size):
    gpus = system.get("gpus") or []
    if gpus and isinstance(gpus[0], dict) and gpus[0].get("name"):
        return "%dx%s" % (world_size, gpus[0]["name"])
    cpu = system.get("cpu")
    if isinstance(cpu, dict):
        cpu = cpu.get("model") or cpu.get("name")
    return "%dx%s" % (world_size, cpu or "CPU")
