/* Modules and kernel launches over the CUDA driver API.
 *
 * The driver functions are resolved through the runtime
 * (cudaGetDriverEntryPointByVersion), so the library links only libcudart:
 * no link-time dependency on libcuda. Driver calls act on the calling
 * thread's current context, which the runtime may not have made current yet:
 * every entry point here first makes sure one is. */
#include <pthread.h>
#include <stdint.h>

#include "hip_on_cuda.h"

#define TR(call) hoc_from_cuda((int)(call))

static CUresult (*p_cuCtxGetCurrent)(CUcontext *);
static CUresult (*p_cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*p_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*p_cuModuleUnload)(CUmodule);
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                                    unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
static CUresult (*p_cuFuncGetAttribute)(int *, CUfunction_attribute, CUfunction);

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static hipError_t resolve_status = hipErrorNotInitialized;

int hoc_resolve_driver(const char *name, void **slot, hipError_t missing, hipError_t *status) {
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t s = cudaGetDriverEntryPointByVersion(name, slot, HOC_DRIVER_ABI, cudaEnableDefault, &found);
    if (s != cudaSuccess) {
        *status = TR(s);
        return 0;
    }
    if (found != cudaDriverEntryPointSuccess || *slot == NULL) {
        *status = missing;
        return 0;
    }
    return 1;
}

static int resolve_one(const char *name, void **slot) {
    return hoc_resolve_driver(name, slot, hipErrorInsufficientDriver, &resolve_status);
}

static void resolve(void) {
    if (resolve_one("cuCtxGetCurrent", (void **)&p_cuCtxGetCurrent) &&
        resolve_one("cuModuleLoadData", (void **)&p_cuModuleLoadData) &&
        resolve_one("cuModuleGetFunction", (void **)&p_cuModuleGetFunction) &&
        resolve_one("cuModuleUnload", (void **)&p_cuModuleUnload) &&
        resolve_one("cuLaunchKernel", (void **)&p_cuLaunchKernel) &&
        resolve_one("cuFuncGetAttribute", (void **)&p_cuFuncGetAttribute)) {
        resolve_status = hipSuccess;
    }
}

hipError_t hoc_ensure_context(void) {
    pthread_once(&resolve_once, resolve);
    if (resolve_status != hipSuccess) {
        return resolve_status;
    }
    CUcontext current = NULL;
    CUresult r = p_cuCtxGetCurrent(&current);
    if (r != CUDA_SUCCESS) {
        return TR(r);
    }
    if (current != NULL) {
        return hipSuccess;
    }
    /* cudaSetDevice initializes the device's primary context and makes it
     * current on this thread (CUDA 12 and later). */
    int device = 0;
    cudaError_t s = cudaGetDevice(&device);
    if (s == cudaSuccess) {
        s = cudaSetDevice(device);
    }
    if (s != cudaSuccess) {
        return TR(s);
    }
    r = p_cuCtxGetCurrent(&current);
    if (r != CUDA_SUCCESS) {
        return TR(r);
    }
    return current != NULL ? hipSuccess : hipErrorInvalidContext;
}

/* `image` is what hiprtcGetCode returned: NUL-terminated PTX. */
HIP_API hipError_t hipModuleLoadData(hipModule_t *module, const void *image) {
    HOC_FAULT("hipModuleLoadData");
    hipError_t e = hoc_ensure_context();
    if (e != hipSuccess) {
        return e;
    }
    return TR(p_cuModuleLoadData(module, image));
}

HIP_API hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module, const char *name) {
    HOC_FAULT("hipModuleGetFunction");
    hipError_t e = hoc_ensure_context();
    if (e != hipSuccess) {
        return e;
    }
    return TR(p_cuModuleGetFunction(function, module, name));
}

HIP_API hipError_t hipModuleUnload(hipModule_t module) {
    hipError_t e = hoc_ensure_context();
    if (e != hipSuccess) {
        return e;
    }
    return TR(p_cuModuleUnload(module));
}

/* HIP's `extra` keys and terminator, and CUDA's. */
#define HIP_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define HIP_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)
#define HIP_LAUNCH_PARAM_END ((void *)0x03)
#define HOC_MAX_EXTRA 16

HIP_API hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz,
                                         unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
                                         hipStream_t stream, void **params, void **extra) {
    HOC_FAULT("hipModuleLaunchKernel");
    hipError_t e = hoc_ensure_context();
    if (e != hipSuccess) {
        return e;
    }
    void *cuda_extra[HOC_MAX_EXTRA + 1];
    void **translated = NULL;
    if (extra != NULL) {
        size_t n = 0;
        while (extra[n] != HIP_LAUNCH_PARAM_END) {
            if (n + 2 > HOC_MAX_EXTRA) {
                return hipErrorInvalidValue;
            }
            void *key = extra[n];
            if (key == HIP_LAUNCH_PARAM_BUFFER_POINTER) {
                cuda_extra[n] = CU_LAUNCH_PARAM_BUFFER_POINTER;
            } else if (key == HIP_LAUNCH_PARAM_BUFFER_SIZE) {
                cuda_extra[n] = CU_LAUNCH_PARAM_BUFFER_SIZE;
            } else {
                return hipErrorInvalidValue;
            }
            cuda_extra[n + 1] = extra[n + 1];
            n += 2;
        }
        cuda_extra[n] = CU_LAUNCH_PARAM_END;
        translated = cuda_extra;
    }
    CUresult r = p_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, (CUstream)stream, params, translated);
    if (r == CUDA_ERROR_INVALID_VALUE) {
        /* The driver API answers a block larger than the kernel allows with
         * a generic invalid value; HIP (and CUDA's runtime) name it an
         * invalid configuration. Only looked at on this error path. */
        int max_threads = 0;
        unsigned long long threads = (unsigned long long)bx * by * bz;
        if (p_cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f) == CUDA_SUCCESS &&
            max_threads > 0 && threads > (unsigned long long)max_threads) {
            return hipErrorInvalidConfiguration;
        }
    }
    return TR(r);
}
