/* HIP on CUDA: the HIP entry points streamcore-hip uses, implemented over
 * the CUDA runtime, the CUDA driver API and NVRTC.
 *
 * HIP's handle types are CUDA's handle types here (as in HIP's own NVIDIA
 * backend): hipStream_t is cudaStream_t, hipEvent_t is cudaEvent_t,
 * hipGraph_t/hipGraphExec_t are cudaGraph_t/cudaGraphExec_t, hipModule_t is
 * CUmodule, hipFunction_t is CUfunction, hipDeviceptr_t is a plain pointer.
 */
#ifndef HIP_ON_CUDA_H
#define HIP_ON_CUDA_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

#define HIP_API __attribute__((visibility("default")))

typedef int hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaGraph_t hipGraph_t;
typedef cudaGraphExec_t hipGraphExec_t;
typedef cudaGraphNode_t hipGraphNode_t;
typedef CUmodule hipModule_t;
typedef CUfunction hipFunction_t;
typedef void *hipDeviceptr_t;
typedef int hipDevice_t;

/* HIP status numbers this shim produces itself. */
enum {
    hipSuccess = 0,
    hipErrorInvalidValue = 1,
    hipErrorNotInitialized = 3,
    hipErrorInvalidConfiguration = 9,
    hipErrorInsufficientDriver = 35,
    hipErrorInvalidDeviceFunction = 98,
    hipErrorNoDevice = 100,
    hipErrorInvalidContext = 201,
    hipErrorInvalidTexture = 912,
    hipErrorInvalidChannelDescriptor = 911,
    hipErrorInvalidKernelFile = 218,
    hipErrorLaunchFailure = 719,
    hipErrorUnknown = 999,
    hipErrorInvalidClusterSize = 1054,
};

/* Flag bits HIP and CUDA share; every other bit is AMD-only and masked. */
#define HOC_STREAM_FLAGS 0x1u      /* hipStreamNonBlocking */
#define HOC_EVENT_FLAGS 0x7u       /* BlockingSync | DisableTiming | Interprocess */
#define HOC_EVENT_WAIT_FLAGS 0x1u  /* hipEventWaitExternal */
#define HOC_HOST_MALLOC_FLAGS 0x7u /* Portable | Mapped | WriteCombined */
#define HOC_GRAPH_INST_FLAGS 0xfu  /* AutoFree | Upload | DeviceLaunch | UseNodePriority */

/* A CUDA runtime status (cudaError_t) or driver status (CUresult) as the
 * HIP status HIP's NVIDIA backend would return. The two CUDA numberings
 * agree with each other and with HIP's for every code they share. */
hipError_t hoc_from_cuda(int status);

/* Makes sure the calling thread has a current CUDA context (driver API calls
 * need one): the primary context of the runtime's current device. */
hipError_t hoc_ensure_context(void);

/* The ABI version each driver symbol is requested at. */
#define HOC_DRIVER_ABI 12000

/* Resolves the driver function `name` through the runtime
 * (cudaGetDriverEntryPointByVersion at HOC_DRIVER_ABI) into `*slot`, so the
 * library links only libcudart. Returns 1, or 0 with why in `*status`: the
 * runtime's status, or `missing` when the driver lacks the function. */
int hoc_resolve_driver(const char *name, void **slot, hipError_t missing, hipError_t *status);

/* The fault a test asked the next call of the entry point `call` to return
 * (hip_faults.c), or hipSuccess: checked first by every entry point listed
 * there. */
hipError_t hoc_fault(const char *call);

/* Returns the fault a test asked this call for, if any, before the call
 * reaches the driver. */
#define HOC_FAULT(name)                                                                                         \
    do {                                                                                                        \
        hipError_t hoc_injected = hoc_fault(name);                                                              \
        if (hoc_injected != hipSuccess) {                                                                       \
            return hoc_injected;                                                                                \
        }                                                                                                       \
    } while (0)

#endif
