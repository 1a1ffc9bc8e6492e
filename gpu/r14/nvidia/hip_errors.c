/* Status translation and HIP's error names. */
#include "hip_on_cuda.h"
#include "hip_error_names.h"

#define HOC_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int hip_defines(int code) {
    for (size_t i = 0; i < HOC_COUNT(hoc_error_names); i++) {
        if (hoc_error_names[i].code == code) {
            return 1;
        }
    }
    return 0;
}

hipError_t hoc_from_cuda(int status) {
    switch (status) {
    /* Same number, different meaning. */
    case 911: /* cudaErrorExternalDevice */
        return hipErrorUnknown;
    case 912: /* cudaErrorInvalidClusterSize */
        return hipErrorInvalidClusterSize;
    /* CUDA-only codes with a HIP counterpart. */
    case 16: /* cudaErrorInvalidHostPointer */
        return hipErrorInvalidValue;
    case 18: /* cudaErrorInvalidTexture */
        return hipErrorInvalidTexture;
    case 20: /* cudaErrorInvalidChannelDescriptor */
        return hipErrorInvalidChannelDescriptor;
    case 34: /* cudaErrorStubLibrary */
    case 36: /* cudaErrorCallRequiresNewerDriver */
        return hipErrorInsufficientDriver;
    case 46:  /* cudaErrorDevicesUnavailable */
    case 102: /* cudaErrorDeviceNotLicensed */
        return hipErrorNoDevice;
    case 49: /* cudaErrorIncompatibleDriverContext */
        return hipErrorInvalidContext;
    case 127: /* cudaErrorStartupFailure */
        return hipErrorNotInitialized;
    case 221: /* cudaErrorJitCompilerNotFound */
    case 222: /* cudaErrorUnsupportedPtxVersion */
    case 223: /* cudaErrorJitCompilationDisabled */
        return hipErrorInvalidKernelFile;
    case 714: /* cudaErrorHardwareStackError */
    case 715: /* cudaErrorIllegalInstruction */
    case 716: /* cudaErrorMisalignedAddress */
    case 717: /* cudaErrorInvalidAddressSpace */
    case 718: /* cudaErrorInvalidPc */
        /* A kernel fault: sticky, like HIP's launch failure. */
        return hipErrorLaunchFailure;
    case 913: /* cudaErrorFunctionNotLoaded */
        return hipErrorInvalidDeviceFunction;
    default:
        return hip_defines(status) ? status : hipErrorUnknown;
    }
}

HIP_API const char *hipGetErrorName(hipError_t error) {
    for (size_t i = 0; i < HOC_COUNT(hoc_error_names); i++) {
        if (hoc_error_names[i].code == error) {
            return hoc_error_names[i].name;
        }
    }
    return "hipErrorUnknown";
}

HIP_API const char *hipGetErrorString(hipError_t error) {
    /* Numbers HIP and CUDA share mean the same thing (except the two
     * collisions): CUDA's description fits. */
    if (error == 911 || error == 912 || error >= 1052 || error == 916) {
        return hipGetErrorName(error);
    }
    if (!hip_defines(error)) {
        return "unknown error";
    }
    return cudaGetErrorString((cudaError_t)error);
}
