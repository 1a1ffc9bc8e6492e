#!/usr/bin/env bash
# Builds the shim and the driver cost calibration (calibrate.c) against it,
# and runs it on the current GPU.
#
#   calibrate.sh [--quick]
#
# Environment: SHIM_DIR (default /tmp/hip-on-cuda), CUDA_HOME (as build.sh),
# BUILD_ONLY=1 to compile without running (to check the sources where there
# is no GPU).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
shim="${SHIM_DIR:-/tmp/hip-on-cuda}"
"$here/build.sh" "$shim" >&2

if [[ -z "${CUDA_HOME:-}" ]]; then
    if command -v nvcc >/dev/null 2>&1; then
        CUDA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
    else
        CUDA_HOME=/usr/local/cuda
    fi
fi
inc="$CUDA_HOME/include"
[[ -e "$inc/cuda.h" ]] || inc="$CUDA_HOME/targets/x86_64-linux/include"

"${CC:-gcc}" -std=c11 -O2 -Wall -Wextra ${WERROR:+-Werror} -I"$inc" -I"$here" \
    -o "$shim/calibrate" "$here/calibrate.c" \
    -L"$shim/lib" -lamdhip64 -Wl,-rpath,"$shim/lib"
echo "calibrate.sh: built $shim/calibrate" >&2
[[ "${BUILD_ONLY:-0}" == 1 ]] && exit 0
"$shim/calibrate" "$@"
