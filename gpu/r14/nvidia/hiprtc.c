/* hiprtc over NVRTC (built as libhiprtc.so).
 *
 * - The code hiprtc hands back is NUL-terminated PTX (nvrtcGetPTXSize counts
 *   the NUL), which is what cuModuleLoadData needs.
 * - Options meant for AMD's compiler are dropped; the current device's
 *   --gpu-architecture is added unless the caller named an NVIDIA one.
 * - A short prelude maps HIP's spellings of the thread indices. */
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIP_API __attribute__((visibility("default")))

typedef int hiprtcResult;
typedef nvrtcProgram hiprtcProgram;

enum {
    HIPRTC_SUCCESS = 0,
    HIPRTC_ERROR_OUT_OF_MEMORY = 1,
    HIPRTC_ERROR_INVALID_INPUT = 3,
    HIPRTC_ERROR_INVALID_OPTION = 5,
    HIPRTC_ERROR_INTERNAL_ERROR = 11,
};

/* NVRTC's results 0..11 are hiprtc's; later NVRTC codes have no twin. */
static hiprtcResult from_nvrtc(nvrtcResult r) {
    return (r >= 0 && r <= 11) ? (hiprtcResult)r : HIPRTC_ERROR_INTERNAL_ERROR;
}

HIP_API const char *hiprtcGetErrorString(hiprtcResult result) {
    switch (result) {
    case 0: return "HIPRTC_SUCCESS";
    case 1: return "HIPRTC_ERROR_OUT_OF_MEMORY";
    case 2: return "HIPRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case 3: return "HIPRTC_ERROR_INVALID_INPUT";
    case 4: return "HIPRTC_ERROR_INVALID_PROGRAM";
    case 5: return "HIPRTC_ERROR_INVALID_OPTION";
    case 6: return "HIPRTC_ERROR_COMPILATION";
    case 7: return "HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    case 8: return "HIPRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION";
    case 9: return "HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION";
    case 10: return "HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
    case 11: return "HIPRTC_ERROR_INTERNAL_ERROR";
    case 100: return "HIPRTC_ERROR_LINKING";
    default: return "HIPRTC_ERROR_INVALID_INPUT";
    }
}

HIP_API hiprtcResult hiprtcVersion(int *major, int *minor) { return from_nvrtc(nvrtcVersion(major, minor)); }

static const char PRELUDE[] =
    "#define __HIP_PLATFORM_NVIDIA__ 1\n"
    "#define __HIPCC_RTC__ 1\n"
    "#define hipThreadIdx_x threadIdx.x\n#define hipThreadIdx_y threadIdx.y\n#define hipThreadIdx_z threadIdx.z\n"
    "#define hipBlockIdx_x blockIdx.x\n#define hipBlockIdx_y blockIdx.y\n#define hipBlockIdx_z blockIdx.z\n"
    "#define hipBlockDim_x blockDim.x\n#define hipBlockDim_y blockDim.y\n#define hipBlockDim_z blockDim.z\n"
    "#define hipGridDim_x gridDim.x\n#define hipGridDim_y gridDim.y\n#define hipGridDim_z gridDim.z\n"
    "#line 1\n";

HIP_API hiprtcResult hiprtcCreateProgram(hiprtcProgram *prog, const char *src, const char *name, int num_headers,
                                         const char *const *headers, const char *const *include_names) {
    if (src == NULL) {
        return HIPRTC_ERROR_INVALID_INPUT;
    }
    size_t n = strlen(PRELUDE) + strlen(src) + 1;
    char *full = malloc(n);
    if (full == NULL) {
        return HIPRTC_ERROR_OUT_OF_MEMORY;
    }
    strcpy(full, PRELUDE);
    strcat(full, src);
    /* NVRTC copies the source. */
    nvrtcResult r = nvrtcCreateProgram(prog, full, name, num_headers, headers, include_names);
    free(full);
    return from_nvrtc(r);
}

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Options NVRTC understands and that mean the same for both compilers:
 * kept when an option starts with one of KEEP_PREFIX or equals one of
 * KEEP_EXACT. */
static const char *const KEEP_PREFIX[] = {
    "-D", "--define-macro", "-U", "--undefine-macro", "-I", "--include-path", "-std=", "--std=",
    "--gpu-architecture=compute_", "--gpu-architecture=sm_", "-arch=compute_", "-arch=sm_", "--maxrregcount=",
    "-maxrregcount=", "-rdc=", "--relocatable-device-code=", "--ftz=", "-ftz=", "--prec-div=", "-prec-div=",
    "--prec-sqrt=", "-prec-sqrt=", "--fmad=", "-fmad=",
};
static const char *const KEEP_EXACT[] = {
    "-G", "--device-debug", "-lineinfo", "--generate-line-info", "--use_fast_math", "-use_fast_math",
    "-default-device", "-w", "--disable-warnings",
};

/* Returns the NVRTC spelling of an option, or NULL to drop it. */
static const char *translate_option(const char *opt) {
    if (opt == NULL) {
        return NULL;
    }
    if (strcmp(opt, "-ffast-math") == 0) {
        return "--use_fast_math";
    }
    if (strcmp(opt, "-fgpu-rdc") == 0) {
        return "-rdc=true";
    }
    for (size_t i = 0; i < sizeof(KEEP_PREFIX) / sizeof(KEEP_PREFIX[0]); i++) {
        if (starts_with(opt, KEEP_PREFIX[i])) {
            return opt;
        }
    }
    for (size_t i = 0; i < sizeof(KEEP_EXACT) / sizeof(KEEP_EXACT[0]); i++) {
        if (strcmp(opt, KEEP_EXACT[i]) == 0) {
            return opt;
        }
    }
    return NULL; /* --offload-arch=gfx*, -O3, -mcumode, -mwavefrontsize64, ... */
}

static int names_nvidia_arch(const char *opt) {
    return starts_with(opt, "--gpu-architecture=") || starts_with(opt, "-arch=");
}

HIP_API hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int num_options, const char *const *options) {
    if (num_options < 0 || (num_options > 0 && options == NULL)) {
        return HIPRTC_ERROR_INVALID_INPUT;
    }
    const char **kept = malloc(sizeof(char *) * ((size_t)num_options + 1));
    if (kept == NULL) {
        return HIPRTC_ERROR_OUT_OF_MEMORY;
    }
    int n = 0;
    int has_arch = 0;
    for (int i = 0; i < num_options; i++) {
        const char *o = translate_option(options[i]);
        if (o != NULL) {
            kept[n++] = o;
            has_arch |= names_nvidia_arch(o);
        }
    }
    char arch[64];
    if (!has_arch) {
        int device = 0, major = 0, minor = 0;
        if (cudaGetDevice(&device) == cudaSuccess &&
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess) {
            snprintf(arch, sizeof(arch), "--gpu-architecture=compute_%d%d", major, minor);
            kept[n++] = arch;
        }
    }
    nvrtcResult r = nvrtcCompileProgram(prog, n, kept);
    free(kept);
    return from_nvrtc(r);
}

HIP_API hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t *size) {
    return from_nvrtc(nvrtcGetProgramLogSize(prog, size));
}

HIP_API hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char *log) {
    return from_nvrtc(nvrtcGetProgramLog(prog, log));
}

HIP_API hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t *size) {
    return from_nvrtc(nvrtcGetPTXSize(prog, size));
}

HIP_API hiprtcResult hiprtcGetCode(hiprtcProgram prog, char *code) { return from_nvrtc(nvrtcGetPTX(prog, code)); }

HIP_API hiprtcResult hiprtcDestroyProgram(hiprtcProgram *prog) { return from_nvrtc(nvrtcDestroyProgram(prog)); }

HIP_API hiprtcResult hiprtcAddNameExpression(hiprtcProgram prog, const char *name) {
    return from_nvrtc(nvrtcAddNameExpression(prog, name));
}

HIP_API hiprtcResult hiprtcGetLoweredName(hiprtcProgram prog, const char *name, const char **lowered) {
    return from_nvrtc(nvrtcGetLoweredName(prog, name, lowered));
}
