"""Training to a target accuracy: epochs, evaluation, checkpoints, resume, interruption.

    python -m dnnbench.workloads.train WORKLOAD --data DIR [--epochs N] [--target-accuracy PCT]
        [--eval-every N] [--max-time MIN] [--image-size PX] [--resume] [--results DIR] ...

The pytorch/examples ImageNet recipe for the image classifiers: SGD momentum 0.9, weight decay
1e-4, lr 0.1 x batch/256 divided by 10 every --lr-step (30) epochs; RandomResizedCrop + flip
for train/, Resize + CenterCrop for val/; top-1 and top-5. Time to target counts the time on
the clock from the first epoch's start (training, evaluation and data loading, as MLPerf
counts it) until an evaluation reaches the target; a resumed run adds only its own time.

A run is deterministic given its seed: the order of samples is a permutation drawn from
(seed, epoch), and each sample's augmentation from (seed, epoch, index), so a run resumed from
a checkpoint taken mid-epoch continues the same trajectory. Checkpoints are written atomically
in the run folder at each epoch end, every --checkpoint-every minutes and on SIGINT/SIGTERM/
SIGUSR1 (at the next step boundary, then the run exits 130 with a resumable partial result);
the last two are kept. They are data only, never a pickle (checkpoint.py): a resume reads the
run's own options from its folder, refuses to change those that define the trajectory, checks
each checkpoint against the run and passes over one that does not fit for the one before it;
until a resume has succeeded, the partial result in the folder is left as it was.

Python 3.7+, stdlib + torch/torchvision, like the rest of the container side.
"""
import argparse
import hashlib
import math
import os
import random
import signal
import socket
import sys
import time
from datetime import datetime

from . import checkpoint, ending, fileio, mlperf_log, options, schema, train_tasks, windows
from .errors import UsageError
from .options import Option
from .result import Result

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NAN, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
KEEP = checkpoint.KEEP
STOP_EVERY = 8   # steps between the ranks' agreement on a signal (a tiny all-reduce)

TRAIN_OPTIONS = (
    Option("epochs", int, 90, "epochs at most", low=1, high=10**6),
    Option("target_accuracy", float, None, "stop when the evaluation reaches PCT % (top-1; HR@10 for ncf)",
           metavar="PCT",
           above=0, high=100),
    Option("eval_every", int, 1, "evaluate every N epochs", low=1, high=10**6),
    Option("max_time", float, None, "stop after MIN minutes on the clock", metavar="MIN", above=0, high=1e6),
    Option("image_size", int, None, "train/eval image side in pixels (default: the workload's)", metavar="PX",
           low=8, high=4096),
    Option("lr_step", int, 30, "divide the lr by 10 every N epochs", low=1, high=10**6),
    Option("lr_schedule", str, "step", "step: lr / 10 every --lr-step epochs; poly: MLPerf ResNet's linear warmup "
           "then polynomial decay (power 2) to 0.0001, per step", choices=("step", "poly")),
    Option("eval_data", str, None, "also evaluate on this folder's val/ (ImageNetV2 from `data prepare imagenetv2`), "
           "reported beside the main evaluation", metavar="DIR"),
    Option("warmup_epochs", float, 0.0, "with --lr-schedule poly: epochs of linear warmup", metavar="N",
           low=0, high=10**6),
    Option("checkpoint_every", float, None, "also checkpoint every MIN minutes", metavar="MIN", above=0, high=1e6),
    Option("resume", bool, False, "continue from the run folder's last good checkpoint"),
    # the MLPerf log (mlperf_log.txt, always written) and its division; the submission fields' overrides
    Option("mlperf", str, None, "MLPerf division to log and check the run against (default: open, unchecked)",
           choices=("closed", "open")),
    Option("submission_org", str, None, "MLPerf submission_org (default: dnnbench)", metavar="TEXT"),
    Option("submission_platform", str, None, "MLPerf submission_platform (default: GPUs or CPU)", metavar="TEXT"),
    Option("submission_status", str, None, "MLPerf submission_status (default: research)",
           choices=mlperf_log.STATUSES),
)
# the harness options that mean something for training
SHARED = ("batch_size", "workers", "amp", "channels_last", "seed", "lr", "results", "run_id", "device")


def _log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def parser_for(workload):
    p = argparse.ArgumentParser(prog="python -m dnnbench.workloads.train %s" % workload.name,
                                description="Train %s to a target accuracy." % workload.name)
    defaults = {"batch_size": workload.default_batch_size, "lr": None,
                "results": os.environ.get("DNNBENCH_RESULTS", "results"),
                "run_id": os.environ.get("DNNBENCH_RUN_ID")}
    for o in [options.BY_NAME[n] for n in SHARED] + list(TRAIN_OPTIONS):
        if o.kind is bool:
            p.add_argument(o.flag, action="store_true", help=o.help)
        else:
            p.add_argument(o.flag, type=o.parse if o.kind in (int, float) else o.kind,
                           default=defaults.get(o.name, o.default), choices=o.choices, metavar=o.metavar, help=o.help)
    p.add_argument("--data", required=True, help="the dataset: an ImageNet-layout folder (train/ and val/ "
                                                 "class folders) for the image classifiers, ratings.csv for ncf")
    if train_tasks.for_workload(workload.name) is not None:   # (others are refused after parsing)
        workload.add_args(p)   # the model's own options (inception's --aux-logits, ncf's --factors ...)
    return p


class Stopper(object):
    """SIGINT/SIGTERM/SIGUSR1 counted, acted on at the next step boundary."""

    def __init__(self):
        self.signal = None
        for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGUSR1", None)):
            if sig is not None:
                signal.signal(sig, self._on)

    def _on(self, signum, frame):
        if self.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt     # a second Ctrl-C: stop now, keep the last checkpoint
        self.signal = signum


def given_options(workload, argv):
    """The options this command line names (the rest are defaults, or on --resume the run's own)."""
    p = parser_for(workload)
    for a in p._actions:
        if a.dest != "help":
            a.default = argparse.SUPPRESS
    return set(vars(p.parse_known_args(argv)[0]))


def _options_of(args, parser):
    """The run's options as the checkpoint record keeps them (the parser's own, JSON values)."""
    return dict((a.dest, getattr(args, a.dest)) for a in parser._actions
                if a.dest not in ("help", "resume", "results") and hasattr(args, a.dest))


def resume_options(workload, args, given):
    """--resume: the run's own options from its folder's checkpoint record (what this command
    line gives may change only what checkpoint.MAY_CHANGE lists); the record."""
    try:
        record = checkpoint.read_record(args.results)
    except checkpoint.Damaged as exc:
        raise UsageError("--resume: %s" % exc)
    if record is None:
        try:
            unrecorded = any(n.startswith("checkpoint-") for n in os.listdir(args.results))
        except OSError:
            unrecorded = False
        raise UsageError("--resume: %s holds no checkpoint that loads (no %s, where a run records its checkpoints%s)"
                         % (args.results, checkpoint.RECORD, "; checkpoint files it does not list, such as the "
                            "pickles of dnnbench before it, are never read" if unrecorded else ""))
    if record["workload"] != workload.name:
        raise UsageError("--resume: %s holds a run of %s, not %s" % (args.results, checkpoint.show(
            record["workload"])[:40], workload.name))
    p = parser_for(workload)

    def refuse(msg):
        raise UsageError("--resume: the run's recorded options do not parse (%s)" % msg)
    p.error = refuse
    argv = ["--data", args.data]
    by_dest = dict((a.dest, a) for a in p._actions if a.option_strings)
    recorded = record["options"]
    for dest, value in sorted(recorded.items()):
        a = by_dest.get(dest)
        if a is None or dest in ("data", "results", "resume", "help") or value is None:
            continue
        if a.nargs == 0:
            argv += [a.option_strings[-1]] if value is True else []
        elif isinstance(value, list):
            argv += [a.option_strings[-1]] + [repr(v) if isinstance(v, float) else str(v) for v in value]
        else:
            argv += [a.option_strings[-1], repr(value) if isinstance(value, float) else str(value)]
    theirs = p.parse_args(argv)
    differ = []
    for dest in sorted(recorded):
        if dest not in by_dest or dest in ("data", "results", "resume", "help"):
            continue
        value = getattr(theirs, dest)
        if dest not in given:
            setattr(args, dest, value)
        elif getattr(args, dest) != value and dest not in checkpoint.MAY_CHANGE:
            differ.append((dest, getattr(args, dest), value))
    if differ:
        raise UsageError(checkpoint.refusal(differ))
    return record


def run(workload, argv):
    from .harness import Distributed
    args = parser_for(workload).parse_args(argv)
    given = given_options(workload, argv)
    try:
        dist = Distributed()
    except UsageError as exc:
        _log("error: %s" % exc)
        return EXIT_USAGE
    result = Result(args.run_id, workload.name, workload.unit, dist.world_size, synthetic=False, args=args,
                    training=None)
    # a resume that fails before it has taken up a checkpoint leaves the partial result as it was
    guard = {"keep_partial": bool(args.resume)}
    stopper = Stopper()
    code = EXIT_ERROR
    mlog = None
    try:
        task = train_tasks.for_workload(workload.name)
        if task is None:
            raise UsageError("training mode covers the image classifiers and ncf for now; %s is not one "
                             "(`dnnbench workloads NAME` says what each evaluates)" % workload.name)
        mlog = mlperf_log.Log(args, workload, dist.rank)   # init_start: before the data and model
        code = _train(workload, task, args, dist, result, stopper, given, guard, mlog)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - every failure still leaves a result
        code = result.failed(exc, interrupted="interrupted by a second signal: resume from the last checkpoint",
                             interrupted_log="interrupted: resume with --resume")
    finally:
        if mlog is not None:
            mlog.close(result)
        if not result.close(args.results, dist.rank, write=not guard["keep_partial"]):
            code = code or EXIT_ERROR
        dist.close()
    return code


def _train(workload, task_class, args, dist, result, stopper, given, guard, mlog):
    """Set up (or resume), then epochs until the target, --epochs or --max-time; a signal stops
    it after a step that every rank agrees on, with a checkpoint to resume from."""
    record = resume_options(workload, args, given) if args.resume else None
    run = _Training(workload, task_class, args, dist, result)
    run.mlog = mlog
    if record is not None:
        run.resume(record)
        guard["keep_partial"] = False
        mlog.commit()
    else:
        run.start_record()
    mlog.run_start(run)
    run.begin_segment()
    while run.epoch < args.epochs:
        mlog.epoch_start(run.epoch, run.step_in_epoch)
        code, train_loss = run.epoch_steps(stopper)
        if code is not None:
            return code
        mlog.epoch_stop(run.epoch + 1)
        if run.end_epoch(train_loss):
            break
    run.finish()
    result["status"] = "ok"
    return EXIT_OK


class _Training(object):
    """One training run: the model, optimizer and scaler, the checkpoints, the clock, and the
    training record that result.json and every checkpoint carry."""

    def __init__(self, workload, task_class, args, dist, result):
        import torch
        from . import allocator, compat, system

        malloc = allocator.keep_mapped()   # before the loader's workers fork
        self.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.amp = None if args.amp == "none" else args.amp
        dist.init(self.device)
        result["system"] = system.collect(self.device)
        result["system"]["malloc"] = malloc
        self.task = task = task_class(workload, args, dist, self.device)
        result["options"] = dict(sorted(vars(args).items()), lr=task.base_lr, weight_decay=workload.weight_decay,
                                 device=self.device, **task.facts)
        # the same reproducibility facts a benchmark run keeps (seed, dataset, image, threads)
        result.collect_manifest(self.device, dist.rank)
        torch.manual_seed(args.seed)
        model = workload.build(args).to(self.device)
        if args.channels_last:
            model = model.to(memory_format=torch.channels_last)
        self.model = model
        self.ddp = torch.nn.parallel.DistributedDataParallel(model) if dist.enabled else model
        self.opt = task.optimizer(model)
        self.scaler = compat.grad_scaler(self.device, self.amp)
        self.training = dict({
            "schedule": task.schedule, "metric": task.metric, "target": args.target_accuracy, "reached": False,
            "time_to_target_s": None, "best": None, "epochs": [], "segments": [], "on_clock_s": 0.0,
            "resumed_from": None}, **task.facts)
        result["training"] = self.training
        fileio.make_dirs(args.results)
        self.ckpt = checkpoint.Checkpoints(args.results, _log)
        if dist.rank == 0:
            self.ckpt.clean_temporaries()
        self.workload, self.args, self.dist, self.result = workload, args, dist, result
        self.epoch, self.step_in_epoch = 0, 0
        self.tag = "[%s train]" % workload.name
        # what a checkpoint must match: the data it was trained on, the ranks, the options
        classes = getattr(task, "classes", None)
        self.identity = {"workload": workload.name, "world_size": dist.world_size, "facts": dict(task.facts),
                         "num_classes": len(classes) if classes else None,
                         "classes": hashlib.sha256("\n".join(classes).encode("utf-8")).hexdigest()
                         if classes else None}
        self.options = dict(_options_of(args, parser_for(workload)), lr=task.base_lr, device=self.device)

    def start_record(self):
        """A new run: its record (options, identity), no checkpoints yet."""
        if self.dist.rank == 0:
            self.ckpt.start({"workload": self.workload.name, "options": self.options, "identity": self.identity,
                             "checkpoints": []})

    def resume(self, record):
        """Model, optimizer, scaler, RNGs and the record so far, from the newest recorded checkpoint
        that fits this run; each one passed over is named with the reason."""
        if record["identity"] != self.identity:
            raise UsageError("--resume: this is not the run's data or ranks (%s)"
                             % checkpoint.identity_difference(record["identity"], self.identity))
        fixed = dict((k, v) for k, v in self.options.items() if k not in checkpoint.MAY_CHANGE)
        run = checkpoint.Run(self.workload.name, self.identity, fixed, self.model, self.opt, self.scaler,
                             self.task.metric, self.task.steps())
        names = list(reversed(record["checkpoints"]))
        for k, name in enumerate(names):
            try:
                state = self.ckpt.load(name)
                why = checkpoint.problem(state, run)
                if why:
                    raise checkpoint.Damaged(why)
                self._take_up(state)
                break
            except (checkpoint.Damaged, RuntimeError, KeyError, TypeError, ValueError) as exc:
                _log("warning: checkpoint %s is damaged (%s): %s" % (name, str(exc).strip()[:300], "using the one "
                     "before it" if k + 1 < len(names) else "no checkpoint before it"))
        else:
            raise UsageError("--resume: %s holds no checkpoint that fits this run (%d recorded, each passed over "
                             "above)" % (self.args.results, len(names)) if names else
                             "--resume: %s holds no checkpoint that loads (none recorded)" % self.args.results)
        if self.dist.rank == 0:
            self.ckpt.start(dict(record, options=self.options))
        training = self.training
        training["resumed_from"] = "epoch %d step %d" % (self.epoch, self.step_in_epoch)
        _log("resumed in epoch %d after step %d (%.1f s on the clock so far)" % (
            self.epoch + 1, self.step_in_epoch, training["on_clock_s"]))   # 1-based, as the epoch lines

    def _take_up(self, state):
        """A checked state into the model, optimizer, scaler, RNGs and the record."""
        import torch
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"]["state"])
        if self.scaler is not None:
            self.scaler.load_state_dict(state["scaler"])
        torch.set_rng_state(state["rng"]["torch"])
        random.setstate(state["rng"]["python"])
        self.epoch, self.step_in_epoch = state["epoch"], state["step"]
        for k in ("epochs", "segments", "on_clock_s", "best", "reached", "time_to_target_s", "reached_at_epoch"):
            if k in state["training"]:
                self.training[k] = state["training"][k]
        self.result["windows"] = list(state["windows"])
        self.result["loss"] = list(state["loss"])

    def begin_segment(self):
        """This start's segment of the record, and the clock that goes on from the last one."""
        import torch
        self.segment = {"host": socket.gethostname(), "started": datetime.utcnow().isoformat() + "Z", "ended": None}
        if os.environ.get("SLURM_JOB_ID"):   # which job, and which of its starts (a requeue starts it again)
            self.segment["slurm_job"] = os.environ["SLURM_JOB_ID"]
            restarts = os.environ.get("SLURM_RESTART_COUNT", "0")
            self.segment["slurm_restart"] = int(restarts) if restarts.isdigit() else None
        self.training["segments"].append(self.segment)
        self.clock0 = time.perf_counter() - self.training["on_clock_s"]
        self.last_ckpt = time.perf_counter()
        self.clock = windows.Clock(torch.cuda.synchronize if self.device == "cuda" else None,
                                   windows.device_timer(torch, self.device))
        args, dist, task = self.args, self.dist, self.task
        _log("%s %s, batch %d%s, %s, up to %d epochs%s" % (
            self.tag, self.device, args.batch_size, " x %d ranks" % dist.world_size if dist.enabled else "",
            task.intro, args.epochs, ", target %s %g %%" % (schema.metric_name(task.metric), args.target_accuracy)
            if args.target_accuracy else ""))

    def on_clock(self):
        return time.perf_counter() - self.clock0

    def state_now(self, e, s):
        import torch
        self.training["on_clock_s"] = self.on_clock()
        return {"workload": self.workload.name, "identity": self.identity, "options": self.options,
                "model": self.model.state_dict(),
                "optimizer": {"kind": type(self.opt).__name__, "state": self.opt.state_dict()},
                "scaler": self.scaler.state_dict() if self.scaler is not None else None, "epoch": e, "step": s,
                "training": self.training, "windows": self.result["windows"],
                "loss": self.result["loss"][-10000:],
                "rng": {"torch": torch.get_rng_state(), "python": random.getstate()}}

    def checkpoint(self, e, s, wait=False):
        """Seconds the training waited for it (on the clock: a run pays for its checkpoints);
        wait: until it is on disk (before the run stops)."""
        c0 = time.perf_counter()
        if self.dist.rank == 0:
            path = self.ckpt.save(self.state_now(e, s), wait=wait)
            _log("checkpoint: %s" % os.path.basename(path))
        if self.dist.enabled:
            import torch.distributed as tdist
            tdist.barrier()
        return time.perf_counter() - c0

    def epoch_steps(self, stopper):
        """The steps of one epoch (from where a resume left off) as one window: (exit code, None)
        when a signal stopped it or the loss went NaN, else (None, the epoch's mean loss)."""
        from . import compat, progress
        from .harness import backward_step
        args, task, opt, scaler, epoch = self.args, self.task, self.opt, self.scaler, self.epoch
        for group in opt.param_groups:
            group["lr"] = task.lr_at(epoch)
        steps, it = task.batches(epoch, self.step_in_epoch)
        items, losses = 0, []
        ticker = progress.Ticker("%s epoch %d/%d:" % (self.tag, epoch + 1, args.epochs), steps, _log,
                                 enabled=self.dist.rank == 0, start=self.step_in_epoch)   # hours on ImageNet: said
        self.clock.open()
        for s in range(self.step_in_epoch, steps):
            ticker.tick(s)
            batch = self.clock.fetch(it)
            train_tasks.step_lr(task, opt, epoch, s, steps)
            with compat.autocast(self.device, self.amp):
                loss, n = task.loss(self.ddp, batch)
            opt.zero_grad(set_to_none=True)
            backward_step(loss, opt, scaler)
            losses.append(loss.detach())
            items += n
            if _stop_here(stopper, self.dist, self.device, s):
                del it
                _close_epoch(self.result, losses, self.clock.close(items))
                return self.stop(stopper, s + 1), None
            if args.checkpoint_every and time.perf_counter() - self.last_ckpt >= args.checkpoint_every * 60:
                self.checkpoint(epoch, s + 1)
                self.last_ckpt = time.perf_counter()
        del it
        train_loss = _close_epoch(self.result, losses, self.clock.close(items))
        if train_loss is not None and not math.isfinite(train_loss):
            self.ckpt.wait()
            self.result.update(status="nan", message="the training loss became NaN/Inf in epoch %d" % (epoch + 1))
            return EXIT_NAN, None
        return None, train_loss

    def stop(self, stopper, step):
        """A signal: checkpoint after `step` (on disk before the run ends), resumable."""
        self.segment["ended"] = datetime.utcnow().isoformat() + "Z"   # before the checkpoint keeps it
        self.training["resumable"] = True
        self.checkpoint(self.epoch, step, wait=True)
        self.result.update(status="interrupted", message="stopped by signal %d in epoch %d/%d after step %d: "
                           "resumable with --resume" % (stopper.signal or signal.SIGTERM, self.epoch + 1,
                                                        self.args.epochs, step))   # 1-based, as the epoch lines
        _log("%s %s" % (self.tag, self.result["message"]))
        return EXIT_INTERRUPTED

    def end_epoch(self, train_loss):
        """Evaluate when due, record and checkpoint the epoch; whether the run ends here (the
        target reached or --max-time spent)."""
        args, task, training = self.args, self.task, self.training
        self.step_in_epoch = 0
        self.epoch += 1
        epoch, last = self.epoch, self.result["windows"][-1]
        record = {"epoch": epoch, "train_loss": train_loss, "lr": task.lr_at(epoch - 1),
                  "train_throughput": last["items"] * self.dist.world_size / max(1e-9, last["seconds"]),
                  "eval": None}
        if epoch % args.eval_every == 0 or epoch == args.epochs:
            self.mlog.eval_start(epoch)
            record["eval"] = task.evaluate(self.model, self.amp)
        record["on_clock_s"] = self.on_clock()
        training["epochs"].append(record)
        ev = record["eval"]
        if ev is not None and (training["best"] is None or ev[task.metric] > training["best"]):
            training["best"] = ev[task.metric]
        _log("%s epoch %d/%d  loss %.4f  %.1f %s/s%s  %.0fs on the clock" % (
            self.tag, epoch, args.epochs, train_loss if train_loss is not None else float("nan"),
            record["train_throughput"], self.workload.unit,
            "  " + task.show(ev) if ev else "", record["on_clock_s"]))
        reached = ev is not None and args.target_accuracy is not None and ev[task.metric] >= args.target_accuracy
        if ev is not None:
            self.mlog.eval_result(epoch, ev[task.metric], reached)
        if reached:
            training["reached"], training["time_to_target_s"] = True, record["on_clock_s"]
            training["reached_at_epoch"] = epoch
        record["checkpoint_s"] = self.checkpoint(epoch, 0)
        if reached:
            _log("%s target %s %g %% reached at epoch %d, %.1f s on the clock" % (
                self.tag, schema.metric_name(task.metric), args.target_accuracy, epoch, record["on_clock_s"]))
            return True
        if args.max_time and record["on_clock_s"] >= args.max_time * 60:
            _log("%s --max-time %g min reached" % (self.tag, args.max_time))
            return True
        return False

    def finish(self):
        """The last checkpoint on disk, the clock and the segment closed."""
        self.ckpt.wait()
        self.training["on_clock_s"] = self.on_clock()
        self.segment["ended"] = datetime.utcnow().isoformat() + "Z"
        if self.args.target_accuracy is not None and not self.training["reached"]:
            _log("%s target not reached: best %s %s" % (
                self.tag, schema.metric_name(self.task.metric),
                "-" if self.training["best"] is None else "%.2f %%" % self.training["best"]))


def _stop_here(stopper, dist, device, s):
    """Whether to checkpoint and stop after step `s`. Every rank must stop after the same step
    (DDP's next all-reduce would wait for the others for good), and a signal reaches each at its
    own moment: with several ranks they agree every STOP_EVERY steps (a MAX all-reduce)."""
    if not dist.enabled:
        return stopper.signal is not None
    if (s + 1) % STOP_EVERY:
        return False
    import torch
    import torch.distributed as tdist
    flag = torch.tensor([0.0 if stopper.signal is None else 1.0], device=device)
    tdist.all_reduce(flag, op=tdist.ReduceOp.MAX)
    return flag.item() > 0


def _close_epoch(result, losses, window):
    """The epoch's (or segment's) training as one window of the throughput statistic."""
    import torch
    if not losses:
        return None
    values = torch.stack(losses).float().cpu()
    result["loss"].extend(float(v) for v in values.tolist())
    result["loss"] = result["loss"][-10000:]
    result["windows"].append(window)
    return float(values.mean())


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    from . import WORKLOADS, load
    if not argv or argv[0] not in WORKLOADS:
        _log("error: name a workload first: python -m dnnbench.workloads.train WORKLOAD --data DIR ...")
        return EXIT_USAGE
    return run(load(argv[0]), argv[1:])


if __name__ == "__main__":
    ending.end(main())
