# Sourced by the scripts that run binaries against the shim (run.sh, ab.sh,
# scripts/gpu_memory_suite.sh):
#
#   . "$here/env.sh"; use_shim SHIM_DIR
#
# Points ROCM_PATH at the shim built into SHIM_DIR (cubecl-hip-sys loads
# libamdhip64.so and libhiprtc.so from $ROCM_PATH/lib), forgets HIP_PATH,
# and puts the CUDA runtime's folder on LD_LIBRARY_PATH so NVRTC finds its
# builtins library. The shim itself is reached only through ROCM_PATH.
use_shim() {
    local shim="$1" cudart
    export ROCM_PATH="$shim"
    unset HIP_PATH
    cudart="$(ldd "$shim/lib/libamdhip64.so" 2>/dev/null | awk '/libcudart/ {print $3}')"
    if [[ -n "$cudart" ]]; then
        export LD_LIBRARY_PATH="$(dirname "$cudart")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
}
