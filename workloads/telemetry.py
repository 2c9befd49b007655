"""GPU telemetry sampled in a side thread: power, energy, clocks, temperature, utilization, memory.

NVML (nvidia-ml-py) where importable, else amdsmi on ROCm. CUDA_VISIBLE_DEVICES is mapped to
NVML handles by UUID, since NVML ignores that variable and orders GPUs by PCI bus. Writes
telemetry-gpu<i>.csv and returns medians over the timed window plus the energy counter's delta.
"""
import csv
import os
import statistics
import threading
import time

from . import fileio

FIELDS = ("time", "gpu", "power_w", "energy_j", "sm_clock_mhz", "mem_clock_mhz", "temperature_c",
          "utilization_pct", "memory_used_mib", "throttle_reasons", "max_sm_clock_mhz")


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
        "max_sm_clock_mhz": get(nvml.nvmlDeviceGetMaxClockInfo, nvml.NVML_CLOCK_SM),
    }


def _amdsmi():
    try:
        import amdsmi
        amdsmi.amdsmi_init()
        return amdsmi
    except Exception:
        return None


def amd_handles(smi):
    """amdsmi handles of the GPUs this process sees (HIP/ROCR_VISIBLE_DEVICES are indices)."""
    handles = smi.amdsmi_get_processor_handles()
    visible = os.environ.get("HIP_VISIBLE_DEVICES") or os.environ.get("ROCR_VISIBLE_DEVICES")
    if not visible:
        return list(handles)
    return [handles[int(t)] for t in visible.split(",") if t.strip().isdigit() and int(t) < len(handles)]


def _number(value):
    """amdsmi reports "N/A" for what a GPU does not measure."""
    return value if isinstance(value, (int, float)) else None


def _read_amd(smi, h):
    def get(fn, *a):
        try:
            return getattr(smi, fn)(h, *a)
        except Exception:
            return None
    power = get("amdsmi_get_power_info") or {}
    energy = get("amdsmi_get_energy_count") or {}
    acc = _number(energy.get("energy_accumulator", energy.get("power")))
    res = _number(energy.get("counter_resolution"))
    gfx = get("amdsmi_get_clock_info", smi.AmdSmiClkType.GFX) or {}
    mem_clk = get("amdsmi_get_clock_info", smi.AmdSmiClkType.MEM) or {}
    vram = get("amdsmi_get_gpu_vram_usage") or {}
    return {
        # MI300 reports the current socket power; MI200 and Navi an average
        "power_w": _number(power.get("current_socket_power")) or _number(power.get("average_socket_power")),
        "energy_j": acc * res / 1e6 if acc is not None and res is not None else None,   # µJ per count
        "sm_clock_mhz": _number(gfx.get("clk", gfx.get("cur_clk"))),          # renamed around ROCm 6.2
        "mem_clock_mhz": _number(mem_clk.get("clk", mem_clk.get("cur_clk"))),
        "temperature_c": _number(get("amdsmi_get_temp_metric", smi.AmdSmiTemperatureType.EDGE,
                                     smi.AmdSmiTemperatureMetric.CURRENT)),
        "utilization_pct": _number((get("amdsmi_get_gpu_activity") or {}).get("gfx_activity")),
        "memory_used_mib": _number(vram.get("vram_used")),
        "throttle_reasons": None,
        "max_sm_clock_mhz": _number(gfx.get("max_clk")),
    }


class Sampler(object):
    def __init__(self, read, handles, folder, interval=0.1):
        self.read, self.handles, self.folder, self.interval = read, handles, folder, interval
        self.rows = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dnnbench-telemetry", daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stop.is_set():
            now = time.time()
            for i, h in enumerate(self.handles):
                row = self.read(h)
                row.update(time=now, gpu=i)
                self.rows.append(row)
            self._stop.wait(self.interval)

    def stop(self, t0, t1):
        """Stop sampling; write the CSVs; summarize the samples in [t0, t1]."""
        self._stop.set()
        self._thread.join(timeout=5)
        os.makedirs(self.folder, exist_ok=True)
        for i in range(len(self.handles)):
            with fileio.open_write(os.path.join(self.folder, "telemetry-gpu%d.csv" % i)) as fh:
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
    clocks = [r["max_sm_clock_mhz"] for r in window if r.get("max_sm_clock_mhz")]
    out["max_sm_clock_mhz"] = max(clocks) if clocks else None
    # what the verdict reads: how often the power cap or a thermal slowdown held the clock down
    from .verdict import throttle_shares
    out["throttle_power_share"], out["throttle_thermal_share"] = throttle_shares(
        [r.get("throttle_reasons") for r in window])
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
    if device != "cuda":      # ROCm builds of PyTorch call their GPUs cuda too
        return None
    nvml = _nvml()
    smi = _amdsmi() if nvml is None else None
    try:
        if nvml is not None:
            handles, read = visible_handles(nvml), (lambda h: _read(nvml, h))
        elif smi is not None:
            handles, read = amd_handles(smi), (lambda h: _read_amd(smi, h))
        else:
            return None
    except Exception:
        return None
    return Sampler(read, handles, folder, interval) if handles else None


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
