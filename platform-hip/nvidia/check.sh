#!/usr/bin/env bash
# On a GPU machine: builds the shim and runs what `carry.sh` gathered — the
# scenario suite, the platform tests and the `device_vs_hip` bench — with
# logs in LOG_DIR (default: ./logs next to this script).
#
#   check.sh [BENCH_RUNS]     (default 1: how many times the bench runs)
#
# Exits non-zero if the shim build, a test or the bench failed. The
# two-device scenario and test run when the machine has two GPUs and say
# SKIPPED otherwise.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$here/../bin"
runs="${1:-1}"
for b in hip_suite platform_tests device_vs_hip; do
    if [[ ! -x "$bin/$b" ]]; then
        echo "check.sh: no $bin/$b: run this copy of check.sh from a folder carry.sh made" \
            "(carry.sh DIR, then DIR/nvidia/check.sh)" >&2
        exit 2
    fi
done
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
    echo "check.sh: BENCH_RUNS must be a positive whole number, not '$runs'" >&2
    exit 2
fi
export LOG_DIR="${LOG_DIR:-$here/logs}"
mkdir -p "$LOG_DIR"

benches=()
for i in $(seq 1 "$runs"); do
    # Same binary under another name per run, so each run has its own log.
    cp "$bin/device_vs_hip" "$bin/device_vs_hip_run$i"
    benches+=("$bin/device_vs_hip_run$i")
done
RUN_ARGS="--test-threads=1" "$here/run.sh" "$bin/hip_suite" "$bin/platform_tests" "${benches[@]}"
status=$?
echo "== summary"
grep -h -E '^hip: |^test result:|target <=|^  Device: (worst|two)|^bench failed|FAILED' \
    "$LOG_DIR"/hip_suite.log "$LOG_DIR"/platform_tests.log "$LOG_DIR"/device_vs_hip_run*.log
exit $status
