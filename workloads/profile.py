"""python -m dnnbench.workloads.profile TOOL OUT -- COMMAND...

Runs COMMAND (a workload, or torchrun over one) under a profiler, inside the image that carries
the profiler, so the choices that depend on the GPU are made where the GPU is: the compute
capability (nvprof refused on 8.0+; ncu metric names per architecture, checked against
`ncu --query-metrics`) and the report names `nsys stats` knows (CUDA 11.x images have the old
ones). The workload brackets its timed window with cudaProfilerStart/Stop (--profile-window
cuda), so ncu and nsys capture only that window. Outputs go to OUT (the run's profile/ folder).

ncu replays every kernel it profiles, so it profiles at most DNNBENCH_NCU_LAUNCH_COUNT kernels
(default 200) and runs at DNNBENCH_NCU_CLOCK_CONTROL clocks (default `base`, ncu's own default,
which makes cycles comparable across runs; `none` leaves the GPU's clocks alone). Both choices,
and the metric names this ncu lacks, go to OUT/launch.json for the run's profile summary.

Python 3.7+, stdlib (+ torch for the compute capability).
"""
import os
import re
import shutil
import signal
import subprocess
import sys

TOOLS = ("ncu", "nsys", "nvprof", "rocprof")
METRIC_SUFFIX = ".avg.pct_of_peak_sustained_elapsed"
# Pipe instruction metrics per architecture (Nsight Compute's metric names, `ncu --query-metrics`).
# Volta/Turing name the pipes fma/fp16/tensor/xu; Ampere splits tensor by op type (hmma); GA10x
# and later issue FP16x2 on the FMA pipes (fma_type_fp16); Hopper's warpgroup MMA is gmma.
PIPES = [
    ((7, 0), ["sm__inst_executed_pipe_fma", "sm__inst_executed_pipe_fp16", "sm__inst_executed_pipe_tensor",
              "sm__inst_executed_pipe_xu"]),
    ((8, 0), ["sm__inst_executed_pipe_fma", "sm__inst_executed_pipe_fp16", "sm__inst_executed_pipe_tensor_op_hmma",
              "sm__inst_executed_pipe_xu"]),
    ((8, 6), ["sm__inst_executed_pipe_fma", "sm__inst_executed_pipe_fma_type_fp16",
              "sm__inst_executed_pipe_tensor_op_hmma", "sm__inst_executed_pipe_xu"]),
    ((9, 0), ["sm__inst_executed_pipe_fma", "sm__inst_executed_pipe_fma_type_fp16",
              "sm__inst_executed_pipe_tensor_op_hmma", "sm__inst_executed_pipe_tensor_op_gmma",
              "sm__inst_executed_pipe_xu"]),
]
TENSOR_CYCLES = {(7, 0): "sm__pipe_tensor_cycles_active", (8, 0): "sm__pipe_tensor_op_hmma_cycles_active",
                 (9, 0): "sm__pipe_tensor_op_gmma_cycles_active"}
WEIGHTS = ["gpc__cycles_elapsed.max", "gpu__time_duration.sum"]
# Metric base name -> the utilization field the host's summary reports. Tensor pipes are split by
# op type from Ampere on (hmma; Hopper adds gmma); a kernel uses one of them.
PIPE_FIELDS = {
    "sm__inst_executed_pipe_fma": "fma",
    "sm__inst_executed_pipe_fp16": "fp16", "sm__inst_executed_pipe_fma_type_fp16": "fp16",
    "sm__inst_executed_pipe_tensor": "tensor", "sm__inst_executed_pipe_tensor_op_hmma": "tensor",
    "sm__inst_executed_pipe_tensor_op_gmma": "tensor",
    "sm__inst_executed_pipe_xu": "sfu",
    "sm__pipe_tensor_cycles_active": "tensor_active", "sm__pipe_tensor_op_hmma_cycles_active": "tensor_active",
    "sm__pipe_tensor_op_gmma_cycles_active": "tensor_active",
}
NCU_LAUNCH_COUNT = 200          # kernels profiled at most: each is replayed once per metric pass
CLOCK_CONTROLS = ("base", "none")
# nsys gained --capture-range-end in 2021.3; older ones (NGC 21.07 ships 2021.2) stop at the end of
# the cudaProfilerApi range on their own and reject the flag.
NSYS_CAPTURE_RANGE_END = (2021, 3)


class ProfileError(Exception):
    pass


def capability():
    """(major, minor) of the first visible GPU, or None."""
    try:
        import torch
        if torch.cuda.is_available():
            return tuple(torch.cuda.get_device_capability(0))
    except Exception:
        pass
    return None


def ncu_metrics(cc, available=None, dropped=None):
    """The metric list for this architecture; names ncu does not list for this GPU are dropped
    (and appended to `dropped`, so the log and the summary can say which)."""
    pipes = [names for since, names in PIPES if cc is None or cc >= since][-1]
    names = [n + METRIC_SUFFIX for n in pipes]
    cycles = [m for since, m in sorted(TENSOR_CYCLES.items()) if cc is None or cc >= since][-1]
    names.append(cycles + METRIC_SUFFIX)
    if cc is not None and cc >= (9, 0):
        names.append(TENSOR_CYCLES[(8, 0)] + METRIC_SUFFIX)
    names += WEIGHTS
    if available:
        if dropped is not None:
            dropped.extend(n for n in names if n.split(".")[0] not in available)
        names = [n for n in names if n.split(".")[0] in available]
    return names


def ncu_settings(env=None):
    """(launch count, clock control) from DNNBENCH_NCU_LAUNCH_COUNT / DNNBENCH_NCU_CLOCK_CONTROL."""
    env = os.environ if env is None else env
    count = env.get("DNNBENCH_NCU_LAUNCH_COUNT", str(NCU_LAUNCH_COUNT))
    clock = env.get("DNNBENCH_NCU_CLOCK_CONTROL", "base")
    if not count.isdigit() or int(count) < 1:
        raise ProfileError("DNNBENCH_NCU_LAUNCH_COUNT=%r: give a positive number of kernels" % count)
    if clock not in CLOCK_CONTROLS:
        raise ProfileError("DNNBENCH_NCU_CLOCK_CONTROL=%r: choose %s" % (clock, " or ".join(CLOCK_CONTROLS)))
    return int(count), clock


def nsys_version(text):
    """(year, minor) from `nsys --version` ("NVIDIA Nsight Systems version 2021.2.4.12-..."), or None."""
    m = re.search(r"(\d{4})\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _available_metrics():
    """Base metric names `ncu --query-metrics` lists for this GPU (empty when it cannot say)."""
    try:
        res = subprocess.run(["ncu", "--query-metrics"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {line.split()[0] for line in res.stdout.splitlines() if line.strip() and "__" in line.split()[0]}


class Context(object):
    """What the launcher found out in this image about this GPU, for a tool's command line."""

    def __init__(self, cc=None, available=None, launch_count=NCU_LAUNCH_COUNT, clock_control="base",
                 dropped=None, nsys_ver=None, exe=None):
        self.cc, self.available, self.nsys_ver, self.exe = cc, available, nsys_ver, exe
        self.launch_count, self.clock_control = launch_count, clock_control
        self.dropped = [] if dropped is None else dropped


class Tool(object):
    """How one profiler wraps the workload in the container. A new one is a subclass and its
    line in TOOLS; the host's side of it (checks, files, summary, tables) is its module in
    dnnbench.profilers."""
    name = ""

    def exe(self):
        """The program this image runs for it, or None when it has none."""
        return self.name if shutil.which(self.name) else None

    def probe(self, ctx, launch):
        """The choices that depend on the GPU or on the tool's version: into ctx, and into
        launch (launch.json, which the run's profile summary reads)."""

    def command(self, out, cmd, ctx):
        raise NotImplementedError

    def after(self, out, launch):
        """Once the workload has ended: a problem to report, or None."""
        return None


class Ncu(Tool):
    name = "ncu"

    def probe(self, ctx, launch):
        ctx.cc, ctx.available = capability(), _available_metrics()
        ctx.launch_count, ctx.clock_control = ncu_settings()
        ncu_metrics(ctx.cc, ctx.available, ctx.dropped)
        launch.update(launch_count=ctx.launch_count, clock_control=ctx.clock_control, dropped_metrics=ctx.dropped)
        sys.stderr.write("[dnnbench] ncu profiles at most %d kernels (DNNBENCH_NCU_LAUNCH_COUNT) with "
                         "--clock-control %s (DNNBENCH_NCU_CLOCK_CONTROL=base|none)\n" % (ctx.launch_count,
                                                                                         ctx.clock_control))
        if ctx.dropped:
            sys.stderr.write("[dnnbench] this ncu lacks %s: left out\n" % ", ".join(ctx.dropped))

    def command(self, out, cmd, ctx):
        if ctx.cc is not None and ctx.cc < (7, 0):
            raise ProfileError("Nsight Compute needs compute capability 7.0 or later (this GPU is %d.%d): "
                               "use --profile nvprof" % ctx.cc)
        return ["ncu", "--target-processes", "all", "--profile-from-start", "off", "--launch-count",
                str(ctx.launch_count), "--clock-control", ctx.clock_control, "--csv", "--page", "raw",
                "--print-units", "base", "--metrics", ",".join(ncu_metrics(ctx.cc, ctx.available, ctx.dropped)),
                "--log-file", os.path.join(out, "ncu.csv")] + cmd


class Nsys(Tool):
    name = "nsys"

    def probe(self, ctx, launch):
        ctx.nsys_ver = nsys_version(_output(["nsys", "--version"]))
        if ctx.nsys_ver:
            launch["nsys_version"] = "%d.%d" % ctx.nsys_ver

    def command(self, out, cmd, ctx):
        end = ["--capture-range-end", "stop"] if ctx.nsys_ver and ctx.nsys_ver >= NSYS_CAPTURE_RANGE_END else []
        return ["nsys", "profile", "--trace", "cuda,nvtx,cudnn,cublas", "--sample", "none", "--cpuctxsw", "none",
                "--capture-range", "cudaProfilerApi"] + end + ["--force-overwrite", "true",
                                                               "--output", os.path.join(out, "nsys")] + cmd

    def after(self, out, launch):
        problem = nsys_stats(out)
        if problem:
            launch["nsys_problem"] = problem
        return problem


class Nvprof(Tool):
    name = "nvprof"

    def probe(self, ctx, launch):
        ctx.cc = capability()

    def command(self, out, cmd, ctx):
        if ctx.cc is not None and ctx.cc >= (8, 0):
            raise ProfileError("nvprof does not support compute capability 8.0 and later (this GPU is %d.%d): "
                               "use --profile nsys (timeline, kernels) or --profile ncu (counters)" % ctx.cc)
        return ["nvprof", "--profile-from-start", "off", "--profile-child-processes", "--csv",
                "--print-gpu-summary", "--log-file", os.path.join(out, "nvprof-%p.csv"),
                "--export-profile", os.path.join(out, "nvprof-%p.nvvp")] + cmd


class Rocprof(Tool):
    name = "rocprof"

    def exe(self):
        # ROCm releases from 7 ship only rocprofv3
        return next((e for e in ("rocprof", "rocprofv3") if shutil.which(e)), None)

    def command(self, out, cmd, ctx):
        if ctx.exe == "rocprofv3":
            # its layout: OUT/<host>/<pid>_kernel_stats.csv; csv is the default only before ROCm 7.0
            return ["rocprofv3", "--kernel-trace", "--stats", "--output-format", "csv", "-d", out, "--"] + cmd
        # rocprof v1 has no cudaProfilerApi range: it traces the whole run
        return ["rocprof", "--stats", "--hip-trace", "-o", os.path.join(out, "rocprof.csv")] + cmd


TOOLS = dict((t.name, t) for t in (Ncu(), Nsys(), Nvprof(), Rocprof()))


def command(tool, out, cmd, cc=None, available=None, launch_count=NCU_LAUNCH_COUNT, clock_control="base",
            dropped=None, nsys_ver=None, rocprof_exe="rocprof"):
    """The profiler's command line around `cmd`, with the choices given (rather than probed)."""
    if tool not in TOOLS:
        raise ProfileError("unknown profiler %r (known: %s)" % (tool, ", ".join(TOOLS)))
    return TOOLS[tool].command(out, cmd, Context(cc, available, launch_count, clock_control, dropped, nsys_ver,
                                                 rocprof_exe))


def nsys_stats(out):
    """Kernel summary and GPU trace as CSV; the report names changed in nsys 2023.1."""
    rep = next((os.path.join(out, f) for f in ("nsys.nsys-rep", "nsys.qdrep") if os.path.exists(os.path.join(out, f))),
               None)
    if rep is None:
        return "nsys wrote no report"
    said = []
    for reports in ("cuda_gpu_kern_sum,cuda_gpu_trace", "gpukernsum,gputrace"):
        res = subprocess.run(["nsys", "stats", "--report", reports, "--format", "csv", "--output",
                              os.path.join(out, "nsys"), "--force-export=true", rep],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        said.append(res.stdout)
        if res.returncode == 0 and any(f.startswith("nsys_") and f.endswith(".csv") for f in os.listdir(out)):
            return None
    return stats_problem(said)


def stats_problem(outputs):
    """Why `nsys stats` wrote no CSV: an empty capture says "does not contain CUDA kernel data"."""
    text = "\n".join(outputs)
    if "does not contain" in text and "kernel" in text.lower():
        return ("nsys captured no CUDA kernels: the cudaProfilerStart/Stop range was empty or never reached "
                "(check --start-iter/--stop-iter against the run's length)")
    return "nsys stats failed: %s" % text.strip()[-500:]


def run(cmd):
    """Run the profiler; pass Ctrl-C/SIGTERM on to it, so the workload still writes its result."""
    proc = subprocess.Popen(cmd)

    def forward(signum, frame):
        try:
            proc.send_signal(signum)
        except OSError:
            pass
    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    return proc.wait()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: python -m dnnbench.workloads.profile TOOL OUT -- COMMAND...\n")
        return 2
    name, out, cmd = argv[0], argv[1], argv[3:]
    tool = TOOLS.get(name)
    if tool is None:
        sys.stderr.write("error: unknown profiler %r (known: %s)\n" % (name, ", ".join(TOOLS)))
        return 2
    exe = tool.exe()
    if exe is None:
        sys.stderr.write("error: --profile %s: %s is not on this image's PATH (bases list their profilers: "
                         "`dnnbench bases`)\n" % (name, name))
        return 2
    launch = {"tool": name, "exe": exe}
    ctx = Context(exe=exe)
    try:
        os.makedirs(out, exist_ok=True)
        tool.probe(ctx, launch)
        full = tool.command(out, cmd, ctx)
    except ProfileError as exc:
        sys.stderr.write("error: %s\n" % exc)
        return 2
    sys.stderr.write("[dnnbench] profiling with %s: %s\n" % (name, " ".join(full[:len(full) - len(cmd)])))
    _write_launch(out, launch)
    code = run(full)
    problem = tool.after(out, launch)
    if problem:
        _write_launch(out, launch)
        sys.stderr.write("warning: %s\n" % problem)
    return code


def _output(cmd):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _write_launch(out, launch):
    from . import fileio   # here, not at the top: the module itself imports with the stdlib alone
    fileio.write_json(os.path.join(out, "launch.json"), launch)


if __name__ == "__main__":
    sys.exit(main())
