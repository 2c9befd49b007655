#!/usr/bin/env bash
# The test command (README, CI): set up what is missing, then run the whole suite, engine
# tests included, against the real Docker engine and Apptainer. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/dev-setup.sh
export PATH="$PWD/.venv/bin:$PATH"   # hadolint, vermin, dnnbench from the venv
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
