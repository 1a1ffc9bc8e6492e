#!/usr/bin/env bash
# Builds, where Rust is, everything a GPU machine without Rust needs to run
# the HIP checks, and gathers it into one folder:
#
#   carry.sh DIR
#
# DIR/bin/     hip_suite (the scenario suite), platform_tests (the platform
#              tests), device_vs_hip (the bench): release builds, no debug
#              info, stripped (device_vs_hip keeps its symbols, for perf)
# DIR/nvidia/  the HIP-on-CUDA shim's sources and scripts (run.sh, check.sh)
#
# Copy DIR to the GPU machine and run `DIR/nvidia/check.sh` there.
set -euo pipefail

dir="${1:?usage: carry.sh DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mkdir -p "$dir/bin" "$dir/nvidia"
cd "$root"

# The path cargo prints after "Executable" for a test or bench target.
executable() { grep -o 'target/release/deps/[A-Za-z0-9_-]*' | tail -n 1; }

suite="$(cargo test -p streamcore-tests --test hip --release --no-run 2>&1 | executable)"
tests="$(cargo test -p streamcore-hip --test platform --release --no-run 2>&1 | executable)"
bench="$(cargo bench -p streamcore-hip --bench device_vs_hip --no-run 2>&1 | executable)"
for f in "$suite" "$tests" "$bench"; do
    [[ -x "$f" ]] || { echo "carry.sh: build failed (no executable '$f')" >&2; exit 1; }
done
install -m 755 "$suite" "$dir/bin/hip_suite"
install -m 755 "$tests" "$dir/bin/platform_tests"
install -m 755 "$bench" "$dir/bin/device_vs_hip"
strip "$dir/bin/hip_suite" "$dir/bin/platform_tests"
cp "$here"/*.c "$here"/*.h "$here"/*.sh "$here/symbols.txt" "$dir/nvidia/"
du -sh "$dir"
