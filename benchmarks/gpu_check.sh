#!/usr/bin/env bash
# The checks only a GPU shows, in one command, for a GPU machine without a container engine
# (the lent device has PyTorch and ncu, no docker and no PyPI): harness overhead and throughput,
# a workload's telemetry, and ncu / nsys runs through the container-side launcher. Only the
# container side (workloads/: stdlib + torch) is needed there; the outputs are read back on the
# host with `dnnbench profile show OUT/<run>` and recorded in BENCHMARKS.md.
#
# Usage (repository root): OUT=/tmp/gpu-check bash benchmarks/gpu_check.sh
# The last part measures real-data/synthetic throughput per --loader (cpu, gpu, dali where present).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-check}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
shim=$(mktemp -d)                 # `dnnbench.workloads` importable without installing dnnbench
mkdir "$shim/dnnbench" && touch "$shim/dnnbench/__init__.py" && ln -s "$PWD/workloads" "$shim/dnnbench/workloads"
export PYTHONPATH="$shim${PYTHONPATH:+:$PYTHONPATH}"
step() { printf '\n== %s\n' "$*" | tee -a "$OUT/summary.txt"; }

step "GPU"
nvidia-smi --query-gpu=name,driver_version,compute_cap,power.limit --format=csv | tee -a "$OUT/summary.txt"
$PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' | tee -a "$OUT/summary.txt"
$PY -c 'import pynvml' 2>/dev/null && echo "nvidia-ml-py: yes" || echo "nvidia-ml-py: no (telemetry off)" | tee -a "$OUT/summary.txt"

step "harness overhead, resnet50 fp16 channels-last batch 256 (goal >= 3000 img/s on H100, overhead < 1%)"
$PY benchmarks/harness_overhead.py --workload resnet50 --device cuda --amp fp16 --channels-last --batch-size 256 \
  2>&1 | tee -a "$OUT/summary.txt"

step "resnet50 run with telemetry and a cool-down"
$PY -m dnnbench.workloads resnet50 --device cuda --amp fp16 --channels-last --batch-size 256 --number 20 \
  --repeat 5 --cool-down 120 --results "$OUT/resnet50" --run-id resnet50 2>&1 | tail -3 | tee -a "$OUT/summary.txt"

step "ncu over 2 iterations of resnet50 fp16 (counters, kernel replay)"
$PY -m dnnbench.workloads.profile ncu "$OUT/ncu/profile" -- $PY -m dnnbench.workloads resnet50 --device cuda \
  --amp fp16 --batch-size 64 --start-iter 5 --stop-iter 7 --profile-window cuda --results "$OUT/ncu" --run-id ncu \
  2>&1 | tail -5 | tee -a "$OUT/summary.txt"

step "nsys over 10 iterations (may be missing on the machine)"
$PY -m dnnbench.workloads.profile nsys "$OUT/nsys/profile" -- $PY -m dnnbench.workloads resnet50 --device cuda \
  --amp fp16 --batch-size 64 --start-iter 5 --stop-iter 15 --profile-window cuda --results "$OUT/nsys" --run-id nsys \
  2>&1 | tail -5 | tee -a "$OUT/summary.txt"

step "torch.profiler over 5 iterations"
$PY -m dnnbench.workloads resnet50 --device cuda --amp fp16 --batch-size 64 --start-iter 5 --stop-iter 10 \
  --profile-window torch --results "$OUT/torch" --run-id torch 2>&1 | tail -2 | tee -a "$OUT/summary.txt"


# --- real data at GPU speed (issue: >= 90 % of synthetic for resnet50 and inception_v3, AMP, NHWC)
step "fake ImageNet: 4000 photo-sized JPEGs (500x375, ~ImageNet's typical size)"
FAKE=${FAKE:-$OUT/fake-imagenet}
$PY -c "from dnnbench.workloads import data; data.fake_imagenet('$FAKE', images=4000, classes=100, size=(500, 375))"
$PY -c 'import nvidia.dali' 2>/dev/null && DALI=dali || DALI=
echo "DALI: ${DALI:-absent (only --loader gpu measured)}" | tee -a "$OUT/summary.txt"

step "decoded images/s per loader backend (the input ceiling)"
$PY benchmarks/loader_throughput.py --device cuda --data "$FAKE" --loaders "cpu,gpu${DALI:+,dali}" --workers 4,8,16 \
  --batch-size 256 2>&1 | tee -a "$OUT/summary.txt"

ratio() {   # MODEL BATCH LOADER: synthetic and real-data runs, their ratio and the real run's verdict
  local model=$1 bs=$2 loader=$3 common="--device cuda --amp fp16 --channels-last --batch-size $2 --warmup 10 --number 20 --repeat 5"
  [ -f "$OUT/real/$model-synthetic/result.json" ] || $PY -m dnnbench.workloads "$model" $common --synthetic \
    --results "$OUT/real/$model-synthetic" --run-id "$model-synthetic" 2>&1 | tail -1
  $PY -m dnnbench.workloads "$model" $common --data "$FAKE" --loader "$loader" --workers 8 \
    --results "$OUT/real/$model-$loader" --run-id "$model-$loader" 2>&1 | tail -1
  $PY - "$OUT/real/$model-synthetic/result.json" "$OUT/real/$model-$loader/result.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
syn, real = (json.load(open(p)) for p in sys.argv[1:3])
s, r = syn["throughput"]["total"]["value"], real["throughput"]["total"]["value"]
v = real.get("verdict") or {}
print("%-13s loader %-4s synthetic %7.1f img/s  real %7.1f img/s  ratio %5.1f %% (goal >= 90 %%)  %s: %s" % (
    real["workload"], (real.get("loader") or {}).get("used"), s or 0, r or 0, 100.0 * (r or 0) / (s or 1),
    v.get("label"), "; ".join(v.get("evidence") or [])))
PY
}
step "real/synthetic, resnet50 fp16 channels-last batch 256"
for l in cpu gpu $DALI; do ratio resnet50 256 $l; done
step "real/synthetic, inception_v3 fp16 channels-last batch 128"
for l in cpu gpu $DALI; do ratio inception_v3 128 $l; done
echo "outputs in $OUT; on the host: dnnbench profile show $OUT/ncu (and nsys, torch, resnet50); dnnbench report $OUT/real"
