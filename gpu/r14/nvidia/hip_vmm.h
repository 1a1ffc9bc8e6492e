/* HIP's virtual-memory types with HIP's layout (cubecl-hip-sys
 * 7.14.6085001, bindings_60850.rs), for the entry points in hip_vmm.c. */
#ifndef HIP_VMM_H
#define HIP_VMM_H

#include "hip_on_cuda.h"

/* hipMemLocation: a location type (1 device, 2 host, 3 host NUMA node,
 * 4 host NUMA node of the calling thread) and its id. */
struct hoc_hipMemLocation {
    unsigned int type;
    int id;
};

/* hipMemAccessDesc: where, and how (0 none, 1 read, 3 read-write). */
struct hoc_hipMemAccessDesc {
    struct hoc_hipMemLocation location;
    unsigned int flags;
};

/* hipMemAllocationProp, allocFlags flattened (4 bytes, where CUDA's has 8). */
struct hoc_hipMemAllocationProp {
    unsigned int type;
    unsigned int requestedHandleTypes;
    struct hoc_hipMemLocation location;
    void *win32HandleMetaData;
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
};

/* HIP's opaque handle; here it carries CUDA's 64-bit handle by value. */
typedef struct hoc_ihipMemGenericAllocationHandle *hoc_hipMemGenericAllocationHandle_t;

/* hipDeviceGetAttribute(VirtualMemoryManagementSupported = 89) for
 * `device`: 1 when the driver supports the calls, else 0. */
hipError_t hoc_vmm_supported(int *value, int device);

#endif
