"""What limited a run, from what its result already holds: the data-wait share of the timed
window, GPU telemetry (utilization, SM clock, throttle reasons), the GPU-busy share nsys measured
where the run was profiled, and the scaling efficiency of a multi-rank run.

judge(result) -> {"label", "evidence": [...], "hint"}, label one of LABELS. Computed in the
container when the run ends (so every runtime's result.json has it) and again on the host once a
profile is summarized. The rules, first match wins:

  input-bound          the training loop waited for batches >= 10 % of the timed window
  throttled            thermal slowdown in >= 10 % of the samples, or the power cap held the SM
                       clock under 85 % of its maximum most of the time
  straggler            one rank's own step (forward + backward with no collective, timed on each
                       rank before the windows) >= 1.3x the median rank's: every rank waits for it
  host-bound           the host was busy (busy.py: every core taken while the run's own process got
                       under half of one): the figure is the host's, not the workload's or the GPU's
  communication-bound  several ranks at < 85 % scaling efficiency
  host-bound           a GPU run whose GPU was busy < 80 % of the window though batches were ready
                       (nsys busy share, else NVML utilization): the CPU does not launch work fast enough
  compute-bound        none of the above: the device itself is the limit

Python 3.7+, stdlib only.
"""
import re

from . import WORKLOADS, busy as busy_host

LABELS = ("input-bound", "compute-bound", "throttled", "straggler", "communication-bound", "host-bound", "unknown")

INPUT_WAIT = 0.10        # data-wait share of the timed window
THERMAL_SHARE = 0.10     # share of telemetry samples with a thermal/hardware slowdown
POWER_SHARE = 0.50       # ... with the power cap active
CLOCK_DROP = 0.85        # median SM clock / max SM clock under which the power cap costs speed
SCALING = 0.85           # scaling efficiency
LOAD_APART = 3.0         # the reference's and the run's load this many times apart: efficiency not judged
LOAD_FLOOR = 1.0         # (the host side's results/load.APART and FLOOR: this side cannot import it)
STRAGGLER = 1.3          # a rank's own step time / the median rank's
GPU_BUSY = 80.0          # % of the window with a kernel running

# NVML clock-event (throttle) reason bits
POWER_BITS = 0x4 | 0x80                 # SW power cap, HW power brake
THERMAL_BITS = 0x8 | 0x20 | 0x40        # HW slowdown, SW thermal, HW thermal


def _pct(x):
    return "%.0f%%" % (100.0 * x)


def _num(value):
    """A finite number from a result field, else None (results are data: never trust a type)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def throttle_shares(reasons):
    """(power, thermal): the share of samples whose throttle-reason bitmask has each kind set."""
    masks = [int(r) for r in reasons if isinstance(r, int) and not isinstance(r, bool)]
    if not masks:
        return None, None
    return (sum(1 for m in masks if m & POWER_BITS) / float(len(masks)),
            sum(1 for m in masks if m & THERMAL_BITS) / float(len(masks)))


# a user's script takes none of the harness options: its hints name what to change in the script
SCRIPT_HINTS = {
    "input-bound": "a faster input pipeline in the script (more DataLoader num_workers, pin_memory=True), "
                   "or faster storage",
    "throttled": "a cooler GPU (airflow, fans, free slot beside it) or the power limit (`nvidia-smi -q -d POWER`); "
                 "compare figures only at the same temperature and limit",
    "communication-bound": "NCCL settings: NCCL_DEBUG=INFO should show NVLink/P2P or IB (unset "
                           "NCCL_P2P_DISABLE / NCCL_IB_DISABLE), or a larger batch per GPU in the script",
    "host-bound": "torch.compile or a larger batch in the script (fewer, fused kernel launches)",
    "compute-bound": "mixed precision (torch.autocast), channels_last or torch.compile in the script",
}

# `train` takes a few of the harness options: a hint naming another gives way to one of these
TRAINING_FLAGS = ("--batch-size", "--workers", "--amp", "--channels-last", "--gpus", "--each-node")
TRAINING_HINTS = {
    "input-bound": "more --workers (decoding in the training process), or faster storage",
    "throttled": SCRIPT_HINTS["throttled"],
    "host-bound": "a larger --batch-size (more work per kernel launch)",
    "compute-bound": "--amp bf16 (or fp16) and --channels-last, where not given already",
}


def _input_hint(opts, device, loader):
    used = (loader or {}).get("used") if isinstance(loader, dict) else None
    workers = opts.get("workers") if isinstance(opts.get("workers"), int) else None
    if device == "cuda" and used in (None, "cpu"):
        return "--loader gpu (decode on the GPU; --loader dali where the image has DALI)"
    if workers is not None and workers < 1:
        return "--workers 4 (decoding runs in the training process now)"
    if device == "cuda":
        return "more --workers (%s now: they only read files), or faster storage" % workers
    return "more --workers (%s now), on a machine with more cores" % workers


def _compute_hint(opts, device, workload):
    if workload == "loader":   # no model: its step is the input pipeline itself
        return "more --workers or another --loader: this workload trains nothing, it times the input pipeline"
    if device != "cuda":
        return "a GPU (--gpus): this run trained on the CPU"
    if (opts.get("amp") or "none") == "none":
        return "--amp bf16 (or fp16): tensor cores"
    spec = WORKLOADS.get(workload) if isinstance(workload, str) else None
    if not opts.get("channels_last") and spec is not None and spec.data_kind in ("imagenet", "coco"):
        return "--channels-last (NHWC convolutions)"
    if not opts.get("compile"):
        return "--compile (fused kernels, fewer launches)"
    return "none from the harness options: the GPU is the limit (a larger --batch-size may still help)"


def stragglers(ranks):
    """Ranks whose own step took >= STRAGGLER x the median rank's, slowest first: each
    {"rank", "host", "local_step_s", "times_median"}."""
    timed = [r for r in ranks if isinstance(r, dict) and _num(r.get("local_step_s"))]
    if len(timed) < 2:
        return []
    steps = sorted(r["local_step_s"] for r in timed)
    mid = len(steps) // 2
    median = steps[mid] if len(steps) % 2 else (steps[mid - 1] + steps[mid]) / 2.0
    slow = [{"rank": r.get("rank"), "host": r.get("host"), "local_step_s": r["local_step_s"],
             "times_median": r["local_step_s"] / median} for r in timed if r["local_step_s"] >= STRAGGLER * median]
    return sorted(slow, key=lambda s: -s["times_median"])


def _load_apart(scaling):
    """How many times the reference's load and the run's differed, when LOAD_APART or more (each
    at least LOAD_FLOOR), else None (also when either was not recorded)."""
    ref, run = _num(scaling.get("reference_load1")), _num(scaling.get("load1"))
    if ref is None or run is None or ref < 0 or run < 0:
        return None
    factor = max(ref, run, LOAD_FLOOR) / max(min(ref, run), LOAD_FLOOR)
    return factor if factor >= LOAD_APART - 1e-9 else None


def judge(result):
    """The verdict on one result dict (never raises on odd fields: they count as missing)."""
    if not isinstance(result, dict):
        return {"label": "unknown", "evidence": ["not a result"], "hint": None}
    status = result.get("status")
    windows = result.get("windows") if isinstance(result.get("windows"), list) else []
    if status != "ok" or not windows:
        return {"label": "unknown", "evidence": ["the run ended %s with %d timed windows" % (status, len(windows))],
                "hint": None}
    opts = result.get("options") if isinstance(result.get("options"), dict) else {}
    device = opts.get("device")
    tel = result.get("telemetry") if isinstance(result.get("telemetry"), dict) else {}
    prof = result.get("profile") if isinstance(result.get("profile"), dict) else {}
    nsys = prof.get("nsys") if isinstance(prof.get("nsys"), dict) else {}
    scaling = result.get("scaling") if isinstance(result.get("scaling"), dict) else {}
    workload = result.get("workload")
    evidence = []

    wait = _num(result.get("data_wait_fraction"))
    if wait is not None:
        evidence.append("data wait %s of the timed window%s" % (
            _pct(wait), "" if result.get("synthetic") is not True else " (synthetic data)"))
    util = _num(tel.get("median_utilization_pct"))
    busy = _num(nsys.get("busy_pct"))
    clock, max_clock = _num(tel.get("median_sm_clock_mhz")), _num(tel.get("max_sm_clock_mhz"))
    power, thermal = _num(tel.get("throttle_power_share")), _num(tel.get("throttle_thermal_share"))
    efficiency = _num(scaling.get("efficiency"))
    world = result.get("world_size") if isinstance(result.get("world_size"), int) else 1

    if busy is not None:
        evidence.append("GPU busy %.0f%% (nsys)" % busy)
    if util is not None:
        evidence.append("GPU utilization %.0f%% (NVML median)" % util)
    if clock is not None:
        evidence.append("SM clock %.0f MHz%s" % (clock, " of %.0f max" % max_clock if max_clock else ""))
    if thermal:
        evidence.append("thermal slowdown in %s of samples" % _pct(thermal))
    if power:
        evidence.append("power cap active in %s of samples" % _pct(power))
    if efficiency is not None and world > 1:
        evidence.append("scaling efficiency %.2f over %d ranks" % (efficiency, world))
    if device == "cuda" and not tel:
        evidence.append("no GPU telemetry")

    def out(label, hint):
        if isinstance(result.get("script"), dict):
            hint = SCRIPT_HINTS.get(label, hint)
        elif isinstance(result.get("training"), dict) and hint and \
                any(f not in TRAINING_FLAGS for f in re.findall(r"--[a-z][a-z-]*", hint)):
            hint = TRAINING_HINTS.get(label)
        return {"label": label, "evidence": evidence, "hint": hint}

    if wait is not None and wait >= INPUT_WAIT:
        return out("input-bound", _input_hint(opts, device, result.get("loader")))
    if thermal is not None and thermal >= THERMAL_SHARE:
        return out("throttled", "a cooler GPU (airflow, fans, free slot beside it) and --cool-down 120 before "
                                "the run; compare figures only at the same temperature")
    if power is not None and power >= POWER_SHARE and clock and max_clock and clock < CLOCK_DROP * max_clock:
        return out("throttled", "the power limit caps the clock: check `nvidia-smi -q -d POWER` (raise it with "
                                "`nvidia-smi -pl` where allowed) and compare only at the same limit")
    slow = stragglers(result.get("ranks") if isinstance(result.get("ranks"), list) else [])
    if slow:
        s = slow[0]
        evidence.append("rank %s on %s: its own step %.2fx the median rank's (%.3g s)" % (
            s["rank"], s["host"], s["times_median"], s["local_step_s"]))
        return out("straggler", "every rank waits for the slowest at each all-reduce: check %s (clocks, "
                                "throttling, other jobs: `dnnbench slurm --each-node` compares the nodes)"
                   % s["host"])
    host = busy_host.facts(result)
    if busy_host.judge(host["load1"], host["cpu_share"], host["cores"]):
        # not the workload's limit: no hint about the workload's options (nor a GPU to buy)
        evidence.insert(0, "host busy: load %.1f on %d cores, this process %s of one core" % (
            host["load1"], host["cores"], _pct(host["cpu_share"])))
        return {"label": "host-bound", "evidence": evidence,
                "hint": "run again on a quiet machine: other processes took the CPU, the figure is the host's"}
    apart = _load_apart(scaling)
    if world > 1 and efficiency is not None and efficiency < SCALING and apart is not None:
        # the reference ran at another moment: a load that differed would be the efficiency
        evidence.append("efficiency not judged: the reference ran at load %.1f, this run at %.1f (%.1fx apart; "
                        "run both on a quiet machine)" % (scaling["reference_load1"], scaling["load1"], apart))
    elif world > 1 and efficiency is not None and efficiency < SCALING:
        return out("communication-bound", "NCCL settings: NCCL_DEBUG=INFO should show NVLink/P2P or IB "
                                          "(unset NCCL_P2P_DISABLE / NCCL_IB_DISABLE), or a larger --batch-size "
                                          "per GPU to amortize the all-reduce")
    gpu_busy = busy if busy is not None else util
    if device == "cuda" and gpu_busy is not None and gpu_busy < GPU_BUSY:
        hint = "--compile (fewer, fused kernel launches)" if not opts.get("compile") else \
            "a larger --batch-size (more work per kernel launch)"
        return out("host-bound", hint)
    return out("compute-bound", _compute_hint(opts, device, workload))
