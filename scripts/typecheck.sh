#!/usr/bin/env bash
# The host side through mypy (settings: pyproject's [tool.mypy]). The repository keeps the host
# side in toolkit/ and the container side in workloads/, installed together as `dnnbench` (an
# editable install that mypy cannot follow): this lays the package out as it is installed,
# in links under a temporary folder, and checks it there.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
farm=$(mktemp -d)
trap 'rm -rf "$farm"' EXIT
mkdir "$farm/dnnbench"
for f in toolkit/*; do ln -s "$root/$f" "$farm/dnnbench/"; done
ln -s "$root/workloads" "$farm/dnnbench/workloads"
cd "$farm"
"$root/.venv/bin/python" -m mypy --config-file "$root/pyproject.toml" -p dnnbench "$@" | sed "s|^dnnbench/workloads/|workloads/|; s|^dnnbench/|toolkit/|"
