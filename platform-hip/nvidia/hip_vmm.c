/* HIP's virtual-memory entry points over the CUDA driver's cuMem* calls.
 *
 * hipMemAddressReserve / hipMemAddressFree, hipMemCreate / hipMemRelease,
 * hipMemMap / hipMemUnmap, hipMemSetAccess, hipMemGetAllocationGranularity,
 * and hipDeviceGetAttribute's VirtualMemoryManagementSupported (89), which
 * has no runtime twin (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
 * 102, is a driver attribute).
 *
 * HIP's structs are declared here with HIP's layout (cubecl-hip-sys
 * 7.14.6085001, bindings_60850.rs) and translated field by field into
 * CUDA's: the shapes agree except allocFlags (4 bytes in HIP, 8 in CUDA),
 * and the enumerators are checked one by one rather than trusted to agree.
 * A HIP handle (hipMemGenericAllocationHandle_t, a pointer) carries CUDA's
 * CUmemGenericAllocationHandle (an unsigned 64-bit integer) by value.
 *
 * The driver functions are resolved through the runtime, like the module
 * calls in hip_module.c, so the library still links only libcudart. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "hip_on_cuda.h"
#include "hip_vmm.h"

#define TR(call) hoc_from_cuda((int)(call))


/* HIP's numbers (bindings_60850.rs). */
enum {
    hipErrorNotSupported = 801,
    hipMemAllocationTypePinned = 1,
    hipMemLocationTypeDevice = 1,
    hipMemLocationTypeHost = 2,
    hipMemLocationTypeHostNuma = 3,
    hipMemLocationTypeHostNumaCurrent = 4,
    hipMemAccessFlagsProtNone = 0,
    hipMemAccessFlagsProtRead = 1,
    hipMemAccessFlagsProtReadWrite = 3,
    hipMemAllocationGranularityMinimum = 0,
    hipMemAllocationGranularityRecommended = 1,
};

static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
static CUresult (*p_cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
static CUresult (*p_cuMemAddressFree)(CUdeviceptr, size_t);
static CUresult (*p_cuMemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                                 unsigned long long);
static CUresult (*p_cuMemRelease)(CUmemGenericAllocationHandle);
static CUresult (*p_cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
static CUresult (*p_cuMemUnmap)(CUdeviceptr, size_t);
static CUresult (*p_cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
static CUresult (*p_cuMemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *,
                                                   CUmemAllocationGranularity_flags);

static pthread_once_t vmm_once = PTHREAD_ONCE_INIT;
static hipError_t vmm_status = hipErrorNotInitialized;

static int vmm_resolve_one(const char *name, void **slot) {
    return hoc_resolve_driver(name, slot, hipErrorNotSupported, &vmm_status);
}

static void vmm_resolve(void) {
    if (vmm_resolve_one("cuDeviceGet", (void **)&p_cuDeviceGet) &&
        vmm_resolve_one("cuDeviceGetAttribute", (void **)&p_cuDeviceGetAttribute) &&
        vmm_resolve_one("cuMemAddressReserve", (void **)&p_cuMemAddressReserve) &&
        vmm_resolve_one("cuMemAddressFree", (void **)&p_cuMemAddressFree) &&
        vmm_resolve_one("cuMemCreate", (void **)&p_cuMemCreate) &&
        vmm_resolve_one("cuMemRelease", (void **)&p_cuMemRelease) &&
        vmm_resolve_one("cuMemMap", (void **)&p_cuMemMap) &&
        vmm_resolve_one("cuMemUnmap", (void **)&p_cuMemUnmap) &&
        vmm_resolve_one("cuMemSetAccess", (void **)&p_cuMemSetAccess) &&
        vmm_resolve_one("cuMemGetAllocationGranularity", (void **)&p_cuMemGetAllocationGranularity)) {
        vmm_status = hipSuccess;
    }
}

/* Resolves the driver calls once and makes sure a context is current. */
static hipError_t vmm_ready(void) {
    pthread_once(&vmm_once, vmm_resolve);
    if (vmm_status != hipSuccess) {
        return vmm_status;
    }
    return hoc_ensure_context();
}

/* ---- translations ------------------------------------------------------ */

static hipError_t location_to_cuda(const struct hoc_hipMemLocation *in, CUmemLocation *out) {
    switch (in->type) {
    case hipMemLocationTypeDevice:
        out->type = CU_MEM_LOCATION_TYPE_DEVICE;
        break;
    case hipMemLocationTypeHost:
        out->type = CU_MEM_LOCATION_TYPE_HOST;
        break;
    case hipMemLocationTypeHostNuma:
        out->type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
        break;
    case hipMemLocationTypeHostNumaCurrent:
        out->type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
        break;
    default:
        return hipErrorInvalidValue;
    }
    out->id = in->id;
    return hipSuccess;
}

static hipError_t prop_to_cuda(const struct hoc_hipMemAllocationProp *in, CUmemAllocationProp *out) {
    if (in == NULL) {
        return hipErrorInvalidValue;
    }
    memset(out, 0, sizeof(*out));
    /* Only pinned memory has a CUDA twin for cuMemCreate (HIP's Uncached and
     * Managed do not). */
    if (in->type != hipMemAllocationTypePinned) {
        return in->type == 0 ? hipErrorInvalidValue : hipErrorNotSupported;
    }
    out->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    /* Handle-type bits agree (None 0, PosixFileDescriptor 1, Win32 2,
     * Win32Kmt 4, Fabric 8); any other bit is refused. */
    if ((in->requestedHandleTypes & ~0xfu) != 0) {
        return hipErrorInvalidValue;
    }
    out->requestedHandleTypes = (CUmemAllocationHandleType)in->requestedHandleTypes;
    hipError_t s = location_to_cuda(&in->location, &out->location);
    if (s != hipSuccess) {
        return s;
    }
    out->win32HandleMetaData = in->win32HandleMetaData;
    out->allocFlags.compressionType = in->compressionType;
    out->allocFlags.gpuDirectRDMACapable = in->gpuDirectRDMACapable;
    out->allocFlags.usage = in->usage;
    return hipSuccess;
}

static hipError_t access_to_cuda(unsigned int flags, CUmemAccess_flags *out) {
    switch (flags) {
    case hipMemAccessFlagsProtNone:
        *out = CU_MEM_ACCESS_FLAGS_PROT_NONE;
        return hipSuccess;
    case hipMemAccessFlagsProtRead:
        *out = CU_MEM_ACCESS_FLAGS_PROT_READ;
        return hipSuccess;
    case hipMemAccessFlagsProtReadWrite:
        *out = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        return hipSuccess;
    default:
        return hipErrorInvalidValue;
    }
}

/* vmm_ready, then `prop` translated into `cu`: the start of every entry
 * point that takes an allocation's properties. */
static hipError_t vmm_ready_for(const struct hoc_hipMemAllocationProp *prop, CUmemAllocationProp *cu) {
    hipError_t s = vmm_ready();
    if (s != hipSuccess) {
        return s;
    }
    return prop_to_cuda(prop, cu);
}

/* ---- entry points -------------------------------------------------------- */

HIP_API hipError_t hipMemGetAllocationGranularity(size_t *granularity, const struct hoc_hipMemAllocationProp *prop,
                                                  int option) {
    if (granularity == NULL) {
        return hipErrorInvalidValue;
    }
    CUmemAllocationGranularity_flags cu_option;
    if (option == hipMemAllocationGranularityMinimum) {
        cu_option = CU_MEM_ALLOC_GRANULARITY_MINIMUM;
    } else if (option == hipMemAllocationGranularityRecommended) {
        cu_option = CU_MEM_ALLOC_GRANULARITY_RECOMMENDED;
    } else {
        return hipErrorInvalidValue;
    }
    CUmemAllocationProp cu;
    hipError_t s = vmm_ready_for(prop, &cu);
    if (s != hipSuccess) {
        return s;
    }
    return TR(p_cuMemGetAllocationGranularity(granularity, &cu, cu_option));
}

HIP_API hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment, void *addr,
                                        unsigned long long flags) {
    HOC_FAULT("hipMemAddressReserve");
    if (ptr == NULL) {
        return hipErrorInvalidValue;
    }
    hipError_t s = vmm_ready();
    if (s != hipSuccess) {
        return s;
    }
    CUdeviceptr out = 0;
    s = TR(p_cuMemAddressReserve(&out, size, alignment, (CUdeviceptr)(uintptr_t)addr, flags));
    if (s == hipSuccess) {
        *ptr = (void *)(uintptr_t)out;
    }
    return s;
}

HIP_API hipError_t hipMemAddressFree(void *ptr, size_t size) {
    HOC_FAULT("hipMemAddressFree");
    hipError_t s = vmm_ready();
    if (s != hipSuccess) {
        return s;
    }
    return TR(p_cuMemAddressFree((CUdeviceptr)(uintptr_t)ptr, size));
}

HIP_API hipError_t hipMemCreate(hoc_hipMemGenericAllocationHandle_t *handle, size_t size,
                                const struct hoc_hipMemAllocationProp *prop, unsigned long long flags) {
    HOC_FAULT("hipMemCreate");
    if (handle == NULL) {
        return hipErrorInvalidValue;
    }
    CUmemAllocationProp cu;
    hipError_t s = vmm_ready_for(prop, &cu);
    if (s != hipSuccess) {
        return s;
    }
    CUmemGenericAllocationHandle out = 0;
    s = TR(p_cuMemCreate(&out, size, &cu, flags));
    if (s == hipSuccess) {
        *handle = (hoc_hipMemGenericAllocationHandle_t)(uintptr_t)out;
    }
    return s;
}

HIP_API hipError_t hipMemRelease(hoc_hipMemGenericAllocationHandle_t handle) {
    HOC_FAULT("hipMemRelease");
    hipError_t s = vmm_ready();
    if (s != hipSuccess) {
        return s;
    }
    return TR(p_cuMemRelease((CUmemGenericAllocationHandle)(uintptr_t)handle));
}

HIP_API hipError_t hipMemMap(void *ptr, size_t size, size_t offset, hoc_hipMemGenericAllocationHandle_t handle,
                             unsigned long long flags) {
    HOC_FAULT("hipMemMap");
    hipError_t s = vmm_ready();
    if (s != hipSuccess) {
        return s;
    }
    return TR(p_cuMemMap((CUdeviceptr)(uintptr_t)ptr, size, offset,
                         (CUmemGenericAllocationHandle)(uintptr_t)handle, flags));
}

HIP_API hipError_t hipMemUnmap(void *ptr, size_t size) {
    HOC_FAULT("hipMemUnmap");
    hipError_t s = vmm_ready();
    if (s != hipSuccess) {
        return s;
    }
    return TR(p_cuMemUnmap((CUdeviceptr)(uintptr_t)ptr, size));
}

/* At most this many access descriptors per call (a device and its peers). */
#define HOC_MAX_ACCESS_DESCS 64

HIP_API hipError_t hipMemSetAccess(void *ptr, size_t size, const struct hoc_hipMemAccessDesc *desc, size_t count) {
    HOC_FAULT("hipMemSetAccess");
    if ((desc == NULL && count > 0) || count > HOC_MAX_ACCESS_DESCS) {
        return hipErrorInvalidValue;
    }
    hipError_t s = vmm_ready();
    if (s != hipSuccess) {
        return s;
    }
    CUmemAccessDesc cu[HOC_MAX_ACCESS_DESCS];
    for (size_t i = 0; i < count; i++) {
        memset(&cu[i], 0, sizeof(cu[i]));
        s = location_to_cuda(&desc[i].location, &cu[i].location);
        if (s == hipSuccess) {
            s = access_to_cuda(desc[i].flags, &cu[i].flags);
        }
        if (s != hipSuccess) {
            return s;
        }
    }
    return TR(p_cuMemSetAccess((CUdeviceptr)(uintptr_t)ptr, size, cu, count));
}

hipError_t hoc_vmm_supported(int *value, int device) {
    pthread_once(&vmm_once, vmm_resolve);
    if (vmm_status == hipErrorNotSupported) {
        /* A driver without the calls: not supported, which is an answer. */
        *value = 0;
        return hipSuccess;
    }
    if (vmm_status != hipSuccess) {
        return vmm_status;
    }
    CUdevice dev = 0;
    hipError_t s = TR(p_cuDeviceGet(&dev, device));
    if (s != hipSuccess) {
        return s;
    }
    return TR(p_cuDeviceGetAttribute(value, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
}

/* HIP's layouts, as the bindings declare them. */
_Static_assert(sizeof(struct hoc_hipMemLocation) == 8, "hipMemLocation");
_Static_assert(sizeof(struct hoc_hipMemAccessDesc) == 12, "hipMemAccessDesc");
_Static_assert(sizeof(struct hoc_hipMemAllocationProp) == 32, "hipMemAllocationProp");
_Static_assert(offsetof(struct hoc_hipMemAllocationProp, location) == 8, "hipMemAllocationProp.location");
_Static_assert(offsetof(struct hoc_hipMemAllocationProp, win32HandleMetaData) == 16,
               "hipMemAllocationProp.win32HandleMetaData");
_Static_assert(offsetof(struct hoc_hipMemAllocationProp, compressionType) == 24,
               "hipMemAllocationProp.allocFlags");
/* The CUDA enumerators the translation names. */
_Static_assert(CU_MEM_ALLOCATION_TYPE_PINNED == 1, "CU_MEM_ALLOCATION_TYPE_PINNED");
_Static_assert(CU_MEM_LOCATION_TYPE_DEVICE == 1, "CU_MEM_LOCATION_TYPE_DEVICE");
_Static_assert(CU_MEM_ACCESS_FLAGS_PROT_READWRITE == 3, "CU_MEM_ACCESS_FLAGS_PROT_READWRITE");
_Static_assert(CU_MEM_HANDLE_TYPE_FABRIC == 8, "CU_MEM_HANDLE_TYPE_FABRIC");
_Static_assert(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED == 102,
               "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED");
