#!/usr/bin/env bash
# Line coverage of the host side (toolkit/, dnnbench.*) and the container side (workloads/,
# dnnbench.workloads.*) by the test suite. Every Python process of the .venv that the tests
# start with the environment it was given is measured (the CLI as a subprocess, host-runtime
# workloads, Slurm steps on the nodes' own Python): coverage's own .pth hook starts it wherever
# COVERAGE_PROCESS_START is set. Not measured: code run inside a container image (another
# Python; the same workloads code runs on the host runtime, which is), a rank of a multi-rank
# world (it ends with os._exit, past coverage's exit hook), tests that start Python with a
# clean environment.
#
#   bash benchmarks/coverage.sh                  # the whole suite, as scripts/test.sh runs it (streams)
#   bash benchmarks/coverage.sh tests/test_runs_plan.py  # any pytest arguments, in one stream
#
# Prints the per-file report and, for workloads/, the lines no test executed.
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
[ -x "$py" ] || { echo "coverage.sh: run scripts/dev-setup.sh first" >&2; exit 1; }
"$py" -m pip install -q 'coverage>=7.7' 2>&1 | grep -v "is ignored" || true   # 7.7: its own .pth hook
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/coveragerc" <<EOF
[run]
source = $PWD/toolkit, $PWD/workloads
parallel = True
data_file = $work/data/.coverage
sigterm = True
omit = */dnnbench/templates/*
[report]
skip_empty = True
precision = 1
EOF
mkdir -p "$work/data"
export COVERAGE_PROCESS_START="$work/coveragerc"
if [ $# -gt 0 ]; then
    "$py" -m pytest -q -p no:cacheprovider "$@" || echo "coverage.sh: some tests failed; the figures cover what ran"
else
    bash scripts/test.sh || echo "coverage.sh: some tests failed; the figures cover what ran"
fi
"$py" -m coverage combine --rcfile "$work/coveragerc" -q "$work/data"
# DNNBENCH_COVERAGE_OUT=FILE keeps the combined data (coverage json/html/report --data-file FILE)
[ -z "${DNNBENCH_COVERAGE_OUT:-}" ] || cp "$work/data/.coverage" "$DNNBENCH_COVERAGE_OUT"
echo "== host side (dnnbench.*, without workloads)"
"$py" -m coverage report --rcfile "$work/coveragerc" --data-file "$work/data/.coverage" --include 'toolkit/*' \
    | grep -E '^(Name|TOTAL)'
echo "== container side (dnnbench.workloads.*)"
"$py" -m coverage report --rcfile "$work/coveragerc" --data-file "$work/data/.coverage" --include 'workloads/*' \
    --show-missing --sort=cover
