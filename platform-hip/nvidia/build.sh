#!/usr/bin/env bash
# Builds the HIP-on-CUDA shim: OUT/lib/libamdhip64.so and OUT/lib/libhiprtc.so.
#
#   build.sh [OUT]            (default OUT: ./build next to this script)
#
# WERROR=1 turns compiler warnings into errors (used when checking the
# sources; off by default so a newer gcc's new warning cannot stop a run).
#
# Needs gcc (or $CC) and a CUDA 13 toolkit: $CUDA_HOME, else the toolkit the
# `nvcc` on PATH belongs to, else /usr/local/cuda. Point ROCM_PATH at OUT to
# make cubecl-hip-sys load the shim.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/build}"
mkdir -p "$out/lib"
out="$(cd "$out" && pwd)"

if [[ -z "${CUDA_HOME:-}" ]]; then
    if command -v nvcc >/dev/null 2>&1; then
        CUDA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
    else
        CUDA_HOME=/usr/local/cuda
    fi
fi

first_dir_with() { # first_dir_with FILE-GLOB DIR...
    local glob="$1"; shift
    for d in "$@"; do
        if compgen -G "$d/$glob" >/dev/null; then echo "$d"; return 0; fi
    done
    return 1
}

inc="$(first_dir_with cuda_runtime_api.h "$CUDA_HOME/include" "$CUDA_HOME/targets/x86_64-linux/include")" ||
    { echo "build.sh: no cuda_runtime_api.h under $CUDA_HOME" >&2; exit 1; }
lib="$(first_dir_with 'libcudart.so*' "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib")" ||
    { echo "build.sh: no libcudart.so under $CUDA_HOME" >&2; exit 1; }

link_flag() { # link_flag NAME: -lNAME, or -l:libNAME.so.N when only a versioned file exists
    if [[ -e "$lib/lib$1.so" ]]; then echo "-l$1"; return; fi
    local f
    f="$(cd "$lib" && ls "lib$1.so."* 2>/dev/null | grep -E "^lib$1\.so\.[0-9]+$" | head -n1)"
    [[ -n "$f" ]] || { echo "build.sh: no lib$1.so in $lib" >&2; exit 1; }
    echo "-l:$f"
}

cc="${CC:-gcc}"
werror=()
[[ "${WERROR:-0}" == 1 ]] && werror=(-Werror)
flags=(-std=c11 -O2 -Wall -Wextra "${werror[@]}" -fPIC -shared -fvisibility=hidden
       -I"$inc" -L"$lib" -Wl,-rpath,"$lib" -Wl,--no-undefined)

echo "build.sh: CUDA at $CUDA_HOME (include $inc, lib $lib), compiler $cc"
"$cc" "${flags[@]}" -o "$out/lib/libamdhip64.so" \
    "$here/hip_errors.c" "$here/hip_runtime.c" "$here/hip_module.c" "$here/hip_vmm.c" "$here/hip_faults.c" \
    "$(link_flag cudart)" -lpthread
"$cc" "${flags[@]}" -o "$out/lib/libhiprtc.so" \
    "$here/hiprtc.c" "$(link_flag nvrtc)" "$(link_flag cudart)"

# Every HIP symbol streamcore-hip calls must be exported (a missing one would
# make cubecl-hip-sys panic at the first call).
missing=0
exported="$( (nm -D --defined-only "$out/lib/libamdhip64.so"; nm -D --defined-only "$out/lib/libhiprtc.so") | awk '{print $3}')"
while read -r sym; do
    [[ -z "$sym" ]] && continue
    if ! grep -qx "$sym" <<<"$exported"; then echo "build.sh: missing export $sym" >&2; missing=1; fi
done <"$here/symbols.txt"
[[ $missing -eq 0 ]] || exit 1
echo "build.sh: built $out/lib/libamdhip64.so and $out/lib/libhiprtc.so ($(wc -l <"$here/symbols.txt") required symbols exported)"
