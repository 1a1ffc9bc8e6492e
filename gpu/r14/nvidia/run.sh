#!/usr/bin/env bash
# Builds the HIP-on-CUDA shim, points ROCM_PATH at it, and runs the given
# (prebuilt) test or bench binaries against it.
#
#   run.sh BIN...
#
# Environment:
#   RUN_ARGS   arguments for every binary (default: --test-threads=1; use
#              --bench for criterion benches)
#   SHIM_DIR   where to build the shim (default: /tmp/hip-on-cuda)
#   LOG_DIR    where logs are written (build.log, <binary>.log; default ./logs)
#
# The shim's folder is reached only through ROCM_PATH, never through
# LD_LIBRARY_PATH, so a child process given an empty ROCM_PATH really finds
# no runtime. The CUDA library folder is put on LD_LIBRARY_PATH so NVRTC
# finds its builtins library.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
shim="${SHIM_DIR:-/tmp/hip-on-cuda}"
logs="${LOG_DIR:-$here/logs}"
mkdir -p "$logs"
read -r -a args <<<"${RUN_ARGS:---test-threads=1}"

{
    echo "== device"
    nvidia-smi -L 2>&1 || true
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
    (command -v nvcc >/dev/null && nvcc --version | tail -n 2) || echo "no nvcc on PATH"
    gcc --version | head -n 1
    echo "== build"
} 2>&1 | tee "$logs/build.log"
if ! "$here/build.sh" "$shim" 2>&1 | tee -a "$logs/build.log"; then
    echo "run.sh: shim build failed" | tee -a "$logs/build.log"
    exit 1
fi

# shellcheck source=env.sh
. "$here/env.sh"
use_shim "$shim"

status=0
for bin in "$@"; do
    name="$(basename "$bin")"
    echo "== $name ${args[*]}" | tee "$logs/$name.log"
    start=$(date +%s.%N)
    "$bin" "${args[@]}" 2>&1 | tee -a "$logs/$name.log"
    rc=${PIPESTATUS[0]}
    end=$(date +%s.%N)
    echo "== $name exit $rc in $(awk "BEGIN {printf \"%.1f\", $end - $start}") s" | tee -a "$logs/$name.log"
    [[ $rc -eq 0 ]] || status=1
done
exit $status
