"""The training harness every workload runs on.

Measures the way the anchors do, or better: warmup excluded; `repeat` timed windows of `number`
iterations; the device synchronized only at window edges; the loss checked for NaN/Inf on the
device and read back once per window; a result written atomically whatever happens.
"""
import argparse
import math
import os
import random
import signal
import socket
import sys
import time
from types import SimpleNamespace

from . import allocator, fileio, netif, options, result as result_mod, schema, stats, windows as windows_mod
from .errors import UsageError
from .workload import Workload as _Workload


# the names this module has always had: a workload written against harness.Workload, a caller
# comparing harness.EXIT_* codes keep working
Workload = _Workload
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NAN, EXIT_OOM, EXIT_INTERRUPTED = (
    result_mod.EXIT_OK, result_mod.EXIT_ERROR, result_mod.EXIT_USAGE, result_mod.EXIT_NAN, result_mod.EXIT_OOM,
    result_mod.EXIT_INTERRUPTED)


def parser_for(workload):
    p = argparse.ArgumentParser(prog="python -m dnnbench.workloads %s" % workload.name,
                                description=workload.description)
    options.add_to(p, workload)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--data", default=None, help="dataset folder (layout: %s)" % (workload.data_kind or "none"))
    src.add_argument("--synthetic", action="store_true", help="batches generated on the device (default without --data)")
    workload.add_args(p)
    return p


def validate(args):
    """Check (and resolve --start-iter/--stop-iter into) the iteration counts; UsageError if bad."""
    for name in ("batch_size", "number", "repeat"):
        if getattr(args, name) < 1:
            raise UsageError("--%s must be at least 1" % name.replace("_", "-"))
    if args.warmup < 0:
        raise UsageError("--warmup must be 0 or more")
    if (args.start_iter is None) != (args.stop_iter is None):
        raise UsageError("--start-iter and --stop-iter go together")
    if args.start_iter is not None:
        if not 0 <= args.start_iter < args.stop_iter:
            raise UsageError("need 0 <= --start-iter < --stop-iter")
        timed = args.stop_iter - args.start_iter
        args.warmup = args.start_iter
        args.number = min(args.number, timed)
        args.repeat = int(math.ceil(timed / float(args.number)))
        args.timed_iterations = timed
    else:
        args.timed_iterations = args.number * args.repeat
    _validate_until_ci(args)


def _validate_until_ci(args):
    """--until-ci PCT: windows of --number iterations, at least --repeat, at most --max-windows."""
    until, cap = getattr(args, "until_ci", None), getattr(args, "max_windows", None)
    if until is None:
        return
    if not until > 0:
        raise UsageError("--until-ci must be a positive percentage")
    if args.start_iter is not None:
        raise UsageError("--until-ci and --start-iter/--stop-iter exclude each other (that window is fixed)")
    if cap is not None and cap < max(2, args.repeat):
        raise UsageError("--max-windows must be at least --repeat and at least 2 (a CI needs two windows)")


def _on_sigterm(signum, frame):
    raise result_mod.Terminated()


def _env_int(name, default, low, high=2**20):
    """A whole number torchrun put in the environment, checked: a stale or junk one (a shell's
    WORLD_SIZE=abc) is a usage error naming the variable, not `invalid literal for int()`."""
    text = os.environ.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise UsageError("%s=%r in the environment is not a whole number from %d to %d (torchrun sets it; "
                         "unset it to run one process)" % (name, text, low, high))
    return value


class Distributed(object):
    """torchrun's environment, if any: rank, world size, local rank."""

    def __init__(self):
        self.world_size = _env_int("WORLD_SIZE", 1, 1)
        self.rank = _env_int("RANK", 0, 0, self.world_size - 1)
        self.local_rank = _env_int("LOCAL_RANK", 0, 0)
        self.enabled = self.world_size > 1

    def init(self, device):
        if self.enabled:
            import torch.distributed as dist
            if device != "cuda":
                netif.pin_gloo_interface()
            dist.init_process_group(backend="nccl" if device == "cuda" else "gloo")

    def gather(self, obj):
        if not self.enabled:
            return [obj]
        import torch.distributed as dist
        out = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def close(self):
        if self.enabled:
            import torch.distributed as dist
            if dist.is_initialized():
                dist.destroy_process_group()


def _data_loader(dataset, collate, args, device, dist, pin=True):
    """The DataLoader every backend that reads through workers shares, so they sample alike:
    a DistributedSampler per rank under torchrun, else a shuffle from the seeded global RNG."""
    import torch

    sampler = None
    if dist.enabled:
        sampler = torch.utils.data.distributed.DistributedSampler(dataset, num_replicas=dist.world_size,
                                                                  rank=dist.rank, shuffle=True, seed=args.seed)
    kwargs = dict(batch_size=args.batch_size, shuffle=sampler is None, sampler=sampler,
                  num_workers=args.workers, pin_memory=pin and device == "cuda", drop_last=True)
    if collate is not None:
        kwargs["collate_fn"] = collate
    if args.workers > 0:
        # workers persist across epochs; PyTorch's default prefetch (2 batches per worker), as
        # the scripts dnnbench stands for: a deeper queue decodes ahead of need, competing with
        # the step for scarce cores, and its last batches are decoded for nothing (measured:
        # prefetch 4 ran 2.3 % slower than pytorch/examples' main.py on a 2-core CPU)
        kwargs["persistent_workers"] = True
    if len(dataset) < args.batch_size * max(1, dist.world_size):
        raise UsageError("the dataset at %s has %d samples, fewer than one batch of %d"
                         % (args.data, len(dataset), args.batch_size))
    loader = torch.utils.data.DataLoader(dataset, **kwargs)

    def epochs():
        epoch = 0
        while True:
            if sampler is not None:
                sampler.set_epoch(epoch)
            for batch in loader:
                yield batch
            epoch += 1
    return epochs()


def _batches(workload, args, device, dist):
    """An endless iterator of device batches, whether it is synthetic, and which --loader ran
    (None for synthetic data)."""
    from . import loaders

    if args.data is None:
        batch = workload.to_device(workload.synthetic_batch(args, device), device, args.channels_last)

        def synthetic():
            while True:
                yield batch
        return synthetic(), True, None
    name, why = loaders.choose(args.loader, getattr(workload, "loaders", ("cpu",)), device)
    record = {"requested": args.loader, "used": name, "why": why}
    if args.loader not in ("auto", name):
        _log("warning: --loader %s is not available: using %s (%s)" % (args.loader, name, why))
    train = getattr(args, "split", "train") == "train"
    root = loaders.split_root(args.data, train)
    # the image layout's split folder; other layouts (ratings.csv, train.txt, COCO) were checked
    # by the workload's own check_data
    if workload.data_kind == "imagenet" and not os.path.isdir(root):
        raise UsageError("%s has no %s/ folder" % (args.data, os.path.basename(root)))
    seed = args.seed * 1000 + dist.rank
    if name == "gpu":
        import torch
        here = "cuda:%d" % torch.cuda.current_device() if device == "cuda" else device   # this rank's GPU
        decode = loaders.DeviceImages(workload.image_size, here, train=train, dtype=loaders.amp_dtype(args.amp),
                                      channels_last=args.channels_last, seed=seed)
        source = _data_loader(loaders.encoded_dataset(root), loaders.collate_encoded, args, device, dist, pin=False)
        return loaders.Prefetch(source, decode, here), False, record
    if name == "dali":
        samples = loaders.encoded_dataset(root).samples
        if len(samples) < args.batch_size * max(1, dist.world_size):
            raise UsageError("the dataset at %s has %d samples, fewer than one batch of %d"
                             % (args.data, len(samples), args.batch_size))
        return loaders.dali_batches(samples, workload.image_size, args.batch_size, args.workers,
                                    dist.local_rank if device == "cuda" else None,
                                    dist.rank, dist.world_size, args.seed, train=train,
                                    dtype=loaders.amp_dtype(args.amp), channels_last=args.channels_last), False, record
    source = _data_loader(workload.dataset(args), workload.collate(), args, device, dist)
    return (workload.to_device(b, device, args.channels_last) for b in source), False, record


def _log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def _loader_label(used, device):
    """The loader as the screen names it: `gpu` decoding on a CPU says so."""
    return "gpu, decoding on the CPU: no GPU in this run" if used == "gpu" and not str(device).startswith("cuda") else used


def _fmt_eta(seconds):
    seconds = int(max(0, seconds))
    return "%dm%02ds" % (seconds // 60, seconds % 60) if seconds >= 60 else "%ds" % seconds


def run(workload, argv):
    """Run one workload; returns the process exit code. Always leaves a result file."""
    args = parser_for(workload).parse_args(argv)
    try:
        dist = Distributed()
    except UsageError as exc:
        _log("error: %s" % exc)
        return EXIT_USAGE
    run_id = args.run_id
    if args.per_host:   # one run per node into one shared folder: each its own sub-folder
        host = socket.gethostname().split(".")[0]
        parent = args.results
        args.results, run_id = os.path.join(parent, host), "%s-%s" % (args.run_id or result_mod.new_run_id(), host)
        fileio.make_dirs(args.results, root=parent)
    result = result_mod.Result(run_id, workload.name, workload.unit, dist.world_size,
                               synthetic=args.data is None, args=args)
    code = EXIT_ERROR
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        validate(args)
        if args.lr is None:
            args.lr = workload.default_lr(args.batch_size)
        args.weight_decay = workload.weight_decay
        result["options"] = {k: v for k, v in sorted(vars(args).items())}
        if args.data is not None:
            workload.check_data(args.data)  # before any model is built
        code = _train(workload, args, dist, result)
    except (Exception, KeyboardInterrupt, result_mod.Terminated) as exc:  # noqa: BLE001 - every failure leaves a result
        code = result.failed(exc)
    finally:
        if not result.close(args.results, dist.rank):
            code = code or EXIT_ERROR
        dist.close()
    return code


def _train(workload, args, dist, result):
    """One run: set up, warm up, time the windows, conclude; returns the exit code."""
    run = _setup(workload, args, dist, result)
    _warm_up(run, workload, args, dist)
    code = _time_windows(run, workload, args, dist, result)
    if code is not None:
        return code
    _conclude(run, workload, args, dist, result)
    return EXIT_OK


def _setup(workload, args, dist, result):
    """Device, model, optimizer, batches and the step, as the options ask; the facts in the result."""
    import torch

    from . import compat, system, telemetry as telemetry_mod

    malloc = allocator.keep_mapped(not args.malloc_defaults)   # before the loader's workers fork
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda but PyTorch sees no CUDA device (run with --gpus, or --device cpu)")
    amp = None if args.amp == "none" else args.amp
    if args.compile and not compat.has_compile():
        raise UsageError("--compile needs PyTorch 2.0+; this is %s" % torch.__version__)
    if args.cool_down and device == "cuda":
        result["cool_down"] = telemetry_mod.cool_down(args.cool_down, _log)
    random.seed(args.seed)
    torch.manual_seed(args.seed + dist.rank)
    dist.init(device)
    if device == "cuda":
        torch.cuda.set_device(dist.local_rank)
        torch.backends.cudnn.benchmark = not args.no_cudnn_benchmark
    if dist.enabled:   # where each rank runs, known from the start: a lost node is named by it
        result["placement"] = dist.gather({"rank": dist.rank, "host": socket.gethostname()})
    result["system"] = system.collect(device)
    result["system"]["malloc"] = malloc
    result.collect_manifest(device, dist.rank)
    result["options"]["device"] = device

    model = workload.build(args).to(device)
    # what the workload decided while building (inception_v3 at batch 1: no aux head) is recorded
    result["options"].update((k, v) for k, v in vars(args).items() if k not in result["options"])
    if args.channels_last and compat.channels_last() is not None:
        model = model.to(memory_format=torch.channels_last)
    if dist.enabled:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[dist.local_rank] if device == "cuda" else None)
    step_model = torch.compile(model) if args.compile else model
    opt_cls = torch.optim.Adam if workload.optimizer == "adam" else torch.optim.SGD
    opt_kwargs = compat.optimizer_kwargs(opt_cls, device, args.fused)
    if opt_cls is torch.optim.SGD:
        opt_kwargs["momentum"] = 0.9
    optimizer = opt_cls(model.parameters(), lr=args.lr, weight_decay=args.weight_decay, **opt_kwargs)
    scaler = compat.grad_scaler(device, amp)
    batches, synthetic, result["loader"] = _batches(workload, args, device, dist)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    step = train_step(workload, step_model, optimizer, scaler, device, amp)

    tag = "[%s%s]" % (workload.name, " rank %d" % dist.rank if dist.enabled else "")
    if dist.rank == 0:
        _log("%s %s, batch %d%s, %s%s, %d warmup + %d timed iterations" % (
            tag, device, args.batch_size, " x %d ranks" % dist.world_size if dist.enabled else "",
            "synthetic data" if synthetic else "data %s (loader %s)" % (args.data, _loader_label(result["loader"]["used"], device)),
            ", amp " + amp if amp else "",
            args.warmup, args.timed_iterations))
    return SimpleNamespace(device=device, amp=amp, model=model, step=step, batches=batches, sync=sync, tag=tag,
                           telemetry=None, local_step=None)


def _warm_up(run, workload, args, dist):
    """The untimed steps; under torchrun, then a step alone, timed per rank (the straggler check)."""
    step, batches, sync, tag = run.step, run.batches, run.sync, run.tag
    t_start = time.perf_counter()
    from . import progress
    ticker = progress.Ticker("%s warmup:" % tag, args.warmup, _log, every=args.progress, enabled=dist.rank == 0)
    for k in range(args.warmup):
        ticker.tick(k)        # time a step was queued: on a GPU the rate runs ahead of the device
        step(next(batches))
    sync()
    if dist.rank == 0:
        _log("%s warmup done in %.1fs" % (tag, time.perf_counter() - t_start))
    if dist.enabled:
        run.local_step = _local_step(workload, run.model, batches, run.device, run.amp, sync)


def _time_windows(run, workload, args, dist, result):
    """The timed windows, with progress and the stopping rules; EXIT_NAN when a loss is not
    finite (None otherwise). The windows go into the result as they end."""
    import torch

    from . import telemetry as telemetry_mod
    step, batches, sync, tag, device = run.step, run.batches, run.sync, run.tag, run.device
    telemetry = run.telemetry = telemetry_mod.start(device, args.results) if dist.rank == 0 else None
    profiler = _profiler(args, device, dist.rank)
    losses, windows = [], []
    result["windows"] = windows   # shared: an interrupted run keeps the windows it finished
    until_ci = getattr(args, "until_ci", None)
    limit = args.max_windows if until_ci else args.repeat
    planned = remaining = args.number * limit if until_ci else args.timed_iterations
    if until_ci and dist.rank == 0:
        _log("%s until the 95%% CI of the throughput is within +-%g%%: %d to %d windows of %d iterations"
             % (tag, until_ci, args.repeat, limit, args.number))
    last_print = time.perf_counter()
    window_start_wall = time.time()
    clock = windows_mod.Clock(sync, windows_mod.device_timer(torch, device))
    try:
        if profiler is not None:
            profiler.__enter__()
        for w in range(limit):
            n = min(args.number, remaining)
            remaining -= n
            step_losses = []
            clock.open()
            for _ in range(n):
                batch = clock.fetch(batches)
                step_losses.append(step(batch))
                items = workload.items(batch)
            windows.append(clock.close(items * n))
            seconds = windows[-1]["seconds"]
            # the NaN check and the loss trace once per window, after the clock stopped: no
            # per-step tensor op (each is a kernel launch on a GPU, microseconds on a CPU)
            window_losses = torch.stack(step_losses).float()
            bad = not bool(torch.isfinite(window_losses).all())
            losses.extend(float(v) for v in window_losses.cpu().tolist())
            if bad:  # one host read per window, never per step
                result["windows"], result["loss"] = windows, losses[-args.loss_trace:]
                result["status"] = "nan"
                result["message"] = "loss became NaN/Inf in timed window %d" % (w + 1)
                _log("%s %s" % (tag, result["message"]))
                return EXIT_NAN
            stop = until_ci and w + 1 >= args.repeat and _agreed(dist, device, stats.ci_met(windows, until_ci))
            now = time.perf_counter()
            if dist.rank == 0 and (now - last_print >= args.progress or w + 1 == limit or stop):
                done = planned - remaining
                rate = items * n / seconds * dist.world_size
                eta = sum(x["seconds"] for x in windows) / done * remaining
                ci = stats.headline(windows)["ci95_pct"] if until_ci else None
                _log("%s window %d/%s%d  %.1f %s/s  loss %.4f  %sETA %s%s" % (
                    tag, w + 1, "<=" if until_ci else "", limit, rate, workload.unit, losses[-1],
                    "" if ci is None else "CI +-%.1f%%  " % ci, "<= " if until_ci else "", _fmt_eta(eta)))
                last_print = now
            if stop:
                break
    finally:
        if hasattr(batches, "close"):
            batches.close()         # the gpu loader's prefetch thread
        if profiler is not None:
            profiler.__exit__(None, None, None)
        if telemetry is not None:
            result["telemetry"] = telemetry.stop(window_start_wall, time.time())
    result["windows"], result["loss"] = windows, losses[-args.loss_trace:]
    return None


def _conclude(run, workload, args, dist, result):
    """Throughput, ranks, data wait, energy per item, scaling and the CI rule's outcome."""
    windows, telemetry, until_ci = result["windows"], run.telemetry, getattr(args, "until_ci", None)
    ranks = dist.gather({"rank": dist.rank, "host": socket.gethostname(), "windows": windows,
                         "throughput": schema.throughput(windows)["per_gpu"], "local_step_s": run.local_step})
    result["ranks"] = ranks
    result["throughput"] = schema.throughput(windows, dist.world_size)
    result["data_wait_fraction"] = windows_mod.data_wait_fraction(windows)
    if telemetry is not None and result["telemetry"] and result["telemetry"].get("energy_j") is not None:
        items = sum(w["items"] for w in windows) * dist.world_size
        result["telemetry"]["energy_per_item_j"] = result["telemetry"]["energy_j"] / items
    result["status"] = "ok"
    if dist.rank == 0 and args.scaling_reference:
        result["scaling"] = _scaling(result, args.scaling_reference)
    if until_ci:
        met = stats.ci_met(windows, until_ci)
        result["until_ci"] = {"pct": until_ci, "max_windows": args.max_windows, "windows": len(windows), "met": met}
        if not met and dist.rank == 0:
            _log("%s warning: the 95%% CI is still wider than +-%g%% after %d windows (--max-windows)"
                 % (run.tag, until_ci, args.max_windows))
    if dist.rank == 0:
        _log("%s %s" % (run.tag, describe(result["throughput"]["total"], workload.unit)))


def describe(tp, unit):
    """The headline as one line, rounded as the host prints it."""
    if tp.get("value") is None:
        return "no timed window"
    if tp.get("ci95_low") is not None:
        ci = ", 95%% CI %s-%s (+-%.1f%%)" % (stats.fmt(tp["ci95_low"]), stats.fmt(tp["ci95_high"]), tp["ci95_pct"])
    else:
        ci = "; " + stats.TOO_FEW if (tp.get("n") or 0) < stats.MIN_WINDOWS else ""
    return "%s %s/s (sum of items / sum of seconds over %d windows%s; window median %s)" % (
        stats.fmt(tp["value"]), unit, tp["n"], ci, stats.fmt(tp["median"]))


def _agreed(dist, device, done):
    """Every rank stops at the same window: the ranks' CIs differ, so stop only when all are met."""
    if not dist.enabled:
        return done
    import torch
    import torch.distributed as tdist
    flag = torch.tensor([0 if done else 1], device=device)
    tdist.all_reduce(flag, op=tdist.ReduceOp.MAX)
    return int(flag.item()) == 0


def _scaling(result, reference_path):
    """Efficiency against a one-process reference run; a missing reference is noted, not fatal."""
    try:
        reference = schema.read(reference_path)
    except (OSError, ValueError) as exc:
        _log("warning: no scaling efficiency: %s" % exc)
        return {"error": "reference unreadable: %s" % exc}
    if reference.get("status") != "ok":
        return {"error": "reference run ended %s" % reference.get("status")}
    return schema.scaling(result, reference)


PROBE_STEPS = 3


def _local_step(workload, model, batches, device, amp, sync):
    """This rank's own forward + backward, with no collective in it (the DDP module's inner
    model, outside DDP, so its hooks stay idle), median of PROBE_STEPS: in synchronous training
    every rank's window lasts as long as the slowest rank's, so only this shows a straggler."""
    from . import compat
    local = getattr(model, "module", model)
    times = []
    for _ in range(PROBE_STEPS):
        batch = next(batches)
        sync()
        t0 = time.perf_counter()
        with compat.autocast(device, amp):
            loss = workload.loss(local, batch)
        loss.backward()
        sync()
        times.append(time.perf_counter() - t0)
        local.zero_grad(set_to_none=True)
    return sorted(times)[len(times) // 2]


def train_step(workload, model, optimizer, scaler, device, amp):
    """One optimizer step on a batch; returns the loss, detached, still on the device."""
    from . import compat

    def step(batch):
        with compat.autocast(device, amp):
            loss = workload.loss(model, batch)
        backward_step(loss, optimizer, scaler)
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()
    return step


def backward_step(loss, optimizer, scaler):
    """The backward pass and the optimizer's step, through fp16's loss scaler where there is one
    (the benchmark's step and the training loop's)."""
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()


def _profiler(args, device, rank=0):
    """A context manager bracketing the timed windows for the chosen profiler, or None."""
    if args.profile_window == "cuda" and device == "cuda":
        import torch.cuda.profiler as cuda_profiler

        class CudaRange(object):
            def __enter__(self):
                cuda_profiler.start()

            def __exit__(self, *exc):
                cuda_profiler.stop()
        return CudaRange()
    if args.profile_window == "torch":
        from torch.profiler import ProfilerActivity, profile

        from . import known_lines

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
        suffix = "-rank%d" % rank if rank else ""     # every rank traces; rank 0's is the one summarized
        trace = os.path.join(args.results, "torch-trace%s.json" % suffix)

        class TorchRange(object):
            def __enter__(self):
                # libkineto's known-harmless lines (fd 2, from C++) kept off the screen and log
                self.quiet = known_lines.Dropped(cpu=device != "cuda").__enter__()
                self.prof = profile(activities=acts, record_shapes=False)
                self.prof.__enter__()

            def __exit__(self, *exc):
                try:
                    self.prof.__exit__(None, None, None)
                    os.makedirs(args.results, exist_ok=True)
                    self.prof.export_chrome_trace(trace)
                    key = "self_cuda_time_total" if device == "cuda" else "self_cpu_time_total"
                    fileio.write_atomic_text(os.path.join(args.results, "torch-ops%s.txt" % suffix),
                                             self.prof.key_averages().table(sort_by=key, row_limit=30))
                finally:
                    self.quiet.__exit__(None, None, None)
        return TorchRange()
    return None
