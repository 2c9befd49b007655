#!/usr/bin/env bash
# The checks only a GPU shows, in one command, for a GPU machine without a container engine
# (the lent device has PyTorch and ncu, no docker and no PyPI): harness overhead and throughput,
# a workload's telemetry, and ncu / nsys runs through the container-side launcher. Only the
# container side (workloads/: stdlib + torch) is needed there; the outputs are read back on the
# host with `dnnbench profile show OUT/<run>` and recorded in BENCHMARKS.md.
#
# Usage (repository root): OUT=/tmp/gpu-check bash benchmarks/gpu_check.sh
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
echo "outputs in $OUT; on the host: dnnbench profile show $OUT/ncu (and nsys, torch, resnet50)"
