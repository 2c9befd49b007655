#!/usr/bin/env bash
# A real benchmark end to end on a fresh Debian 12 machine (as root, no GPU needed):
# engines + .venv + a locally built base, `dnnbench build` of its image, a fake ImageNet of
# real JPEGs, `dnnbench run resnet18` on it in a container, and the result table.
set -euo pipefail
cd "$(dirname "$0")/.."
# Root is needed (apt, dockerd, debootstrap): a user with sudo gets it through sudo.
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "$(basename "$0"): run as root (sudo is not installed)" >&2; exit 1; }
  exec sudo -E bash "$0" "$@"
fi
bash scripts/dev-setup.sh
export PATH="$PWD/.venv/bin:$PATH"
BASE=local:${DNNBENCH_TEST_BASE:-$(cat scripts/test-base.tag)}
DATA=${DNNBENCH_DEMO_DATA:-/var/tmp/dnnbench-fake-imagenet}
set -x
dnnbench build --base "$BASE"
dnnbench data fake imagenet --to "$DATA" --images 512 --classes 8 --size 160
dnnbench run resnet18 --base "$BASE" --data "$DATA" --batch-size 16 --workers 1 --number 4 --repeat 3 --warmup 2
