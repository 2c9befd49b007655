#!/usr/bin/env bash
# A real benchmark end to end on a fresh Debian 12 machine (as root, no GPU needed):
# engines + .venv + a locally built base, `dnnbench build` of its image, a fake ImageNet of
# real JPEGs, `dnnbench run resnet18` on it in a container, and the result table.
set -euo pipefail
. "$(dirname "$0")/as-root.sh" "$@"
cd "$(dirname "$0")/.."
bash scripts/dev-setup.sh
export PATH="$PWD/.venv/bin:$PATH"
BASE=local:${DNNBENCH_TEST_BASE:-$(cat scripts/test-base.tag)}
DATA=${DNNBENCH_DEMO_DATA:-/var/tmp/dnnbench-fake-imagenet}
set -x
dnnbench build --base "$BASE"
dnnbench data fake imagenet --to "$DATA" --images 512 --classes 8 --size 160
dnnbench run resnet18 --base "$BASE" --data "$DATA" --batch-size 16 --workers 1 --number 4 --repeat 3 --warmup 2
