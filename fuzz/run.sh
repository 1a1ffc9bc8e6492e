#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each, one target at
# a time in one process, starting from the committed seed corpus.
#
#   fuzz/run.sh [SECONDS] [TARGET...]      (default: 600 seconds, all targets)
#
# New inputs go to fuzz/work/<target>/ (not committed); crashes to
# fuzz/artifacts/<target>/. A summary line per target (executions, exec/s,
# corpus size, crashes) is printed at the end and kept in fuzz/logs/.
# Installs cargo-fuzz with the nightly toolchain if it is missing.
set -euo pipefail

secs="${1:-600}"
shift || true
cd "$(dirname "$0")"

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz not found: installing it (cargo +nightly install cargo-fuzz)"
    cargo +nightly install cargo-fuzz
fi

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# Optimized, with debug assertions and overflow checks (the core's
# debug_asserts are part of the oracle). No sanitizer: the code under test is
# `#![forbid(unsafe_code)]`, and the oracle checks what a sanitizer would not.
flags=(-O -a -s none)
cargo +nightly fuzz build "${flags[@]}"

mkdir -p work logs
summary=()
status=0
for t in "${targets[@]}"; do
    mkdir -p "work/$t" "corpus/$t"
    log="logs/$t.log"
    echo "== $t: ${secs}s"
    set +e
    cargo +nightly fuzz run "${flags[@]}" "$t" "work/$t" "corpus/$t" -- \
        -max_total_time="$secs" -print_final_stats=1 -timeout=20 -rss_limit_mb=4096 \
        >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    size=$(find "work/$t" "corpus/$t" -type f | wc -l)
    crashes=$(find "artifacts/$t" -type f 2>/dev/null | wc -l)
    line="$t: rc=$rc executions=${execs:-?} exec/s=${rate:-?} corpus_files=$size crashes=$crashes"
    echo "$line"
    summary+=("$line")
    if [ "$rc" -ne 0 ]; then
        status=1
        grep -m1 -A12 'panicked at\|ERROR: libFuzzer' "$log" || true
    fi
done
echo
echo "== summary (${secs}s per target)"
printf '%s\n' "${summary[@]}" | tee "logs/summary.txt"
exit "$status"
