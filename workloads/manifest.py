"""The reproducibility manifest of a result: what a second run must match to be the same run.

Software (dnnbench, Python, PyTorch, CUDA, cuDNN, NCCL, driver), the GPUs' state at the start
(clocks, power limit, ECC, MIG, persistence mode), the CPU frequency governor, the dataset's
fingerprint, the seed and the exact command line; plus what only the host knows (the image's
digest, dnnbench's git commit, the host's command line and dataset path), read from the run
folder's plan.json when the host wrote one. Every probe is best-effort: a fact that cannot be
read is None, never an error.

Python 3.7+, stdlib only (torch and NVML imported where present).
"""
import glob
import hashlib
import os
import platform
import sys

from . import fileio

MANIFEST_VERSION = 1
PLAN_MAX = 1 << 20   # the host's plan.json is a few KiB
# CPU threading settings that change CPU figures (OpenMP's wait policy up to 2x): recorded, and
# passed into docker containers by the host (dnnbench.runs.launch.build_plan)
THREAD_ENV = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_PROC_BIND", "OMP_PLACES", "GOMP_SPINCOUNT",
              "MKL_NUM_THREADS", "KMP_BLOCKTIME", "KMP_AFFINITY")


def thread_env(environ):
    """The CPU threading settings in `environ` (THREAD_ENV's that are set)."""
    return dict((k, environ[k]) for k in THREAD_ENV if k in environ)


def _nccl():
    try:
        import torch
        v = torch.cuda.nccl.version()
    except Exception:
        return None
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


def cpu_governors():
    """The scaling governors of the CPUs ({"performance": 64}), or None where not readable."""
    found = {}
    for path in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"):
        try:
            with open(path) as fh:
                name = fh.read().strip()
        except OSError:
            continue
        found[name] = found.get(name, 0) + 1
    return found or None


def dataset_fingerprint(path):
    """Cheap: file count, total bytes and a SHA-256 of the sorted list of relative paths and sizes
    (no file is read, so it takes seconds even for ImageNet)."""
    if not path:
        return None
    root = os.path.abspath(path)
    entries = []
    stack = [root]
    seen = set()   # folders by (device, inode): a link back up the tree is walked once, not forever
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as it:
                for e in it:
                    if e.is_dir(follow_symlinks=True):
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=True):
                        entries.append((os.path.relpath(e.path, root), e.stat().st_size))
        except OSError:
            continue
    entries.sort()
    digest = hashlib.sha256()
    for rel, size in entries:
        digest.update(("%s\t%d\n" % (rel, size)).encode("utf-8", "surrogateescape"))
    return {"path": root, "files": len(entries), "bytes": sum(s for _, s in entries),
            "list_sha256": digest.hexdigest()}


def _nvml_state():
    """Per visible GPU at start: clocks, power limit, ECC, MIG, persistence (NVML)."""
    from . import telemetry
    nvml = telemetry._nvml()
    if nvml is None:
        return None
    out = []
    try:
        handles = telemetry.visible_handles(nvml)
    except Exception:
        return None
    for i, h in enumerate(handles):
        def get(name, *a):
            fn = getattr(nvml, name, None)
            try:
                return fn(h, *a) if fn else None
            except Exception:
                return None

        def current(pair):   # (current, pending) pairs
            return pair[0] if isinstance(pair, (list, tuple)) and pair else pair
        limit = get("nvmlDeviceGetEnforcedPowerLimit") or get("nvmlDeviceGetPowerManagementLimit")
        out.append({
            "index": i, "uuid": get("nvmlDeviceGetUUID"),
            "sm_clock_mhz": get("nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM),
            "mem_clock_mhz": get("nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_MEM),
            "max_sm_clock_mhz": get("nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_SM),
            "applications_sm_clock_mhz": get("nvmlDeviceGetApplicationsClock", nvml.NVML_CLOCK_SM),
            "power_limit_w": limit / 1000.0 if limit is not None else None,
            "ecc": current(get("nvmlDeviceGetEccMode")),
            "mig": current(get("nvmlDeviceGetMigMode")),
            "persistence": get("nvmlDeviceGetPersistenceMode"),
        })
    return out


def _host_facts(results):
    """What the host put in the run's plan.json under "manifest" (image digest, git commit...)."""
    try:
        plan = fileio.read_json(os.path.join(results, "plan.json"), max_bytes=PLAN_MAX)
    except (OSError, ValueError):   # missing, a link, a FIFO, too large, not JSON: no host facts
        return None
    facts = plan.get("manifest") if isinstance(plan, dict) else None
    return facts if isinstance(facts, dict) else None


def collect(args, device, system=None, rank=0):
    """The manifest of this run (rank 0 reads the GPUs and fingerprints the dataset)."""
    try:
        from .. import __version__ as version
    except Exception:
        version = None
    system = system or {}
    m = {
        "manifest_version": MANIFEST_VERSION,
        "dnnbench_version": version,
        "python": platform.python_version(),
        "pytorch": system.get("pytorch"), "torchvision": system.get("torchvision"),
        "cuda": system.get("cuda"), "hip": system.get("hip"), "cudnn": system.get("cudnn"),
        "nccl": _nccl() if device == "cuda" else None,
        "driver": system.get("driver"),
        "gpus": _nvml_state() if device == "cuda" and rank == 0 else None,
        "cpu_governor": cpu_governors(),
        "thread_env": thread_env(os.environ) or None,
        "image": os.environ.get("DNNBENCH_IMAGE"), "base": os.environ.get("DNNBENCH_BASE"),
        "dataset": dataset_fingerprint(args.data) if rank == 0 else None,
        "synthetic": args.data is None,
        "seed": args.seed,
        "command_line": [sys.executable] + sys.argv,
        "host": _host_facts(args.results),
    }
    return m
