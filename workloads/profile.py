"""python -m dnnbench.workloads.profile TOOL OUT -- COMMAND...

Runs COMMAND (a workload, or torchrun over one) under a profiler, inside the image that carries
the profiler, so the choices that depend on the GPU are made where the GPU is: the compute
capability (nvprof refused on 8.0+; ncu metric names per architecture, checked against
`ncu --query-metrics`) and the report names `nsys stats` knows (CUDA 11.x images have the old
ones). The workload brackets its timed window with cudaProfilerStart/Stop (--profile-window
cuda), so ncu and nsys capture only that window. Outputs go to OUT (the run's profile/ folder).

Python 3.7+, stdlib (+ torch for the compute capability).
"""
import os
import shutil
import signal
import subprocess
import sys

TOOLS = ("ncu", "nsys", "nvprof", "rocprof")
METRIC_SUFFIX = ".avg.pct_of_peak_sustained_elapsed"
# Pipe instruction metrics per architecture (Nsight Compute names; see shared/reference/profiling.md 4.2).
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


def ncu_metrics(cc, available=None):
    """The metric list for this architecture; names ncu does not list for this GPU are dropped."""
    pipes = [names for since, names in PIPES if cc is None or cc >= since][-1]
    names = [n + METRIC_SUFFIX for n in pipes]
    cycles = [m for since, m in sorted(TENSOR_CYCLES.items()) if cc is None or cc >= since][-1]
    names.append(cycles + METRIC_SUFFIX)
    if cc is not None and cc >= (9, 0):
        names.append(TENSOR_CYCLES[(8, 0)] + METRIC_SUFFIX)
    names += WEIGHTS
    if available:
        names = [n for n in names if n.split(".")[0] in available]
    return names


def _available_metrics():
    """Base metric names `ncu --query-metrics` lists for this GPU (empty when it cannot say)."""
    try:
        res = subprocess.run(["ncu", "--query-metrics"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {line.split()[0] for line in res.stdout.splitlines() if line.strip() and "__" in line.split()[0]}


def command(tool, out, cmd, cc=None, available=None):
    """The profiler's command line around `cmd`."""
    if tool == "ncu":
        if cc is not None and cc < (7, 0):
            raise ProfileError("Nsight Compute needs compute capability 7.0 or later (this GPU is %d.%d): "
                               "use --profile nvprof" % cc)
        return ["ncu", "--target-processes", "all", "--profile-from-start", "off", "--csv", "--page", "raw",
                "--print-units", "base", "--metrics", ",".join(ncu_metrics(cc, available)),
                "--log-file", os.path.join(out, "ncu.csv")] + cmd
    if tool == "nsys":
        return ["nsys", "profile", "--trace", "cuda,nvtx,cudnn,cublas", "--sample", "none", "--cpuctxsw", "none",
                "--capture-range", "cudaProfilerApi", "--capture-range-end", "stop", "--force-overwrite", "true",
                "--output", os.path.join(out, "nsys")] + cmd
    if tool == "nvprof":
        if cc is not None and cc >= (8, 0):
            raise ProfileError("nvprof does not support compute capability 8.0 and later (this GPU is %d.%d): "
                               "use --profile nsys (timeline, kernels) or --profile ncu (counters)" % cc)
        return ["nvprof", "--profile-from-start", "off", "--profile-child-processes", "--csv",
                "--print-gpu-summary", "--log-file", os.path.join(out, "nvprof-%p.csv"),
                "--export-profile", os.path.join(out, "nvprof-%p.nvvp")] + cmd
    if tool == "rocprof":   # rocprof v1 has no cudaProfilerApi range: it traces the whole run
        return ["rocprof", "--stats", "--hip-trace", "-o", os.path.join(out, "rocprof.csv")] + cmd
    raise ProfileError("unknown profiler %r (known: %s)" % (tool, ", ".join(TOOLS)))


def nsys_stats(out):
    """Kernel summary and GPU trace as CSV; the report names changed in nsys 2023.1."""
    rep = next((os.path.join(out, f) for f in ("nsys.nsys-rep", "nsys.qdrep") if os.path.exists(os.path.join(out, f))),
               None)
    if rep is None:
        return "nsys wrote no report"
    for reports in ("cuda_gpu_kern_sum,cuda_gpu_trace", "gpukernsum,gputrace"):
        res = subprocess.run(["nsys", "stats", "--report", reports, "--format", "csv", "--output",
                              os.path.join(out, "nsys"), "--force-export=true", rep],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if res.returncode == 0 and any(f.startswith("nsys_") and f.endswith(".csv") for f in os.listdir(out)):
            return None
    return "nsys stats failed: %s" % res.stdout.strip()[-500:]


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
    tool, out, cmd = argv[0], argv[1], argv[3:]
    exe = "rocprof" if tool == "rocprof" else tool
    if tool in TOOLS and shutil.which(exe) is None:
        sys.stderr.write("error: --profile %s: %s is not on this image's PATH (bases list their profilers: "
                         "`dnnbench bases`)\n" % (tool, exe))
        return 2
    try:
        os.makedirs(out, exist_ok=True)
        cc = capability() if tool in ("ncu", "nvprof") else None
        available = _available_metrics() if tool == "ncu" else None
        full = command(tool, out, cmd, cc, available)
    except ProfileError as exc:
        sys.stderr.write("error: %s\n" % exc)
        return 2
    sys.stderr.write("[dnnbench] profiling with %s: %s\n" % (tool, " ".join(full[:len(full) - len(cmd)])))
    code = run(full)
    if tool == "nsys":
        problem = nsys_stats(out)
        if problem:
            sys.stderr.write("warning: %s\n" % problem)
    return code


if __name__ == "__main__":
    sys.exit(main())
