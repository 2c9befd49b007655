"""What a result must say about where it ran: GPUs, driver, CUDA, libraries, CPU, host, image."""
import os
import platform
import socket
import subprocess
import sys


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _driver():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return None


def collect(device="cpu"):
    """A dict describing this machine; cheap (called once per run)."""
    import torch

    info = {
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "pytorch": torch.__version__,
        "cuda": getattr(torch.version, "cuda", None),
        "hip": getattr(torch.version, "hip", None),
        "cudnn": None,
        "torchvision": None,
        "gpus": [],
        "gpu_count": 0,
        "driver": None,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "image": os.environ.get("DNNBENCH_IMAGE"),
        "base": os.environ.get("DNNBENCH_BASE"),
        "container": os.path.exists("/.dockerenv") or "APPTAINER_CONTAINER" in os.environ
                     or "SINGULARITY_CONTAINER" in os.environ,
        "command_line": [sys.executable] + sys.argv,
    }
    try:
        import torchvision
        info["torchvision"] = torchvision.__version__
    except Exception:
        pass
    try:
        info["cudnn"] = torch.backends.cudnn.version()
    except Exception:
        pass
    if device == "cuda" and torch.cuda.is_available():
        n = torch.cuda.device_count()
        info["gpu_count"] = n
        for i in range(n):
            p = torch.cuda.get_device_properties(i)
            info["gpus"].append({
                "index": i, "name": p.name, "memory_bytes": p.total_memory,
                "capability": "%d.%d" % (p.major, p.minor),
                "uuid": str(getattr(p, "uuid", "")) or None,
            })
        info["driver"] = _driver()
    return info
