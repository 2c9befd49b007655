"""Profiling: the wrapping (`--profile`, the container-side launcher), the parsers on outputs in
the documented formats (shared/reference/profiling.md; no GPU here to capture real ncu/nsys
output), a real torch.profiler trace from a CPU run, cool-down, and `dnnbench profile show`."""
from __future__ import annotations

import json
import re
import sys

import pytest

from dnnbench.results import profile_parsers as profiles
from dnnbench.workloads import profile as launcher
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
    summary = profiles.ncu_summary(text)
    assert summary["launches"] == 3 and summary["weighted_by"] == "gpc__cycles_elapsed.max"
    assert summary["utilization_pct"] == pytest.approx(NCU_EXPECTED)
    assert [k["name"] for k in summary["kernels"]][0] == "sm80_xmma_fprop_implicit_gemm_f16f16"
    assert summary["kernels"][0]["time_pct"] == pytest.approx(60.0)


def test_ncu_volta_and_hopper_metric_names_feed_the_same_fields():
    volta = (f'{NCU_IDS},"gpc__cycles_elapsed.max","sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_elapsed",'
             '"sm__inst_executed_pipe_fp16.avg.pct_of_peak_sustained_elapsed"\n'
             '"0","1","p","h","volta_h884gemm","1","7","(1, 1, 1)","(1, 1, 1)","0","7.0","2,000","50","4"\n')
    assert profiles.ncu_summary(volta)["utilization_pct"] == {"tensor": 50.0, "fp16": 4.0}
    hopper = (f'{NCU_IDS},"gpc__cycles_elapsed.max","sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed",'
              '"sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_elapsed"\n'
              '"0","1","p","h","sm90_xmma_gemm_f16f16_wgmma","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","1,000","70","0"\n'
              '"1","1","p","h","cudnn_hmma_conv","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","1,000","0","30"\n')
    assert profiles.ncu_summary(hopper)["utilization_pct"] == {"tensor": 50.0}


def test_ncu_output_without_kernels_says_why():
    with pytest.raises(profiles.ProfileFormatError, match="no header"):
        profiles.ncu_summary("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM\n")
    with pytest.raises(profiles.ProfileFormatError, match="window"):
        profiles.ncu_summary(NCU_RAW.split('"0","4242"')[0])


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
    assert ncu[:9] == ["ncu", "--target-processes", "all", "--profile-from-start", "off", "--csv", "--page", "raw",
                       "--print-units"] and ncu[-4:] == cmd and "/results/profile/ncu.csv" in ncu
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
    out = profiles.nsys_summary(NSYS_KERN_SUM, NSYS_TRACE, window_s=None)
    assert [k["instances"] for k in out["kernels"]] == [2, 3] and out["kernels"][0]["time_pct"] == 62.5
    assert "FillFunctor<float>" in out["kernels"][1]["name"]          # quoted names with commas
    assert out["busy_pct"] == pytest.approx(100 * 5000 / 9000)           # first kernel start to last end
    timed = profiles.nsys_summary(NSYS_KERN_SUM, NSYS_TRACE, window_s=20e-6)
    assert timed["busy_pct"] == pytest.approx(25.0) and timed["busy_of"] == "timed window"
    old = profiles.nsys_summary(NSYS_OLD_KERN_SUM)                       # CUDA 11.x images: gpukernsum
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
    out = profiles.nvprof_summary(text)
    assert out["kernel_names"] == 2
    assert out["kernels"][0]["total_ns"] == pytest.approx(143e6) and out["kernels"][0]["instances"] == 100


def test_rocprof_stats():
    text = ('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
            '"Cijk_Ailk_Bljk_HHS_BH_MT128x128x32",120,9000000,75000,75.0\n'
            '"void at::native::elementwise_kernel<128, 2>(int, T1)",400,3000000,7500,25.0\n')
    out = profiles.rocprof_summary(text)
    assert out["kernels"][0]["name"].startswith("Cijk") and out["kernels"][1]["instances"] == 400


# --- a real torch.profiler run on the CPU ------------------------------------------------

def test_torch_profile_of_a_real_run_and_profile_show(tmp_path):
    dnnbench("run", "resnet18", "--runtime", "host", "--profile", "torch", "--batch-size", "2", "--number", "2",
             "--repeat", "1", "--warmup", "1", "--results", tmp_path, "--run-id", "t", "--quiet", check=0)
    data = json.loads((tmp_path / "t" / "result.json").read_text())
    top = data["profile"]["torch"]["kernels"]
    assert data["profile"]["torch"]["of"] == "CPU ops (self time)"
    # Self times from the Chrome trace agree with torch's own key_averages() table of the same run.
    table = (tmp_path / "t" / "torch-ops.txt").read_text().splitlines()
    first = next(line for line in table if line.strip().startswith("aten::"))
    name, self_ms = first.split()[0], float(re.findall(r"([\d.]+)ms", first)[0])
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
    assert "weighted by gpc__cycles_elapsed.max" in out and "36.00" in out      # tensor pipe
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
    (["--profile", "vtune"], ["--profile 'vtune'"]),
    (["--profile", "ncu"], ["add --gpus"]),
    (["--profile", "nsys", "--gpus", "0", "--base", "rocm-6.0.2"], ["does not carry nsys"]),
    (["--profile", "rocprof", "--gpus", "0", "--image", "img"], ["needs an AMD image", "nvidia"]),
])
def test_profile_mistakes(args, fragments, tmp_path):
    one_line_error(dnnbench("run", "resnet50", "--dry-run", "--results", tmp_path, *args), *fragments)


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


def test_launcher_module_runs_on_python_3_7():
    # it is imported inside old images before anything else: stdlib only at import time
    src = open(launcher.__file__).read()
    assert "from __future__ import annotations" not in src and sys.version_info >= (3, 7)


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
            return {"cur_clk": 2100} if kind == "gfx" else {"clk": 1300}

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
                   "temperature_c": 61, "utilization_pct": 97, "memory_used_mib": 30000, "throttle_reasons": None}


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
