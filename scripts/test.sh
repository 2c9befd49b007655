#!/usr/bin/env bash
# The test command (README, CI): set up what is missing, then run the whole suite, engine
# tests included, against the real Docker engine and Apptainer. Extra arguments go to pytest.
# With DNNBENCH_TEST_BUSY=1 the tests marked `signals` (waits on a signal, a line or a timeout)
# then run a second time beside a CPU hog, one busy process per core: the check that they hold
# on a busy machine (CI itself is run beside CPU hogs, so it is not repeated there).
set -euo pipefail
. "$(dirname "$0")/as-root.sh" "$@"
cd "$(dirname "$0")/.."
bash scripts/dev-setup.sh
export PATH="$PWD/.venv/bin:$PATH"   # hadolint, vermin, dnnbench from the venv
if [ $# -gt 0 ]; then
    exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
fi
# Every phase runs, whatever an earlier one did; the failures of all of them are listed at the end.
failed=()
phase() {   # phase NAME COMMAND...: run it, remember a failure, go on
    local name=$1; shift
    echo "== $name"
    if "$@"; then echo "== $name: passed"; else failed+=("$name (exit $?)"); echo "== $name: FAILED"; fi
}

# lint and mypy run beside the tests (a minute of CPU that no test waits for); their output is
# printed after the streams'
checks=$(mktemp -d /tmp/dnnbench-checks.XXXXXX)
( phase "lint (ruff)" .venv/bin/ruff check .
  phase "types (mypy, the host side)" bash scripts/typecheck.sh
  printf '%s\n' "${failed[@]}" >"$checks/failed" ) >"$checks/log" 2>&1 &
checks_pid=$!
# The tests in six streams at once, each one test at a time, selected by the marks that
# tests/conftest.py sets (and, for the short tests, by module name). The Slurm and engine
# streams mostly wait on a job or a daemon, so the training and the short tests run beside them;
# on a busy machine several streams also get a fairer share of the cores. Each stream has its own
# folder (--basetemp); the base, images and .sif they share are made once, under a lock. Each
# stream's output is printed whole once all have ended. An entry: NAME:MARKS[:FILES].
# The short tests are split by the package their file is named after (tests/test_<package>_*.py):
# short-a campaigns, cli, containers, datasets, exports, history; short-b base, profilers,
# project, reframe, refs, results, runs, workloads (two complementary first letters, so a file
# is always in one of them; about 790 short tests each).
SHORT="not training and not engine and not slurm_stream"
STREAMS=("slurm:slurm_stream" "rounds:rounds_stream"
         "engine:engine and not slurm_stream and not rounds_stream"
         "training:training and not engine and not slurm_stream"
         "short-a:$SHORT:tests/test_[c-h]*.py" "short-b:$SHORT:tests/test_[abi-z]*.py")
streams() {
    local dir pids=() entry name marks files began i=0
    dir=$(mktemp -d /tmp/dnnbench-tests.XXXXXX)
    began=$SECONDS
    for entry in "${STREAMS[@]}"; do
        IFS=: read -r name marks files <<<"$entry"
        # shellcheck disable=SC2086  # the files are a glob
        .venv/bin/python -m pytest -q -p no:cacheprovider --basetemp="$dir/$name" -m "$marks" \
            --durations=15 ${files:-tests} >"$dir/$name.log" 2>&1 &   # the slowest, to watch CI time
        pids+=("$!")
    done
    trap 'kill "${pids[@]}" "$checks_pid" 2>/dev/null; exit 130' INT TERM
    for entry in "${STREAMS[@]}"; do
        IFS=: read -r name marks files <<<"$entry"
        echo "== tests, $name stream (-m '$marks' ${files:-tests})"
        if wait "${pids[$i]}"; then
            echo "== tests, $name stream: passed"
        else
            failed+=("tests, $name stream (exit $?)"); echo "== tests, $name stream: FAILED"
        fi
        cat "$dir/$name.log"
        i=$((i + 1))
    done
    echo "== tests: all streams ended after $((SECONDS - began)) s"
    trap - INT TERM
    rm -rf "$dir"
}
streams
wait "$checks_pid" || true
cat "$checks/log"
while IFS= read -r line; do [ -n "$line" ] && failed+=("$line"); done <"$checks/failed"
rm -rf "$checks"

if [ "${DNNBENCH_TEST_BUSY:-0}" = 1 ]; then
hogs=()
stop_hogs() { if [ ${#hogs[@]} -gt 0 ]; then kill "${hogs[@]}" 2>/dev/null || true; fi; hogs=(); }
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT TERM
for _ in $(seq "$(nproc)"); do
    python3 -c 'while True: pass' &
    hogs+=("$!")
done
echo "signal tests again, beside ${#hogs[@]} busy processes"
phase "signal tests beside a CPU hog" .venv/bin/python -m pytest -q -p no:cacheprovider -m signals
stop_hogs
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED phases:"
    printf '  %s\n' "${failed[@]}"
    exit 1
fi
echo "all phases passed"
