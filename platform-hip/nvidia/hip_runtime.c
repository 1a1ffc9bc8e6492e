/* Device, stream, event, memory and graph entry points over the CUDA runtime. */
#include <limits.h>
#include <string.h>

#include "hip_on_cuda.h"
/* after hip_on_cuda.h: the table names CUDA enumerators */
#include "hip_devattr_map.h"
#include "hip_vmm.h"

#define TR(call) hoc_from_cuda((int)(call))

/* ---- device ---------------------------------------------------------- */

HIP_API hipError_t hipInit(unsigned int flags) {
    if (flags != 0) {
        return hipErrorInvalidValue;
    }
    int count = 0;
    return TR(cudaGetDeviceCount(&count));
}

HIP_API hipError_t hipGetDeviceCount(int *count) { return TR(cudaGetDeviceCount(count)); }
HIP_API hipError_t hipSetDevice(int device) { return TR(cudaSetDevice(device)); }
HIP_API hipError_t hipGetDevice(int *device) { return TR(cudaGetDevice(device)); }
HIP_API hipError_t hipDeviceSynchronize(void) {
    HOC_FAULT("hipDeviceSynchronize");
    return TR(cudaDeviceSynchronize());
}
HIP_API hipError_t hipGetLastError(void) { return TR(cudaGetLastError()); }
HIP_API hipError_t hipPeekAtLastError(void) { return TR(cudaPeekAtLastError()); }
HIP_API hipError_t hipDriverGetVersion(int *v) { return TR(cudaDriverGetVersion(v)); }
HIP_API hipError_t hipRuntimeGetVersion(int *v) { return TR(cudaRuntimeGetVersion(v)); }

HIP_API hipError_t hipDeviceGetName(char *name, int len, hipDevice_t device) {
    if (name == NULL || len <= 0) {
        return hipErrorInvalidValue;
    }
    struct cudaDeviceProp prop;
    cudaError_t s = cudaGetDeviceProperties(&prop, device);
    if (s != cudaSuccess) {
        return TR(s);
    }
    strncpy(name, prop.name, (size_t)len - 1);
    name[len - 1] = '\0';
    return hipSuccess;
}

HIP_API hipError_t hipDeviceGetAttribute(int *value, int attr, int device) {
    if (value == NULL) {
        return hipErrorInvalidValue;
    }
    if (attr == 89) { /* hipDeviceAttributeVirtualMemoryManagementSupported: a driver attribute */
        return hoc_vmm_supported(value, device);
    }
    if (attr == 84) { /* hipDeviceAttributeTotalGlobalMem: no CUDA twin */
        struct cudaDeviceProp prop;
        cudaError_t s = cudaGetDeviceProperties(&prop, device);
        if (s != cudaSuccess) {
            return TR(s);
        }
        *value = prop.totalGlobalMem > (size_t)INT_MAX ? INT_MAX : (int)prop.totalGlobalMem;
        return hipSuccess;
    }
    for (size_t i = 0; i < sizeof(hoc_devattrs) / sizeof(hoc_devattrs[0]); i++) {
        if (hoc_devattrs[i].hip == attr) {
            return TR(cudaDeviceGetAttribute(value, (enum cudaDeviceAttr)hoc_devattrs[i].cuda, device));
        }
    }
    return hipErrorInvalidValue;
}

HIP_API hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    HOC_FAULT("hipMemGetInfo");
    return TR(cudaMemGetInfo(free_bytes, total_bytes));
}

/* ---- streams ----------------------------------------------------------- */

HIP_API hipError_t hipStreamCreate(hipStream_t *stream) {
    HOC_FAULT("hipStreamCreate");
    return TR(cudaStreamCreate(stream));
}

HIP_API hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned int flags) {
    HOC_FAULT("hipStreamCreateWithFlags");
    return TR(cudaStreamCreateWithFlags(stream, flags & HOC_STREAM_FLAGS));
}

HIP_API hipError_t hipStreamDestroy(hipStream_t stream) { return TR(cudaStreamDestroy(stream)); }
HIP_API hipError_t hipStreamSynchronize(hipStream_t stream) {
    HOC_FAULT("hipStreamSynchronize");
    return TR(cudaStreamSynchronize(stream));
}
HIP_API hipError_t hipStreamQuery(hipStream_t stream) {
    HOC_FAULT("hipStreamQuery");
    return TR(cudaStreamQuery(stream));
}

HIP_API hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int flags) {
    HOC_FAULT("hipStreamWaitEvent");
    return TR(cudaStreamWaitEvent(stream, event, flags & HOC_EVENT_WAIT_FLAGS));
}

/* ---- events ------------------------------------------------------------ */

HIP_API hipError_t hipEventCreate(hipEvent_t *event) {
    HOC_FAULT("hipEventCreate");
    return TR(cudaEventCreate(event));
}

HIP_API hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned int flags) {
    HOC_FAULT("hipEventCreateWithFlags");
    return TR(cudaEventCreateWithFlags(event, flags & HOC_EVENT_FLAGS));
}

HIP_API hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
    HOC_FAULT("hipEventRecord");
    return TR(cudaEventRecord(event, stream));
}

HIP_API hipError_t hipEventQuery(hipEvent_t event) {
    HOC_FAULT("hipEventQuery");
    return TR(cudaEventQuery(event));
}
HIP_API hipError_t hipEventSynchronize(hipEvent_t event) {
    HOC_FAULT("hipEventSynchronize");
    return TR(cudaEventSynchronize(event));
}
HIP_API hipError_t hipEventDestroy(hipEvent_t event) { return TR(cudaEventDestroy(event)); }

HIP_API hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop) {
    return TR(cudaEventElapsedTime(ms, start, stop));
}

/* ---- memory ------------------------------------------------------------ */

HIP_API hipError_t hipMalloc(void **ptr, size_t size) {
    HOC_FAULT("hipMalloc");
    return TR(cudaMalloc(ptr, size));
}
HIP_API hipError_t hipFree(void *ptr) {
    HOC_FAULT("hipFree");
    return TR(cudaFree(ptr));
}

HIP_API hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) {
    HOC_FAULT("hipHostMalloc");
    return TR(cudaHostAlloc(ptr, size, flags & HOC_HOST_MALLOC_FLAGS));
}

HIP_API hipError_t hipHostFree(void *ptr) {
    HOC_FAULT("hipHostFree");
    return TR(cudaFreeHost(ptr));
}

/* Stream-ordered allocation from the device's default memory pool. */
HIP_API hipError_t hipMallocAsync(void **ptr, size_t size, hipStream_t stream) {
    HOC_FAULT("hipMallocAsync");
    return TR(cudaMallocAsync(ptr, size, stream));
}

HIP_API hipError_t hipFreeAsync(void *ptr, hipStream_t stream) {
    HOC_FAULT("hipFreeAsync");
    return TR(cudaFreeAsync(ptr, stream));
}

/* hipMemcpyKind and cudaMemcpyKind agree for 0..4; AMD-only kinds
 * (DeviceToDeviceNoCU = 1024) become a plain device-to-device copy. */
static enum cudaMemcpyKind memcpy_kind(int kind) {
    return kind == 1024 ? cudaMemcpyDeviceToDevice : (enum cudaMemcpyKind)kind;
}

HIP_API hipError_t hipMemcpy(void *dst, const void *src, size_t bytes, int kind) {
    return TR(cudaMemcpy(dst, src, bytes, memcpy_kind(kind)));
}

HIP_API hipError_t hipMemcpyAsync(void *dst, const void *src, size_t bytes, int kind, hipStream_t stream) {
    HOC_FAULT("hipMemcpyAsync");
    return TR(cudaMemcpyAsync(dst, src, bytes, memcpy_kind(kind), stream));
}

HIP_API hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, const void *src, size_t bytes, hipStream_t stream) {
    HOC_FAULT("hipMemcpyHtoDAsync");
    return TR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
}

HIP_API hipError_t hipMemcpyDtoHAsync(void *dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream) {
    HOC_FAULT("hipMemcpyDtoHAsync");
    return TR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
}

HIP_API hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream) {
    HOC_FAULT("hipMemcpyDtoDAsync");
    return TR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
}

HIP_API hipError_t hipMemsetAsync(void *dst, int value, size_t bytes, hipStream_t stream) {
    HOC_FAULT("hipMemsetAsync");
    return TR(cudaMemsetAsync(dst, value, bytes, stream));
}

/* ---- capture and graphs -------------------------------------------------- */

/* hipStreamCaptureMode and hipStreamCaptureStatus agree with CUDA's. */
HIP_API hipError_t hipStreamBeginCapture(hipStream_t stream, int mode) {
    HOC_FAULT("hipStreamBeginCapture");
    return TR(cudaStreamBeginCapture(stream, (enum cudaStreamCaptureMode)mode));
}

/* An injected fault ends the capture all the same and discards its graph,
 * as the driver does with a capture it invalidated. */
HIP_API hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t *graph) {
    hipError_t injected = hoc_fault("hipStreamEndCapture");
    if (injected != hipSuccess) {
        cudaGraph_t discarded = NULL;
        if (cudaStreamEndCapture(stream, &discarded) == cudaSuccess && discarded != NULL) {
            cudaGraphDestroy(discarded);
        }
        if (graph != NULL) {
            *graph = NULL;
        }
        return injected;
    }
    return TR(cudaStreamEndCapture(stream, graph));
}

HIP_API hipError_t hipStreamIsCapturing(hipStream_t stream, int *status) {
    enum cudaStreamCaptureStatus s = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(stream, &s);
    if (status != NULL) {
        *status = (int)s;
    }
    return TR(e);
}

/* HIP keeps the pre-CUDA-12 five-argument form; CUDA 13 takes
 * (exec, graph, flags). */
HIP_API hipError_t hipGraphInstantiate(hipGraphExec_t *exec, hipGraph_t graph, hipGraphNode_t *error_node,
                                       char *log, size_t log_size) {
    HOC_FAULT("hipGraphInstantiate");
    if (error_node != NULL) {
        *error_node = NULL;
    }
    if (log != NULL && log_size > 0) {
        log[0] = '\0';
    }
    return TR(cudaGraphInstantiate(exec, graph, 0));
}

HIP_API hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *exec, hipGraph_t graph, unsigned long long flags) {
    HOC_FAULT("hipGraphInstantiateWithFlags");
    return TR(cudaGraphInstantiate(exec, graph, flags & HOC_GRAPH_INST_FLAGS));
}

HIP_API hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
    HOC_FAULT("hipGraphLaunch");
    return TR(cudaGraphLaunch(exec, stream));
}

HIP_API hipError_t hipGraphExecDestroy(hipGraphExec_t exec) { return TR(cudaGraphExecDestroy(exec)); }
HIP_API hipError_t hipGraphDestroy(hipGraph_t graph) { return TR(cudaGraphDestroy(graph)); }
