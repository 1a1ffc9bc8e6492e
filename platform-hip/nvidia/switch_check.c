/* The shim's fault switch, driven with no GPU and no driver: a faulted
 * entry point returns its injected status before it reaches CUDA, so this
 * runs anywhere the shim links (CI builds it against CUDA 12.9's headers
 * and runtime from PyPI: build_check.sh). Exits 0 when every check holds,
 * else 1 after printing the ones that failed. */
#include <stdio.h>

#include "hip_on_cuda.h"

HIP_API int hipOnCudaFailNext(const char *call, int status);
HIP_API unsigned long long hipOnCudaFaultsTaken(void);
HIP_API hipError_t hipMalloc(void **ptr, size_t size);
HIP_API hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);
HIP_API hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t *graph);
HIP_API hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz,
                                         unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                         hipStream_t stream, void **params, void **extra);

static int failed;

static void expect(int ok, const char *what) {
    if (!ok) {
        printf("switch_check: FAILED: %s\n", what);
        failed = 1;
    }
}

int main(void) {
    expect(hipOnCudaFailNext("hipNoSuchCall", 2) == -1, "an unknown entry point is refused");
    expect(hipOnCudaFailNext("hipMalloc", 0) == -1, "status hipSuccess is refused");
    expect(hipOnCudaFailNext(NULL, 2) == -1, "a null name is refused");
    expect(hipOnCudaFaultsTaken() == 0, "nothing taken yet");

    void *ptr = NULL;
    expect(hipOnCudaFailNext("hipMalloc", 2) == 0, "hipMalloc can be faulted");
    expect(hipMalloc(&ptr, 1024) == 2, "the faulted hipMalloc returns the injected status");
    expect(hipOnCudaFaultsTaken() == 1, "one fault taken");
    expect(hipMalloc(&ptr, 1024) != 2, "the fault is taken once");

    expect(hipOnCudaFailNext("hipEventRecord", 999) == 0, "hipEventRecord can be faulted");
    expect(hipOnCudaFailNext("hipEventRecord", 700) == 0, "a second arming replaces the first");
    expect(hipEventRecord(NULL, NULL) == 700, "the last armed status is returned");
    expect(hipOnCudaFaultsTaken() == 2, "two faults taken");

    hipGraph_t graph = (hipGraph_t)&failed;
    expect(hipOnCudaFailNext("hipStreamEndCapture", 901) == 0, "hipStreamEndCapture can be faulted");
    expect(hipStreamEndCapture(NULL, &graph) == 901, "the faulted end returns the injected status");
    expect(graph == NULL, "and no graph");

    expect(hipOnCudaFailNext("hipModuleLaunchKernel", 701) == 0, "launches can be faulted");
    expect(hipModuleLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) == 701,
           "the faulted launch returns the injected status before any context is needed");
    expect(hipOnCudaFaultsTaken() == 4, "four faults taken");

    printf("switch_check: %s\n", failed ? "FAILED" : "ok");
    return failed;
}
