"""Profiling: the wrapping (`--profile`, the container-side launcher), the parsers on outputs in
the documented formats (the tools' own documentation; no GPU here to capture real ncu/nsys
output), a real torch.profiler trace from a CPU run, cool-down, and `dnnbench profile show`."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from dnnbench import profilers
from dnnbench.profilers import common, ncu, nsys, nvprof, rocprof, torch_trace
from dnnbench.workloads import known_lines, profile as launcher
from dnnbench.workloads import telemetry

from tests.helpers import dnnbench, one_line_error

# --- ncu: `--csv --page raw --print-units base` (a units row under the header) ---------------
NCU_IDS = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC"'
NCU_RAW = f"""==PROF== Connected to process 4242 (/usr/bin/python3.10)
[resnet50] warmup done in 3.1s
==PROF== Profiling "ampere_sgemm_128x64_nn": 0%....50%....100% - 3 passes
{NCU_IDS},"gpc__cycles_elapsed.max","gpu__time_duration.sum","sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed","sm__inst_executed_pipe_fp16.avg.pct_of_peak_sustained_elapsed","sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_elapsed","sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed","sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
"","","","","","","","","","","","cycle","nsecond","%","%","%","%","%"
"0","4242","python3.10","node1","ampere_sgemm_128x64_nn","1","7","(128, 1, 1)","(80, 1, 1)","0","8.0","1,000,000","700,000","40","0","0","2","0"
"1","4242","python3.10","node1","sm80_xmma_fprop_implicit_gemm_f16f16","1","7","(256, 1, 1)","(108, 1, 1)","0","8.0","3,000,000","2,100,000","10","5","60","1","55"
==PROF== Profiling "vectorized_elementwise_kernel": 0%....50%....100% - 3 passes
"2","4242","python3.10","node1","vectorized_elementwise_kernel","1","7","(128, 1, 1)","(512, 1, 1)","0","8.0","1,000,000","700,000","20","10","0","30","0"
==PROF== Disconnected from process 4242
"""
# Cycle-weighted (1M, 3M, 1M): fma (40+30+20)/5 = 18; fp16 (15+10)/5 = 5; tensor 180/5 = 36;
# sfu (2+3+30)/5 = 7; tensor cycles active, duration-weighted: 55*2.1/3.5 = 33. The last
# kernel counts (coreutil's range(max_id) dropped it).
NCU_EXPECTED = {"fma": 18.0, "fp16": 5.0, "tensor": 36.0, "sfu": 7.0, "tensor_active": 33.0}


def _ncu_details(raw: str, extra_columns: bool) -> str:
    """The same launches on ncu's default `details` page: one row per metric (2023+ adds rule columns)."""
    rows = [r for r in raw.splitlines() if r.startswith('"')]
    header = rows[0].split('","')
    metrics = [h.strip('"') for h in header[11:]]
    extra = ',"Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"'
    out = [NCU_IDS + ',"Section Name","Metric Name","Metric Unit","Metric Value"' + (extra if extra_columns else "")]
    for line in rows[2:]:
        cells = next(iter(__import__("csv").reader([line])))
        for metric, value in zip(metrics, cells[11:]):
            out.append(",".join(f'"{c}"' for c in cells[:11]) + f',"Command line profiler metrics","{metric}","","{value}"'
                       + (',"","","","",""' if extra_columns else ""))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("page", ["raw", "details", "details-2023"])
def test_ncu_utilization_weighted_by_cycles(page):
    text = NCU_RAW if page == "raw" else _ncu_details(NCU_RAW, extra_columns=page == "details-2023")
    summary = ncu.ncu_summary(text)
    assert summary["launches"] == 3 and summary["weighted_by"] == "cycles (gpc__cycles_elapsed.max)"
    assert summary["utilization_pct"] == pytest.approx(NCU_EXPECTED)
    assert [k["name"] for k in summary["kernels"]][0] == "sm80_xmma_fprop_implicit_gemm_f16f16"
    assert summary["kernels"][0]["time_pct"] == pytest.approx(60.0)


def test_ncu_volta_and_hopper_metric_names_feed_the_same_fields():
    volta = (f'{NCU_IDS},"gpc__cycles_elapsed.max","sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_elapsed",'
             '"sm__inst_executed_pipe_fp16.avg.pct_of_peak_sustained_elapsed"\n'
             '"0","1","p","h","volta_h884gemm","1","7","(1, 1, 1)","(1, 1, 1)","0","7.0","2,000","50","4"\n')
    assert ncu.ncu_summary(volta)["utilization_pct"] == {"tensor": 50.0, "fp16": 4.0}
    hopper = (f'{NCU_IDS},"gpc__cycles_elapsed.max","sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed",'
              '"sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_elapsed"\n'
              '"0","1","p","h","sm90_xmma_gemm_f16f16_wgmma","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","1,000","70","0"\n'
              '"1","1","p","h","cudnn_hmma_conv","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","1,000","0","30"\n')
    assert ncu.ncu_summary(hopper)["utilization_pct"] == {"tensor": 50.0}


def test_ncu_output_without_kernels_says_why():
    with pytest.raises(common.ProfileFormatError, match="no header"):
        ncu.ncu_summary("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM\n")
    with pytest.raises(common.ProfileFormatError, match="window"):
        ncu.ncu_summary(NCU_RAW.split('"0","4242"')[0])


def test_ncu_units_and_suffixes_are_read_never_guessed():
    """A `.sum` count is not a share of peak; two suffixes of one metric are not added; the
    details page's unit column converts durations (us and ms mixed) before they weigh anything."""
    rows = [("0", "big", "gpu__time_duration.sum", "msecond", "2"), ("0", "big", "sm__inst_executed_pipe_fma.sum", "inst", "9,000"),
            ("0", "big", "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active", "%", "90"),
            ("0", "big", "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed", "%", "30"),
            ("1", "small", "gpu__time_duration.sum", "usecond", "500"),
            ("1", "small", "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed", "%", "80")]
    text = NCU_IDS + ',"Section Name","Metric Name","Metric Unit","Metric Value"\n' + "".join(
        f'"{i}","1","p","h","{k}","1","7","(1, 1, 1)","(1, 1, 1)","0","8.9","s","{m}","{u}","{v}"\n' for i, k, m, u, v in rows)
    out = ncu.ncu_summary(text)
    assert out["weighted_by"] == "duration (gpu__time_duration.sum)"
    assert out["utilization_pct"] == {"fma": pytest.approx((30 * 2e6 + 80 * 5e5) / 2.5e6)}    # 40.0, elapsed only
    assert out["metrics"]["fma"] == "fma (pct_of_peak_sustained_elapsed)"
    assert [k["name"] for k in out["kernels"]] == ["big", "small"] and out["kernels"][0]["time_pct"] == pytest.approx(80.0)
    # neither cycles nor duration: an unweighted mean that says so, and no None anywhere
    bare = "\n".join(line.replace(",", ",", 1) for line in text.splitlines() if "gpu__time" not in line)
    out = ncu.ncu_summary(bare)
    assert out["weighted_by"].startswith("unweighted") and out["utilization_pct"]["fma"] == pytest.approx(55.0)
    assert out["ranked_by"].startswith("launch count") and "null" not in json.dumps(out)


@pytest.mark.parametrize("cc, tensor", [((7, 0), "sm__inst_executed_pipe_tensor."),
                                         ((8, 0), "sm__inst_executed_pipe_tensor_op_hmma."),
                                         ((9, 0), "sm__inst_executed_pipe_tensor_op_gmma.")])
def test_launcher_picks_ncu_metrics_per_architecture(cc, tensor):
    metrics = launcher.ncu_metrics(cc)
    assert any(m.startswith(tensor) for m in metrics) and "gpc__cycles_elapsed.max" in metrics
    if cc >= (8, 6):
        assert "sm__inst_executed_pipe_fma_type_fp16.avg.pct_of_peak_sustained_elapsed" in metrics
    # names `ncu --query-metrics` does not list for this GPU are dropped, not passed to ncu
    kept = launcher.ncu_metrics(cc, available={"sm__inst_executed_pipe_fma", "gpc__cycles_elapsed"})
    assert kept == ["sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed", "gpc__cycles_elapsed.max"]


def test_launcher_command_lines():
    cmd = ["python3", "-m", "dnnbench.workloads", "resnet50"]
    ncu = launcher.command("ncu", "/results/profile", cmd, (9, 0))
    assert ncu[:9] == ["ncu", "--target-processes", "all", "--profile-from-start", "off", "--launch-count", "200",
                       "--clock-control", "base"] and ncu[-4:] == cmd and "/results/profile/ncu.csv" in ncu
    nsys = launcher.command("nsys", "/results/profile", cmd)
    assert "cudaProfilerApi" in nsys and nsys[-4:] == cmd
    with pytest.raises(launcher.ProfileError, match=r"8.0 and later \(this GPU is 8.0\).*nsys"):
        launcher.command("nvprof", "/r", cmd, (8, 0))
    assert launcher.command("nvprof", "/r", cmd, (7, 0))[0] == "nvprof"
    with pytest.raises(launcher.ProfileError, match="7.0 or later"):
        launcher.command("ncu", "/r", cmd, (6, 1))


def test_launcher_says_when_the_image_lacks_the_profiler(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert launcher.main(["ncu", str(tmp_path / "p"), "--", "true"]) == 2
    assert "ncu is not on this image's PATH" in capsys.readouterr().err


# --- nsys stats, nvprof, rocprof -------------------------------------------------------
NSYS_KERN_SUM = """Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
62.5,5000,2,2500.0,2500.0,2000,3000,707.1,"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)"
37.5,3000,3,1000.0,1000.0,1000,1000,0.0,"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char *, 1>>(int, T2, T3)"
"""
NSYS_TRACE = """Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),Throughput (MBps),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name
1000,3000,10,1,1,1,128,1,1,64,0.0,0.0,,,,,NVIDIA H100 80GB HBM3 (0),1,,7,cutlass_gemm
2000,2000,11,1,1,1,128,1,1,64,0.0,0.0,,,,,NVIDIA H100 80GB HBM3 (0),1,,7,fill
5000,1000,12,,,,,,,,,,4.0,4000.0,Pageable,Device,NVIDIA H100 80GB HBM3 (0),1,,7,[CUDA memcpy Host-to-Device]
8000,2000,13,1,1,1,128,1,1,64,0.0,0.0,,,,,NVIDIA H100 80GB HBM3 (0),1,,7,cutlass_gemm
"""
# Kernels busy on [1000, 4000) and [8000, 10000): 5000 ns.
NSYS_OLD_KERN_SUM = """Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,StdDev,Name
70.0,7000,7,1000.0,900,1100,50.0,volta_sgemm_128x64_nn
30.0,3000,3,1000.0,1000,1000,0.0,elementwise_kernel
"""


def test_nsys_top_kernels_and_busy_share():
    out = nsys.nsys_summary(NSYS_KERN_SUM, NSYS_TRACE, window_s=None)
    assert [k["instances"] for k in out["kernels"]] == [2, 3] and out["kernels"][0]["time_pct"] == 62.5
    assert "FillFunctor<float>" in out["kernels"][1]["name"]          # quoted names with commas
    assert out["busy_pct"] == pytest.approx(100 * 5000 / 9000)           # first kernel start to last end
    timed = nsys.nsys_summary(NSYS_KERN_SUM, NSYS_TRACE, window_s=20e-6)
    assert timed["busy_pct"] == pytest.approx(25.0) and timed["busy_of"] == "timed window"
    old = nsys.nsys_summary(NSYS_OLD_KERN_SUM)                       # CUDA 11.x images: gpukernsum
    assert old["kernels"][0] == {"name": "volta_sgemm_128x64_nn", "time_pct": 70.0, "total_ns": 7000.0,
                                 "instances": 7, "avg_ns": 1000.0}


def test_nvprof_gpu_summary_units():
    text = """======== Profiling result:
"Type","Time(%)","Time","Calls","Avg","Min","Max","Name"
,%,ms,,us,us,us,
"GPU activities",71.5,143.0,100,1430.0,1400.0,1500.0,"volta_scudnn_128x64_relu_medium_nn_v1"
"GPU activities",28.5,57.0,300,190.0,180.0,200.0,"[CUDA memcpy HtoD]"
"API calls",90.0,500.0,10,50000.0,1.0,90000.0,"cudaMalloc"
"""
    out = nvprof.nvprof_summary(text)
    assert out["kernel_names"] == 1 and out["memcpy_memset_ns"] == pytest.approx(57e6)   # memcpy: not a kernel
    assert out["kernels"][0]["total_ns"] == pytest.approx(143e6) and out["kernels"][0]["instances"] == 100


def test_rocprof_stats():
    text = ('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
            '"Cijk_Ailk_Bljk_HHS_BH_MT128x128x32",120,9000000,75000,75.0\n'
            '"void at::native::elementwise_kernel<128, 2>(int, T1)",400,3000000,7500,25.0\n')
    out = rocprof.rocprof_summary(text)
    assert out["kernels"][0]["name"].startswith("Cijk") and out["kernels"][1]["instances"] == 400


# --- a real torch.profiler run on the CPU ------------------------------------------------

def test_torch_profile_of_a_real_run_and_profile_show(tmp_path):
    run = dnnbench("run", "resnet18", "--runtime", "host", "--profile", "torch", "--batch-size", "2", "--number",
                   "2", "--repeat", "1", "--warmup", "1", "--results", tmp_path, "--run-id", "t", check=0)
    # libkineto's known-harmless lines on a CPU run (no GPU found; the trace's start and stop) are
    # on neither the screen nor the log, and the run's own lines are, in order
    log = (tmp_path / "t" / "log.txt").read_text()
    for text in (run.stdout + run.stderr, log):
        assert "gpuGetDeviceCount" not in text and "USDT:" not in text, text
        # (a note of the run's own, e.g. that its wait for a CPU cannot be told, may come between)
        assert re.search(r"warmup done in .*\n(?:.*note: .*\n)*.*window 1/1 .*\n.*images/s \(sum of items", text), text
    data = json.loads((tmp_path / "t" / "result.json").read_text())
    top = data["profile"]["torch"]["kernels"]
    assert data["profile"]["torch"]["of"] == "CPU ops (self time)"
    # Self times from the Chrome trace agree with torch's own key_averages() table of the same run.
    table = (tmp_path / "t" / "torch-ops.txt").read_text().splitlines()
    first = next(line for line in table if line.strip().startswith("aten::"))
    # Columns: name, Self CPU %, Self CPU, ...; torch prints a time in us, ms or s by its size.
    value, unit = re.fullmatch(r"([\d.]+)(s|ms|us)", first.split()[2]).groups()
    name, self_ms = first.split()[0], float(value) * {"s": 1e3, "ms": 1.0, "us": 1e-3}[unit]
    assert top[0]["name"] == name and top[0]["total_ns"] / 1e6 == pytest.approx(self_ms, rel=0.01)
    res = dnnbench("profile", "show", tmp_path / "t", "--top", "3", check=0)
    assert "torch.profiler: top CPU ops (self time)" in res.stdout and name in res.stdout


def test_profile_show_with_nothing_to_show(tmp_path):
    dnnbench("run", "resnet18", "--runtime", "host", "--batch-size", "2", "--number", "1", "--repeat", "1",
             "--warmup", "0", "--results", tmp_path, "--run-id", "plain", "--quiet", check=0)
    one_line_error(dnnbench("profile", "show", tmp_path / "plain"), "no profile", "--profile")
    one_line_error(dnnbench("profile", "show", tmp_path / "nope"), "holds no result.json")


def test_profile_show_renders_ncu_and_nsys_files(tmp_path):
    from dnnbench.workloads import schema
    run = tmp_path / "r"
    (run / "profile").mkdir(parents=True)
    (run / "profile" / "ncu.csv").write_text(NCU_RAW)
    (run / "profile" / "nsys_cuda_gpu_kern_sum.csv").write_text(NSYS_KERN_SUM)
    (run / "profile" / "nsys_cuda_gpu_trace.csv").write_text(NSYS_TRACE)
    result = {"schema_version": 1, "run_id": "r", "workload": "resnet50", "status": "ok", "message": None,
              "options": {}, "unit": "images/s", "throughput": {"total": schema.summarize([100.0])},
              "windows": [{"items": 10, "seconds": 20e-6}], "loss": [], "system": {}, "started": "", "ended": "",
              "world_size": 1, "ranks": [],
              "telemetry": {"samples": 12, "median_power_w": 612.5, "energy_j": 30.0, "energy_per_item_j": 0.0123}}
    schema.write_atomic(str(run / "result.json"), result)
    out = dnnbench("profile", "show", run, check=0).stdout
    assert "weighted by cycles" in out and "gpc__cycles_elapsed.max" in out and "36.00" in out      # tensor pipe
    assert "GPU busy 25.0% of the timed window" in out
    assert "612.5" in out and "0.0123" in out


# --- run wiring ---------------------------------------------------------------------------

def test_run_wraps_the_command_and_adds_the_capability_only_when_profiling(tmp_path):
    plan = json.loads(dnnbench("run", "resnet50", "--gpus", "0", "--profile", "ncu", "--image", "img", "--dry-run",
                               "--results", tmp_path, check=0).stdout.split("\ndocker run")[0])
    assert plan["cap_add"] == ["SYS_ADMIN"] and plan["profile"] == "ncu"
    assert plan["argv"][1:6] == ["-m", "dnnbench.workloads.profile", "ncu", "/results/profile", "--"]
    assert plan["argv"][-2:] == ["--profile-window", "cuda"]
    plain = json.loads(dnnbench("run", "resnet50", "--gpus", "0", "--image", "img", "--dry-run",
                                "--results", tmp_path, check=0).stdout.split("\ndocker run")[0])
    assert plain["cap_add"] == [] and "dnnbench.workloads.profile" not in plain["argv"]


@pytest.mark.parametrize("args, fragments", [
    (["--profile", "vtune"], ["'--profile'", "'vtune' is not one of"]),
    (["--profile", "ncu"], ["add --gpus"]),
    (["--profile", "nsys", "--gpus", "0", "--base", "rocm-6.0.2"], ["needs an NVIDIA image", "amd"]),
    (["--profile", "nvprof", "--gpus", "0", "--base", "ngc-24.10"], ["does not carry nvprof"]),
    (["--profile", "rocprof", "--gpus", "0", "--image", "img"], ["needs an AMD image", "nvidia"]),
])
def test_profile_mistakes(args, fragments, tmp_path):
    # an image named where the case names none: the one image rule refuses to guess on a machine
    # with several (other tests build theirs meanwhile)
    image = [] if {"--image", "--base"} & set(args) else ["--image", "dnnbench:cpu"]
    one_line_error(dnnbench("run", "resnet50", "--dry-run", "--results", tmp_path, *image, *args), *fragments)


# --- cool-down (NVML needs a GPU: a stand-in with NVML's calls) ------------------------------

class FakeNVML:
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, temps):
        self.temps = list(temps)

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return self.temps.pop(0) if len(self.temps) > 1 else self.temps[0]


def _clock():
    now = [0.0]
    return (lambda s: now.__setitem__(0, now[0] + s)), (lambda: now[0])


def test_cool_down_waits_until_the_temperature_stops_falling(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    sleep, clock = _clock()
    out = telemetry.cool_down(600, lambda m: None, nvml=FakeNVML([80, 72, 66, 62, 61, 61, 61, 61]), sleep=sleep,
                              clock=clock)
    assert out == {"waited_s": 35.0, "start_c": 80, "end_c": 61, "settled": True}   # 3 polls without a 1 C fall
    sleep, clock = _clock()
    hot = telemetry.cool_down(12, lambda m: None, nvml=FakeNVML([90, 85, 80, 75, 70]), sleep=sleep, clock=clock)
    assert hot["settled"] is False and hot["end_c"] == 75


def test_launcher_module_imports_with_the_standard_library_alone(tmp_path):
    """It starts inside old images before anything else: a Python that has neither torch nor
    anything else beyond the standard library must import it (vermin checks the 3.7 syntax)."""
    import subprocess
    code = "import sys; sys.path.insert(0, sys.argv[1]); import dnnbench_profile as p; print(len(p.PIPE_FIELDS))"
    (tmp_path / "dnnbench_profile.py").write_text(open(launcher.__file__).read())
    res = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert res.returncode == 0 and int(res.stdout) >= 10, res.stderr


def test_amd_telemetry_reads_amdsmi_fields(monkeypatch):
    """amdsmi's calls as documented (no AMD GPU here): "N/A" becomes None, clk/cur_clk both read,
    energy = accumulator x resolution (µJ), HIP_VISIBLE_DEVICES picks handles."""
    class Enum:
        GFX, MEM, EDGE, CURRENT = "gfx", "mem", "edge", "current"

    class FakeSMI:
        AmdSmiClkType = AmdSmiTemperatureType = AmdSmiTemperatureMetric = Enum

        def amdsmi_get_processor_handles(self):
            return ["gpu0", "gpu1"]

        def amdsmi_get_power_info(self, h):
            return {"current_socket_power": "N/A", "average_socket_power": 480, "power_limit": 750}

        def amdsmi_get_energy_count(self, h):
            return {"power": 2_000_000, "counter_resolution": 15.3, "timestamp": 1}

        def amdsmi_get_clock_info(self, h, kind):
            return {"cur_clk": 2100, "max_clk": 2400} if kind == "gfx" else {"clk": 1300}

        def amdsmi_get_temp_metric(self, h, kind, metric):
            return 61

        def amdsmi_get_gpu_activity(self, h):
            return {"gfx_activity": 97, "umc_activity": 40, "mm_activity": "N/A"}

        def amdsmi_get_gpu_vram_usage(self, h):
            return {"vram_total": 196592, "vram_used": 30000}

    smi = FakeSMI()
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    assert telemetry.amd_handles(smi) == ["gpu1"]
    row = telemetry._read_amd(smi, "gpu1")
    assert row == {"power_w": 480, "energy_j": pytest.approx(30.6), "sm_clock_mhz": 2100, "mem_clock_mhz": 1300,
                   "temperature_c": 61, "utilization_pct": 97, "memory_used_mib": 30000, "throttle_reasons": None,
                   "max_sm_clock_mhz": 2400}


def test_cuda_visible_devices_map_to_nvml_handles_by_uuid(monkeypatch):
    class NVML:
        def nvmlDeviceGetCount(self):
            return 4

        def nvmlDeviceGetHandleByIndex(self, i):
            return f"pci-order-{i}"

        def nvmlDeviceGetHandleByUUID(self, uuid):
            return f"uuid:{uuid}"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8c2a-77,2")
    assert telemetry.visible_handles(NVML()) == ["uuid:GPU-8c2a-77", "pci-order-2"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert len(telemetry.visible_handles(NVML())) == 4


# --- real outputs other people published (tests/fixtures/profiles/SOURCES.md) --------------------
FIX = __import__("pathlib").Path(__file__).parent / "fixtures" / "profiles"


def _read(name):
    return (FIX / name).read_text()


def test_real_ncu_2020_details_page_v100():
    """ncu 2020.1 (`Kernel Time` column, sections, `nsecond` units): ranked by Duration; the SOL
    section carries no pipe metrics, and the summary says so instead of printing None."""
    out = ncu.ncu_summary(_read("ncu-2020.1-details-v100.log"))
    assert out["launches"] == 2 and out["ranked_by"] == "duration"
    assert out["kernels"][0]["name"] == "cuda_compute_flux"
    assert out["kernels"][0]["time_pct"] == pytest.approx(100 * 39200 / (39200 + 10720), abs=0.05)   # 78.5 %
    assert out["utilization_pct"] == {} and out["weighted_by"] == "no pipe-utilization metrics in this output"


def test_real_ncu_2025_details_page_with_rule_columns_b200():
    """ncu 2025 details page: 20-column header, metric rows end after Metric Value (16 fields),
    rule rows with no metric; program output before the CSV. Duration in `ns`."""
    kernels = ncu.ncu_kernels(_read("ncu-2025-details-rules-b200.log"))
    assert len(kernels) == 1 and kernels[0]["metrics"]["Duration"] == (406240.0, "ns")
    assert kernels[0]["metrics"]["Elapsed Cycles"] == (508757.0, "cycle")
    out = ncu.ncu_summary(_read("ncu-2025-details-rules-b200.log"))
    assert out["kernels"][0]["name"].startswith("cutlass3x_sm100_tensorop") and out["kernels"][0]["total_ns"] == 406240.0


@pytest.mark.parametrize("name, top, pct, n", [
    ("rocprof-v1-llama-hip.stats.csv", "void mul_mat_q<(ggml_type)13, 128, false>", 21.284, 47),
    ("rocprof-v1-kokkos-unquoted.stats.csv", "void Kokkos::Experimental::Impl::hip_parallel_launch_local_memory"
                                             "<Kokkos::Impl::ParallelFor<scatter_view_loop(", 32.445, 7),
    ("rocprofv3-resnet-mi300/kernels_kernel_stats.csv", "__amd_rocclr_copyBuffer", 18.062, 9),
    ("rocprofv3-resnet-mi300-ddp/node01/12345_kernel_stats.csv", "rccl_main_kernel(ncclDevComm*", 91.878, 9),
])
def test_real_rocprof_stats(name, top, pct, n):
    out = rocprof.rocprof_summary(_read(name))
    assert out["kernels"][0]["name"].startswith(top) and out["kernel_names"] == n
    assert out["kernels"][0]["time_pct"] == pytest.approx(pct, abs=0.001)


def test_real_rocprof_barrier_packets_from_pytorch_rccl_are_not_kernels():
    """A real PyTorch + RCCL/MSCCL file (MI300-class, ISA942) whose top row is `<barrier packet>`
    (35.8 % in the file's own Percentage column): left out, shares recomputed over kernels."""
    text = _read("rocprof-v1-pytorch-rccl-barrier.stats.csv")
    assert '"<barrier packet>",85112,' in text
    out = rocprof.rocprof_summary(text)
    assert out["kernel_names"] == 14 and all(not k["name"].startswith("<") for k in out["kernels"])
    top = out["kernels"][0]
    assert top["name"].startswith("void at::native::indexFuncLargeIndex<c10::BFloat16") and top["instances"] == 107520
    assert top["time_pct"] == pytest.approx(100 * 51373453408 / 191184272160, abs=0.001)        # 26.871 %, not 12.85
    nccl = next(k for k in out["kernels"] if k["name"].startswith("ncclDevKernel_Generic"))
    assert nccl["time_pct"] == pytest.approx(9.883, abs=0.001)


def test_rocprof_barrier_packets_and_its_percentage_column_are_not_used():
    """rocprof v1 lists `<barrier packet>` rows (PyTorch+RCCL); its Percentage counts them. A real
    file with one such row added (the row is the only synthetic part)."""
    text = _read("rocprof-v1-llama-hip.stats.csv").replace(
        '"gemm_q5k_v4.kd"', '"<barrier packet>",2000,1552000000,776000,35.8\n"gemm_q5k_v4.kd"')
    out = rocprof.rocprof_summary(text)
    assert out["kernel_names"] == 47 and out["kernels"][0]["time_pct"] == pytest.approx(21.284, abs=0.001)


def test_real_nvprof_without_type_column():
    out = nvprof.nvprof_summary(_read("nvprof-cuda8-no-type.csv"))        # units inline, names unquoted
    assert [k["name"][:8] for k in out["kernels"]] == ["red_sor(", "black_so"]
    assert out["kernels"][0]["total_ns"] == pytest.approx(237.43e6) and out["kernels"][0]["time_pct"] == pytest.approx(50.018, abs=0.001)
    assert out["memcpy_memset_ns"] == pytest.approx((542.36 + 117.72) * 1e6)
    units_row = nvprof.nvprof_summary(_read("nvprof-no-type-units-row.log"))   # quoted header, a units row
    assert units_row["kernel_names"] == 0 and units_row["memcpy_memset_ns"] == pytest.approx(3840.0)


def test_real_nvprof_gpu_summary_with_type_column():
    """`nvprof --print-gpu-summary --csv` (CUDA 10 era, RTX 2080 Ti): `Type` column, a `us` units row."""
    out = nvprof.nvprof_summary(_read("nvprof-cuda10-gpu-summary-type-2080ti.csv"))
    assert out["kernel_names"] == 3 and out["memcpy_memset_ns"] == 0
    top = out["kernels"][0]
    assert top["name"] == "volta_sgemm_128x64_nn" and top["instances"] == 510
    assert top["total_ns"] == pytest.approx(6659683.0)                                    # 6659.683 us
    assert top["time_pct"] == pytest.approx(100 * 6659.683 / (6659.683 + 1849.837 + 1737.670), abs=0.001)   # 64.990 %


def test_nvprof_parent_process_file_is_skipped_not_a_warning(tmp_path):
    (tmp_path / "profile").mkdir()
    (tmp_path / "profile" / "nvprof-100.csv").write_text("==100== NVPROF is profiling process 100, command: torchrun\n"
                                                         "==100== Generated result file: /r/nvprof-100.nvvp\n")
    (tmp_path / "profile" / "nvprof-101.csv").write_text(_read("nvprof-cuda8-no-type.csv"))
    out = profilers.summarize(tmp_path)
    assert "nvprof:nvprof-101" in out and "problems" not in out


def test_real_nsys_stats_new_report_name():
    out = nsys.nsys_summary(_read("nsys-2024.6-cuda_gpu_kern_sum.csv"))
    assert out["kernels"][0]["name"] == "flash_attention_prefill_f16" and out["kernel_names"] == 13
    assert out["kernels"][0]["time_pct"] == pytest.approx(87.153, abs=0.001)


def test_nsys_empty_capture_says_so():
    with pytest.raises(common.NoProfileData, match="no CUDA kernels"):
        nsys.nsys_summary("Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n")
    assert "captured no CUDA kernels" in launcher.stats_problem(
        ["SKIPPED: /r/profile/nsys.sqlite does not contain CUDA kernel data."])


@pytest.mark.parametrize("name, top, pct, calls, names", [
    ("torch-1.8-resnet50.pt.trace.json.gz", "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>", 13.835, 27, 62),
    ("torch-1.9-resnet50.pt.trace.json.gz", "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>", 13.574, 27, 67),
    ("torch-2.x-alexnet-a100.pt.trace.json", "ampere_sgemm_32x32_sliced1x4_tn", 24.514, 6, 16),
    ("torch-2.x-rocm6.2-mi250.pt.trace.json", "Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32", 15.873, 1, 12),
])
def test_real_torch_profiler_traces(name, top, pct, calls, names):
    """PyTorch 1.8/1.9 write categories Kernel/Operator, 2.x kernel/cpu_op: both read."""
    out = torch_trace.torch_summary(common.read_trace(FIX / name))
    assert out["of"] == "GPU kernels" and out["kernel_names"] == names and out["cpu_op_names"] > 0
    assert out["kernels"][0]["name"].startswith(top) and out["kernels"][0]["instances"] == calls
    assert out["kernels"][0]["time_pct"] == pytest.approx(pct, abs=0.001)


def _run_folder(tmp_path, files):
    from dnnbench.workloads import schema
    run = tmp_path / "r"
    for rel, text in files.items():
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_bytes(text if isinstance(text, bytes) else text.encode())
    schema.write_atomic(str(run / "result.json"), {
        "schema_version": 1, "run_id": "r", "workload": "resnet50", "status": "ok", "message": None, "options": {},
        "unit": "images/s", "throughput": {"total": schema.summarize([100.0])}, "windows": [], "loss": [],
        "system": {}, "started": "", "ended": "", "world_size": 1, "ranks": []})
    return run


def test_profile_show_json_on_real_files_and_rocprofv3_layout(tmp_path):
    run = _run_folder(tmp_path, {
        "profile/node01/12345_kernel_stats.csv": _read("rocprofv3-resnet-mi300-ddp/node01/12345_kernel_stats.csv"),
        "torch-trace.json.gz": (FIX / "torch-1.8-resnet50.pt.trace.json.gz").read_bytes()})
    res = dnnbench("profile", "show", run, "--json", check=0)
    data = json.loads(res.stdout)
    assert data["profile"]["rocprof"]["kernels"][0]["name"].startswith("rccl_main_kernel")
    assert data["profile"]["torch"]["kernels"][0]["name"].startswith("void cudnn::detail::dgrad_engine")
    table = dnnbench("profile", "show", run, "--top", "2", check=0).stdout
    assert "rccl_main_kernel(ncclDevComm*" in table and "91.9" in table


def test_profile_show_escapes_names_and_fails_when_nothing_reads(tmp_path):
    run = _run_folder(tmp_path, {"profile/nvprof-1.csv": _read("nvprof-cuda8-no-type.csv").replace(
        "red_sor(", "[bold]red_sor[/bold](")})
    assert "[bold]red_sor[/bold]" in dnnbench("profile", "show", run, check=0).stdout
    bad = _run_folder(tmp_path / "b", {"profile/ncu.csv": "==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM\n"})
    res = dnnbench("profile", "show", bad)
    assert res.returncode == 1 and "no profile in" in res.stderr and "ncu: no header row found" in res.stderr


def test_launcher_ncu_cap_clock_and_dropped_metrics(monkeypatch):
    assert launcher.ncu_settings({}) == (200, "base")
    assert launcher.ncu_settings({"DNNBENCH_NCU_LAUNCH_COUNT": "50", "DNNBENCH_NCU_CLOCK_CONTROL": "none"}) == (50, "none")
    with pytest.raises(launcher.ProfileError, match="base or none"):
        launcher.ncu_settings({"DNNBENCH_NCU_CLOCK_CONTROL": "boost"})
    dropped = []
    cmd = launcher.command("ncu", "/p", ["x"], (8, 9), {"sm__inst_executed_pipe_fma", "gpc__cycles_elapsed",
                                                          "gpu__time_duration"}, 50, "none", dropped)
    assert cmd[5:9] == ["--launch-count", "50", "--clock-control", "none"]
    assert "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_elapsed" in dropped


def test_launcher_summary_records_the_ncu_choices(tmp_path):
    run = _run_folder(tmp_path, {"profile/ncu.csv": NCU_RAW, "profile/launch.json": json.dumps(
        {"tool": "ncu", "launch_count": 200, "clock_control": "base", "dropped_metrics": ["x.avg"]})})
    ncu = profilers.summarize(run)["ncu"]
    assert ncu["launch"]["launch_count"] == 200 and ncu["launch"]["clock_control"] == "base"
    assert "at most 200 kernels profiled" in dnnbench("profile", "show", run, check=0).stdout


@pytest.mark.parametrize("version, has_end", [("NVIDIA Nsight Systems version 2021.2.4.12-8c2a4c1", False),
                                              ("NVIDIA Nsight Systems version 2024.6.2.225-246235244400v0", True),
                                              ("", False)])
def test_launcher_nsys_flags_fit_the_oldest_catalog_nsys(version, has_end):
    cmd = launcher.command("nsys", "/p", ["x"], nsys_ver=launcher.nsys_version(version))
    assert ("--capture-range-end" in cmd) is has_end and "cudaProfilerApi" in cmd


def test_launcher_uses_rocprofv3_where_only_it_ships(tmp_path, monkeypatch, capsys):
    cmd = launcher.command("rocprof", "/p", ["python", "t.py"], rocprof_exe="rocprofv3")
    assert cmd[:3] == ["rocprofv3", "--kernel-trace", "--stats"] and "-d" in cmd and cmd[-3:] == ["--", "python", "t.py"]
    fake = tmp_path / "rocprofv3"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert launcher.main(["rocprof", str(tmp_path / "p"), "--", "true"]) == 0
    assert "profiling with rocprof: rocprofv3 --kernel-trace" in capsys.readouterr().err


class SamplingNVML(FakeNVML):
    """A GPU that NVML would describe: power, energy, clocks, utilization, memory, throttling."""
    NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1

    def __init__(self):
        super().__init__([70])
        self.joules = 0

    def nvmlDeviceGetPowerUsage(self, h):
        return 300_000                                   # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        self.joules += 30
        return self.joules * 1000                        # mJ, counting up

    def nvmlDeviceGetUtilizationRates(self, h):
        return type("Util", (), {"gpu": 97, "memory": 40})()

    def nvmlDeviceGetMemoryInfo(self, h):
        return type("Mem", (), {"used": 2 ** 30, "total": 80 * 2 ** 30})()

    def nvmlDeviceGetClockInfo(self, h, which):
        return 1410 if which == self.NVML_CLOCK_SM else 1593

    def nvmlDeviceGetMaxClockInfo(self, h, which):
        return 1980

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x4                                       # SW power cap


def test_the_sampler_runs_on_a_cpu_with_a_fake_nvml(tmp_path, monkeypatch):
    """The telemetry path a GPU run takes (start, the sampling thread, the CSV per GPU, the
    summary of the timed window), run here with NVML replaced: only reading a real GPU is left
    to a GPU machine."""
    import csv
    import time
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(telemetry, "_nvml", SamplingNVML)
    assert telemetry.start("cpu", str(tmp_path)) is None            # a CPU run samples nothing
    t0 = time.time()   # before the sampler starts: under load its first samples may come first
    sampler = telemetry.start("cuda", str(tmp_path), interval=0.01)
    deadline = time.monotonic() + 60
    while len(sampler.rows) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    summary = sampler.stop(t0, time.time())   # every row seen so far lies in [t0, now]
    rows = list(csv.DictReader(open(tmp_path / "telemetry-gpu0.csv")))
    assert len(rows) >= 5 and set(rows[0]) == set(telemetry.FIELDS)
    assert summary["samples"] >= 4 and summary["gpus"] == [0]
    assert summary["median_power_w"] == 300.0 and summary["median_sm_clock_mhz"] == 1410
    assert summary["median_utilization_pct"] == 97 and summary["median_memory_used_mib"] == 1024
    assert summary["max_sm_clock_mhz"] == 1980 and summary["energy_j"] > 0
    assert summary["throttle_power_share"] == 1.0


# --- known-harmless lines of C++ libraries, dropped from fd 2 (workloads/known_lines.py) --------
USDT = b"USDT:2026-11-27 14:29:32 11488:11488 SyncActivityProfilerHandler.cpp:39] profiler_start\n"
NO_GPU = b"ERROR:2026-11-27 14:29:32 11488:11488 DeviceProperties.cpp:56] gpuGetDeviceCount failed with code 35\n"
OTHER = st.sampled_from([b"[resnet18] window 1/4  0.3 images/s\n", b"ERROR: a real one\n", b"USDT:", b"ERR",
                         b"progress 50%\r", b"x" * 700, b"\n", USDT[:-1] + b" and more\n", b"E\xff\x00\n"])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(pieces=st.lists(st.sampled_from([USDT, NO_GPU]) | OTHER, max_size=12), cuts=st.lists(st.integers(0, 4000)),
       cpu=st.booleans())
def test_the_filter_drops_exactly_the_known_whole_lines_however_the_bytes_arrive(pieces, cuts, cpu):
    data = b"".join(pieces)
    # the same bytes by lines: a known line is one that starts at a line's start and ends it
    lines = re.split(b"(?<=\n)", data)
    dropped = {USDT, NO_GPU} if cpu else {USDT}
    want = b"".join(line for line in lines if line not in dropped)
    filt = known_lines.Filter(known_lines.patterns(cpu))
    bounds = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    got = b"".join(filt.feed(data[a:b])[0] for a, b in zip(bounds, bounds[1:])) + filt.flush()
    assert got == want


def test_the_filter_passes_a_partial_line_at_once_unless_it_may_become_a_known_one():
    filt = known_lines.Filter(known_lines.patterns(True))
    assert filt.feed(b"progress 10%\r")[0] == b"progress 10%\r"     # progress is never held back
    assert filt.feed(b"progress 20%\n")[0] == b"progress 20%\n"
    assert filt.feed(b"USDT:2026")[0] == b""
    assert filt.feed(b" more of a line we do not know\n")[0] == b"USDT:2026 more of a line we do not know\n"


DROPPED_RUN = """
import os, sys
from dnnbench.workloads import known_lines
before = os.fstat(2)
sys.stderr.write("first\\n")
with known_lines.Dropped(cpu=True):
    sys.stderr.write("second\\n")
    sys.stderr.flush()
    os.write(2, %r)           # as libkineto writes: straight to fd 2, from C
    pid = os.fork()           # a child forked meanwhile keeps the pipe: its lines still pass
    if pid == 0:
        os.write(2, b"child\\n" + %r)
        os._exit(0)
    os.waitpid(pid, 0)
    print("third", file=sys.stderr, flush=True)
    os.write(2, b"no newline yet, ")
after = os.fstat(2)
sys.stderr.write("fourth\\n")
print((before.st_dev, before.st_ino) == (after.st_dev, after.st_ino))
"""


def test_dropped_restores_fd_2_and_keeps_every_other_line_in_order(tmp_path):
    res = subprocess.run([sys.executable, "-c", DROPPED_RUN % (USDT + NO_GPU, NO_GPU + USDT)], capture_output=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout == b"True\n"
    assert res.stderr == b"first\nsecond\nchild\nthird\nno newline yet, fourth\n"
