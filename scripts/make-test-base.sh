#!/usr/bin/env bash
# Builds the base image the engine tests and the quickstart use, without any registry:
# debootstrap a minimal Debian 12 (its Python 3.11 matches the cp311 wheels of this machine's
# pip), install torch/torchvision into it with the host's pip, and `docker import` the result.
# Cached: does nothing when the image already exists (pass --force to rebuild).
set -euo pipefail
TAG=${DNNBENCH_TEST_BASE:-dnnbench-testbase:bookworm-torch2.14.1}
TORCH=${DNNBENCH_TEST_TORCH:-torch==2.14.1 torchvision==0.29.1}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { printf '[make-test-base] %s\n' "$*"; }

if [ "${1:-}" != "--force" ] && docker image inspect "$TAG" >/dev/null 2>&1; then
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
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
log "docker import -> $TAG"
tar -C "$root" -c . | docker import \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV LANG=C.UTF-8' \
  -c 'CMD ["python3"]' - "$TAG" >/dev/null
docker run --rm "$TAG" python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)'
log "done: $TAG"
