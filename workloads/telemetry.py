"""GPU telemetry sampled in a side thread: power, energy, clocks, temperature, utilization, memory.

NVML (nvidia-ml-py) where importable. CUDA_VISIBLE_DEVICES is mapped to NVML handles by UUID,
since NVML ignores that variable and orders GPUs by PCI bus. Writes telemetry-gpu<i>.csv and
returns medians over the timed window plus the energy counter's delta.
"""
import csv
import os
import statistics
import threading
import time

FIELDS = ("time", "gpu", "power_w", "energy_j", "sm_clock_mhz", "mem_clock_mhz", "temperature_c",
          "utilization_pct", "memory_used_mib", "throttle_reasons")


def _nvml():
    try:
        import pynvml
        pynvml.nvmlInit()
        return pynvml
    except Exception:
        return None


def visible_handles(nvml):
    """NVML handles of the GPUs this process sees, in CUDA order."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    count = nvml.nvmlDeviceGetCount()
    if not visible:
        return [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    handles = []
    for token in [t.strip() for t in visible.split(",") if t.strip()]:
        if token.startswith(("GPU-", "MIG-")):
            handles.append(nvml.nvmlDeviceGetHandleByUUID(token))
        elif token.isdigit() and int(token) < count:
            handles.append(nvml.nvmlDeviceGetHandleByIndex(int(token)))
    return handles


def _read(nvml, h):
    def get(fn, *a):
        try:
            return fn(h, *a)
        except Exception:
            return None
    power = get(nvml.nvmlDeviceGetPowerUsage)
    energy = get(nvml.nvmlDeviceGetTotalEnergyConsumption)
    util = get(nvml.nvmlDeviceGetUtilizationRates)
    mem = get(nvml.nvmlDeviceGetMemoryInfo)
    throttle = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
    return {
        "power_w": power / 1000.0 if power is not None else None,
        "energy_j": energy / 1000.0 if energy is not None else None,
        "sm_clock_mhz": get(nvml.nvmlDeviceGetClockInfo, nvml.NVML_CLOCK_SM),
        "mem_clock_mhz": get(nvml.nvmlDeviceGetClockInfo, nvml.NVML_CLOCK_MEM),
        "temperature_c": get(nvml.nvmlDeviceGetTemperature, nvml.NVML_TEMPERATURE_GPU),
        "utilization_pct": util.gpu if util is not None else None,
        "memory_used_mib": mem.used / 2.0 ** 20 if mem is not None else None,
        "throttle_reasons": get(throttle) if throttle else None,
    }


class Sampler(object):
    def __init__(self, nvml, handles, folder, interval=0.1):
        self.nvml, self.handles, self.folder, self.interval = nvml, handles, folder, interval
        self.rows = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dnnbench-telemetry", daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stop.is_set():
            now = time.time()
            for i, h in enumerate(self.handles):
                row = _read(self.nvml, h)
                row.update(time=now, gpu=i)
                self.rows.append(row)
            self._stop.wait(self.interval)

    def stop(self, t0, t1):
        """Stop sampling; write the CSVs; summarize the samples in [t0, t1]."""
        self._stop.set()
        self._thread.join(timeout=5)
        os.makedirs(self.folder, exist_ok=True)
        for i in range(len(self.handles)):
            with open(os.path.join(self.folder, "telemetry-gpu%d.csv" % i), "w") as fh:
                writer = csv.DictWriter(fh, fieldnames=FIELDS)
                writer.writeheader()
                writer.writerows(r for r in self.rows if r["gpu"] == i)
        return summarize(self.rows, t0, t1)


def summarize(rows, t0, t1):
    window = [r for r in rows if t0 <= r["time"] <= t1]
    out = {"samples": len(window), "gpus": sorted({r["gpu"] for r in window})}
    for key in ("power_w", "sm_clock_mhz", "mem_clock_mhz", "temperature_c", "utilization_pct", "memory_used_mib"):
        values = [r[key] for r in window if r.get(key) is not None]
        out["median_" + key] = statistics.median(values) if values else None
    energy = 0.0
    seen = False
    for gpu in out["gpus"]:
        series = [r["energy_j"] for r in window if r["gpu"] == gpu and r.get("energy_j") is not None]
        if len(series) >= 2:
            energy += series[-1] - series[0]
            seen = True
    out["energy_j"] = energy if seen else None
    return out


def start(device, folder, interval=0.1):
    """A running Sampler, or None where there is no NVML (CPU runs, AMD without amdsmi)."""
    if device != "cuda":
        return None
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        handles = visible_handles(nvml)
    except Exception:
        return None
    return Sampler(nvml, handles, folder, interval) if handles else None


def cool_down(max_seconds, log, poll=5.0, nvml=None, sleep=time.sleep, clock=time.monotonic):
    """Wait until the visible GPUs are back near idle: the hottest one's temperature has not
    fallen by a degree over the last three polls (or is under 40 C), or max_seconds passed.
    Runs that start hot clock lower; the SC'22 variability study waits like this between runs."""
    nvml = nvml or _nvml()
    if nvml is None:
        return {"skipped": "no NVML"}
    handles = visible_handles(nvml)

    def hottest():
        return max(nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU) for h in handles)
    start = clock()
    temps = [hottest()]
    while clock() - start < max_seconds and temps[-1] >= 40:
        if len(temps) >= 4 and temps[-4] - temps[-1] < 1:
            break
        sleep(poll)
        temps.append(hottest())
    waited = clock() - start
    out = {"waited_s": round(waited, 1), "start_c": temps[0], "end_c": temps[-1],
           "settled": waited < max_seconds}
    log("[cool-down] %d C -> %d C in %.0fs%s" % (temps[0], temps[-1], waited,
                                                "" if out["settled"] else " (gave up: --cool-down limit)"))
    return out
