/* Faults on demand, for tests of the callers' failure paths on a real
 * device.
 *
 * hipOnCudaFailNext(call, status) makes the next call of the virtual-memory
 * entry point named `call` return `status` without reaching the driver,
 * once (one fault may be pending per entry point). It returns 0, or -1 for
 * a name that is not one of those entry points or a status of hipSuccess.
 * It is not part of HIP: a test looks it up in the loaded library and
 * skips where the runtime has no such symbol (a real ROCm). With no fault
 * pending, an entry point pays one relaxed atomic load. */
#include <pthread.h>
#include <string.h>

#include "hip_on_cuda.h"

static const char *const faultable[] = {
    "hipMemAddressReserve", "hipMemAddressFree", "hipMemCreate", "hipMemRelease",
    "hipMemMap",            "hipMemUnmap",       "hipMemSetAccess",
};
#define HOC_FAULTABLE (sizeof(faultable) / sizeof(faultable[0]))

static pthread_mutex_t faults_lock = PTHREAD_MUTEX_INITIALIZER;
/* The status each entry point's next call returns; hipSuccess: none. */
static hipError_t pending[HOC_FAULTABLE];
/* How many faults are pending: the entry points' fast path. */
static int pending_count;

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
    }
    pthread_mutex_unlock(&faults_lock);
    return s;
}
