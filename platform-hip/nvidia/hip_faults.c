/* Faults on demand, for tests of the callers' failure paths on a real
 * device.
 *
 * hipOnCudaFailNext(call, status) makes the next call of the entry point
 * named `call` (one of `faultable` below) return `status` without reaching
 * the driver, once (one fault may be pending per entry point). It returns
 * 0, or -1 for a name that is not one of those entry points or a status of
 * hipSuccess.
 * hipOnCudaFaultsTaken() counts the faults calls have taken so far, so a
 * test can tell that the call it meant took its fault.
 * Neither is part of HIP: a test looks them up in the loaded library and
 * skips where the runtime has no such symbol (a real ROCm). With no fault
 * pending, an entry point pays one relaxed atomic load. */
#include <pthread.h>
#include <string.h>

#include "hip_on_cuda.h"

static const char *const faultable[] = {
    /* virtual memory (hip_vmm.c) */
    "hipMemAddressReserve", "hipMemAddressFree", "hipMemCreate", "hipMemRelease", "hipMemMap", "hipMemUnmap",
    "hipMemSetAccess",
    /* streams and events (hip_runtime.c) */
    "hipStreamCreate", "hipStreamCreateWithFlags", "hipStreamSynchronize", "hipStreamQuery", "hipStreamWaitEvent",
    "hipEventCreate", "hipEventCreateWithFlags", "hipEventRecord", "hipEventQuery", "hipEventSynchronize",
    "hipDeviceSynchronize", "hipMemGetInfo",
    /* memory and copies (hip_runtime.c) */
    "hipMalloc", "hipFree", "hipHostMalloc", "hipHostFree", "hipMallocAsync", "hipFreeAsync", "hipMemcpyAsync",
    "hipMemcpyHtoDAsync", "hipMemcpyDtoHAsync", "hipMemcpyDtoDAsync", "hipMemsetAsync",
    /* capture and graphs (hip_runtime.c); a faulted hipStreamEndCapture still
     * ends the capture and discards its graph */
    "hipStreamBeginCapture", "hipStreamEndCapture", "hipGraphInstantiate", "hipGraphInstantiateWithFlags",
    "hipGraphLaunch",
    /* modules and launches (hip_module.c) */
    "hipModuleLoadData", "hipModuleGetFunction", "hipModuleLaunchKernel",
};
#define HOC_FAULTABLE (sizeof(faultable) / sizeof(faultable[0]))

static pthread_mutex_t faults_lock = PTHREAD_MUTEX_INITIALIZER;
/* The status each entry point's next call returns; hipSuccess: none. */
static hipError_t pending[HOC_FAULTABLE];
/* How many faults are pending: the entry points' fast path. */
static int pending_count;
/* How many faults calls have taken so far. */
static unsigned long long taken_count;

static int faultable_index(const char *call) {
    for (size_t i = 0; i < HOC_FAULTABLE; i++) {
        if (strcmp(call, faultable[i]) == 0) {
            return (int)i;
        }
    }
    return -1;
}

HIP_API int hipOnCudaFailNext(const char *call, int status) {
    if (call == NULL || status == hipSuccess) {
        return -1;
    }
    int i = faultable_index(call);
    if (i < 0) {
        return -1;
    }
    pthread_mutex_lock(&faults_lock);
    if (pending[i] == hipSuccess) {
        __atomic_add_fetch(&pending_count, 1, __ATOMIC_RELAXED);
    }
    pending[i] = status;
    pthread_mutex_unlock(&faults_lock);
    return 0;
}

HIP_API unsigned long long hipOnCudaFaultsTaken(void) { return __atomic_load_n(&taken_count, __ATOMIC_RELAXED); }

hipError_t hoc_fault(const char *call) {
    if (__atomic_load_n(&pending_count, __ATOMIC_RELAXED) == 0) {
        return hipSuccess;
    }
    int i = faultable_index(call);
    if (i < 0) {
        return hipSuccess;
    }
    pthread_mutex_lock(&faults_lock);
    hipError_t s = pending[i];
    if (s != hipSuccess) {
        pending[i] = hipSuccess;
        __atomic_sub_fetch(&pending_count, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&taken_count, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&faults_lock);
    return s;
}
