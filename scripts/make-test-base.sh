#!/usr/bin/env bash
# Builds the base image the engine tests and the quickstart use, without any registry:
# debootstrap a minimal Debian 12 (its Python 3.11 matches the cp311 wheels of this machine's
# pip), install torch/torchvision into it with the host's pip, and `docker import` the result.
# Cached: does nothing when the image made by this script as it is now exists (--force: rebuild).
set -euo pipefail
TAG=${DNNBENCH_TEST_BASE:-$(cat "$(dirname "$0")/test-base.tag")}   # one tag for every user of the base
TORCH=${DNNBENCH_TEST_TORCH:-torch==2.14.1 torchvision==0.29.1}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { printf '[make-test-base] %s\n' "$*"; }

# the image is this script's and these packages' own: a change to either makes it anew
recipe=$( (cat "$0"; echo "$TORCH") | sha256sum | cut -c1-16)
if [ "${1:-}" != "--force" ] && \
   [ "$(docker image inspect -f '{{ index .Config.Labels "io.dnnbench.test-base" }}' "$TAG" 2>/dev/null)" = "$recipe" ]; then
  log "$TAG exists (cached)"; exit 0
fi
[ "$(id -u)" = 0 ] || { echo "make-test-base: run as root (debootstrap)" >&2; exit 1; }
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }

work=$(mktemp -d /var/tmp/dnnbench-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
log "debootstrap bookworm (minbase + python3) into $root"
debootstrap --variant=minbase --include=python3,python3-pip,ca-certificates,procps \
  bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
site="$root/usr/local/lib/python3.11/dist-packages"
log "pip install $TORCH into the image (host pip, cp311 wheels)"
python3 -m pip install -q --no-compile --target "$site" $TORCH 2>&1 | grep -v 'is ignored' || true
python3 - "$site" <<'PY'
import sys, pathlib
site = pathlib.Path(sys.argv[1])
assert (site / "torch").is_dir() and (site / "torchvision").is_dir(), "torch/torchvision missing from the image"
PY
# A CPU-only base: leave out what only a GPU run loads, and loads on first use (cuDNN's engine
# libraries, triton's GPU compiler, CUDA's multi-GPU solver, profiler and alternate NVRTC
# libraries): about 2 GB of the wheel's 5.8 GB, and the .sif and image exports of every test run
# with it. What `import torch` links (libtorch_cuda's NEEDED list) stays, so torch imports as
# shipped, and so does cuDNN's graph library: cudnn.version(), which a result records, loads it.
rm -rf "$site/triton" "$site"/nvidia/cudnn/lib/libcudnn_{adv,cnn,engines_*,ext,heuristic,ops}.so.* \
  "$site"/nvidia/cu*/lib/libcusolverMg.so.* \
  "$site"/nvidia/cu*/lib/libnvrtc*.alt.so.* "$site"/nvidia/cu*/lib/libnvperf_*.so "$site"/nvidia/cu*/lib/*.a
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
log "docker import -> $TAG"
tar -C "$root" -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV LANG=C.UTF-8' \
  -c 'CMD ["python3"]' -c "LABEL io.dnnbench.test-base=$recipe" - "$TAG" >/dev/null
docker run --rm "$TAG" python3 -c 'import torch, torchvision
m = torchvision.models.resnet18(); m(torch.randn(1, 3, 64, 64)).sum().backward()   # trains on the CPU
print("torch", torch.__version__, "torchvision", torchvision.__version__, "cudnn", torch.backends.cudnn.version())'
log "done: $TAG"
