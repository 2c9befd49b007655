#!/usr/bin/env bash
# Everything a fresh Debian 12 machine needs to run dnnbench and its tests, as root:
# the engines (setup-engines.sh), a Slurm of 3 namespace nodes (setup-slurm.sh), a virtualenv .venv with dnnbench (+ torch, test tools),
# and the locally built base image the engine tests and the quickstart share.
# Idempotent and cached: a second run takes seconds.
set -euo pipefail
. "$(dirname "$0")/as-root.sh" "$@"
cd "$(dirname "$0")/.."
log() { printf '[dev-setup] %s\n' "$*"; }

bash scripts/setup-engines.sh
# the test base (minutes on a fresh machine: debootstrap, torch's wheels, docker import) is made
# while Slurm, the packages and the venv are set up; a failure here waits for it, never orphans it
bash scripts/make-test-base.sh &
base_pid=$!
trap 'wait' EXIT
# the tests' cluster: 3 nodes in namespaces; where namespaces are not allowed (a container), a
# one-node Slurm, so the quickstart still runs (the multi-node tests then say why they cannot)
bash scripts/setup-slurm.sh --nodes 3 \
  || { log "no namespace nodes here: a one-node Slurm instead"; bash scripts/setup-slurm.sh; }
# Debian's headless Chromium: the HTML report's test opens the page in a real browser;
# tmux: the screens are read in a real 80x24 terminal
missing=()
command -v chromium >/dev/null || missing+=(chromium)
# the history tests start a throwaway PostgreSQL 15 cluster (tests/postgres.py)
[ -x /usr/lib/postgresql/15/bin/initdb ] || missing+=(postgresql)
command -v tmux >/dev/null || missing+=(tmux)
# the exports' tests push to a real Pushgateway and have Prometheus scrape it, on loopback
command -v prometheus-pushgateway >/dev/null || missing+=(prometheus-pushgateway)
command -v prometheus >/dev/null || missing+=(prometheus)
# `dnnbench k8s`'s manifests are checked with `kubectl create --dry-run=client` (no cluster):
# Debian 12 packages kubectl as kubernetes-client
command -v kubectl >/dev/null || missing+=(kubernetes-client)
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  if ! "$PY" -m venv --help >/dev/null 2>&1 || ! "$PY" -c 'import ensurepip' 2>/dev/null; then
    apt-get install -y -qq python3-venv >/dev/null
  fi
  log "creating .venv ($("$PY" --version))"
  "$PY" -m venv .venv
fi
TORCH=${DNNBENCH_TEST_TORCH:-torch==2.14.1 torchvision==0.29.1}
log "installing $TORCH and dnnbench[torch,test,telemetry,dali] into .venv"
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v 'is ignored' || true
# PYTHONWARNINGS: setuptools' notes on editable installs are for package authors, not for this set-up
PYTHONWARNINGS=ignore .venv/bin/python -m pip install -q $TORCH -e '.[torch,test,telemetry,dali]' 2>&1 | grep -v 'is ignored' || true
.venv/bin/python -c 'import dnnbench, torch, torchvision; print("[dev-setup] dnnbench", dnnbench.__version__, "torch", torch.__version__)'
wait "$base_pid" || { log "the test base was not made (scripts/make-test-base.sh, above)"; exit 1; }
