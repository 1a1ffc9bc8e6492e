#!/usr/bin/env bash
# Builds the HIP-on-CUDA shim where there is no GPU and no CUDA toolkit,
# warnings as errors, compiles the driver cost calibration against it, and
# drives its fault switch (`switch_check.c`: a
# faulted entry point answers before it reaches CUDA, so no driver is
# needed). CUDA's headers and its runtime and NVRTC libraries come from
# NVIDIA's CUDA 12.9 wheels on PyPI (~130 MB, downloaded once into WORK).
# The GPU machines run CUDA 13, whose headers the shim also builds against
# (`build.sh`); this catches a shim that no longer compiles before a GPU is
# spent on it.
#
#   build_check.sh [WORK]      (default: target/shim-check at the repository root)
#
# Needs python3 with pip, unzip and gcc. Exit status 0 when the shim built
# and the switch check passed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${1:-$root/target/shim-check}"
mkdir -p "$work/wheels"
work="$(cd "$work" && pwd)"

wheels=(nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-nvcc-cu12==12.9.86 nvidia-cuda-nvrtc-cu12==12.9.86)
if [[ "$(find "$work/wheels" -name 'nvidia_cuda_*.whl' | wc -l)" -lt 3 ]]; then
    echo "build_check.sh: downloading ${wheels[*]}"
    python3 -m pip download --quiet --no-deps --dest "$work/wheels" "${wheels[@]}"
fi

cuda="$work/cuda"
rm -rf "$cuda" "$work/unpacked"
mkdir -p "$cuda/include" "$cuda/lib64" "$work/unpacked"
for w in "$work"/wheels/nvidia_cuda_*.whl; do
    unzip -q -o "$w" 'nvidia/*/include/*' 'nvidia/*/lib/*' -d "$work/unpacked" 2>/dev/null || true
done
for part in cuda_runtime cuda_nvcc cuda_nvrtc; do
    cp -r "$work/unpacked/nvidia/$part/include/." "$cuda/include/"
done
cp "$work/unpacked/nvidia/cuda_runtime/lib/libcudart.so.12" "$work/unpacked/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" \
    "$cuda/lib64/"

CUDA_HOME="$cuda" WERROR=1 bash "$here/build.sh" "$work/shim"

cc="${CC:-gcc}"
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -I"$cuda/include" -o "$work/switch_check" "$here/switch_check.c" \
    -L"$work/shim/lib" -l:libamdhip64.so -Wl,-rpath,"$work/shim/lib"
"$work/switch_check"
# The cost calibration runs only on a GPU; it is compiled here so that a
# change to it is checked before a GPU is spent on it.
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -I"$cuda/include" -I"$here" -o "$work/calibrate" "$here/calibrate.c" \
    -L"$work/shim/lib" -l:libamdhip64.so -Wl,-rpath,"$work/shim/lib"
