#!/usr/bin/env bash
# The test command (README, CI): set up what is missing, then run the whole suite, engine
# tests included, against the real Docker engine and Apptainer. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# Root is needed (apt, dockerd, debootstrap): a user with sudo gets it through sudo.
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "$(basename "$0"): run as root (sudo is not installed)" >&2; exit 1; }
  exec sudo -E bash "$0" "$@"
fi
bash scripts/dev-setup.sh
export PATH="$PWD/.venv/bin:$PATH"   # hadolint, vermin, dnnbench from the venv
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
