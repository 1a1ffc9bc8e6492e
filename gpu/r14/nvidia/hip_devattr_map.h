/* hipDeviceAttribute_t (cubecl-hip-sys 7.14.6085001, bindings_60850.rs) ->
 * cudaDeviceAttr (CUDA 13.0 driver_types.h). The numbers differ everywhere.
 * TotalGlobalMem (84) has no CUDA twin and is answered from the memory info. */
#ifndef HIP_DEVATTR_MAP_H
#define HIP_DEVATTR_MAP_H

struct hoc_devattr { int hip; int cuda; };

static const struct hoc_devattr hoc_devattrs[] = {
    {56, cudaDevAttrMaxThreadsPerBlock}, /* hipDeviceAttributeMaxThreadsPerBlock = 56 -> cudaDevAttrMaxThreadsPerBlock = 1 */
    {26, cudaDevAttrMaxBlockDimX}, /* hipDeviceAttributeMaxBlockDimX = 26 -> cudaDevAttrMaxBlockDimX = 2 */
    {27, cudaDevAttrMaxBlockDimY}, /* hipDeviceAttributeMaxBlockDimY = 27 -> cudaDevAttrMaxBlockDimY = 3 */
    {28, cudaDevAttrMaxBlockDimZ}, /* hipDeviceAttributeMaxBlockDimZ = 28 -> cudaDevAttrMaxBlockDimZ = 4 */
    {29, cudaDevAttrMaxGridDimX}, /* hipDeviceAttributeMaxGridDimX = 29 -> cudaDevAttrMaxGridDimX = 5 */
    {30, cudaDevAttrMaxGridDimY}, /* hipDeviceAttributeMaxGridDimY = 30 -> cudaDevAttrMaxGridDimY = 6 */
    {31, cudaDevAttrMaxGridDimZ}, /* hipDeviceAttributeMaxGridDimZ = 31 -> cudaDevAttrMaxGridDimZ = 7 */
    {74, cudaDevAttrMaxSharedMemoryPerBlock}, /* hipDeviceAttributeMaxSharedMemoryPerBlock = 74 -> cudaDevAttrMaxSharedMemoryPerBlock = 8 */
    {83, cudaDevAttrTotalConstantMemory}, /* hipDeviceAttributeTotalConstantMemory = 83 -> cudaDevAttrTotalConstantMemory = 9 */
    {87, cudaDevAttrWarpSize}, /* hipDeviceAttributeWarpSize = 87 -> cudaDevAttrWarpSize = 10 */
    {71, cudaDevAttrMaxRegistersPerBlock}, /* hipDeviceAttributeMaxRegistersPerBlock = 71 -> cudaDevAttrMaxRegistersPerBlock = 12 */
    {5, cudaDevAttrClockRate}, /* hipDeviceAttributeClockRate = 5 -> cudaDevAttrClockRate = 13 */
    {60, cudaDevAttrMemoryClockRate}, /* hipDeviceAttributeMemoryClockRate = 60 -> cudaDevAttrMemoryClockRate = 36 */
    {59, cudaDevAttrGlobalMemoryBusWidth}, /* hipDeviceAttributeMemoryBusWidth = 59 -> cudaDevAttrGlobalMemoryBusWidth = 37 */
    {63, cudaDevAttrMultiProcessorCount}, /* hipDeviceAttributeMultiprocessorCount = 63 -> cudaDevAttrMultiProcessorCount = 16 */
    {6, cudaDevAttrComputeMode}, /* hipDeviceAttributeComputeMode = 6 -> cudaDevAttrComputeMode = 20 */
    {19, cudaDevAttrL2CacheSize}, /* hipDeviceAttributeL2CacheSize = 19 -> cudaDevAttrL2CacheSize = 38 */
    {57, cudaDevAttrMaxThreadsPerMultiProcessor}, /* hipDeviceAttributeMaxThreadsPerMultiProcessor = 57 -> cudaDevAttrMaxThreadsPerMultiProcessor = 39 */
    {23, cudaDevAttrComputeCapabilityMajor}, /* hipDeviceAttributeComputeCapabilityMajor = 23 -> cudaDevAttrComputeCapabilityMajor = 75 */
    {61, cudaDevAttrComputeCapabilityMinor}, /* hipDeviceAttributeComputeCapabilityMinor = 61 -> cudaDevAttrComputeCapabilityMinor = 76 */
    {8, cudaDevAttrConcurrentKernels}, /* hipDeviceAttributeConcurrentKernels = 8 -> cudaDevAttrConcurrentKernels = 31 */
    {67, cudaDevAttrPciBusId}, /* hipDeviceAttributePciBusId = 67 -> cudaDevAttrPciBusId = 33 */
    {68, cudaDevAttrPciDeviceId}, /* hipDeviceAttributePciDeviceId = 68 -> cudaDevAttrPciDeviceId = 34 */
    {10002, cudaDevAttrMaxSharedMemoryPerMultiprocessor}, /* hipDeviceAttributeMaxSharedMemoryPerMultiprocessor = 10002 -> cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81 */
    {17, cudaDevAttrIsMultiGpuBoard}, /* hipDeviceAttributeIsMultiGpuBoard = 17 -> cudaDevAttrIsMultiGpuBoard = 84 */
    {16, cudaDevAttrIntegrated}, /* hipDeviceAttributeIntegrated = 16 -> cudaDevAttrIntegrated = 18 */
    {39, cudaDevAttrMaxTexture1DWidth}, /* hipDeviceAttributeMaxTexture1DWidth = 39 -> cudaDevAttrMaxTexture1DWidth = 21 */
    {43, cudaDevAttrMaxTexture2DWidth}, /* hipDeviceAttributeMaxTexture2DWidth = 43 -> cudaDevAttrMaxTexture2DWidth = 22 */
    {44, cudaDevAttrMaxTexture2DHeight}, /* hipDeviceAttributeMaxTexture2DHeight = 44 -> cudaDevAttrMaxTexture2DHeight = 23 */
    {49, cudaDevAttrMaxTexture3DWidth}, /* hipDeviceAttributeMaxTexture3DWidth = 49 -> cudaDevAttrMaxTexture3DWidth = 24 */
    {50, cudaDevAttrMaxTexture3DHeight}, /* hipDeviceAttributeMaxTexture3DHeight = 50 -> cudaDevAttrMaxTexture3DHeight = 25 */
    {51, cudaDevAttrMaxTexture3DDepth}, /* hipDeviceAttributeMaxTexture3DDepth = 51 -> cudaDevAttrMaxTexture3DDepth = 26 */
    {58, cudaDevAttrMaxPitch}, /* hipDeviceAttributeMaxPitch = 58 -> cudaDevAttrMaxPitch = 11 */
    {81, cudaDevAttrTextureAlignment}, /* hipDeviceAttributeTextureAlignment = 81 -> cudaDevAttrTextureAlignment = 14 */
    {82, cudaDevAttrTexturePitchAlignment}, /* hipDeviceAttributeTexturePitchAlignment = 82 -> cudaDevAttrTexturePitchAlignment = 51 */
    {18, cudaDevAttrKernelExecTimeout}, /* hipDeviceAttributeKernelExecTimeout = 18 -> cudaDevAttrKernelExecTimeout = 17 */
    {3, cudaDevAttrCanMapHostMemory}, /* hipDeviceAttributeCanMapHostMemory = 3 -> cudaDevAttrCanMapHostMemory = 19 */
    {0, cudaDevAttrEccEnabled}, /* hipDeviceAttributeEccEnabled = 0 -> cudaDevAttrEccEnabled = 32 */
    {10, cudaDevAttrCooperativeLaunch}, /* hipDeviceAttributeCooperativeLaunch = 10 -> cudaDevAttrCooperativeLaunch = 95 */
    {90, cudaDevAttrHostRegisterSupported}, /* hipDeviceAttributeHostRegisterSupported = 90 -> cudaDevAttrHostRegisterSupported = 99 */
    {9, cudaDevAttrConcurrentManagedAccess}, /* hipDeviceAttributeConcurrentManagedAccess = 9 -> cudaDevAttrConcurrentManagedAccess = 89 */
    {24, cudaDevAttrManagedMemory}, /* hipDeviceAttributeManagedMemory = 24 -> cudaDevAttrManagedMemory = 83 */
    {66, cudaDevAttrPageableMemoryAccessUsesHostPageTables}, /* hipDeviceAttributePageableMemoryAccessUsesHostPageTables = 66 -> cudaDevAttrPageableMemoryAccessUsesHostPageTables = 100 */
    {65, cudaDevAttrPageableMemoryAccess}, /* hipDeviceAttributePageableMemoryAccess = 65 -> cudaDevAttrPageableMemoryAccess = 88 */
    {13, cudaDevAttrDirectManagedMemAccessFromHost}, /* hipDeviceAttributeDirectManagedMemAccessFromHost = 13 -> cudaDevAttrDirectManagedMemAccessFromHost = 101 */
    {14, cudaDevAttrGlobalL1CacheSupported}, /* hipDeviceAttributeGlobalL1CacheSupported = 14 -> cudaDevAttrGlobalL1CacheSupported = 79 */
    {25, cudaDevAttrMaxBlocksPerMultiprocessor}, /* hipDeviceAttributeMaxBlocksPerMultiProcessor = 25 -> cudaDevAttrMaxBlocksPerMultiprocessor = 106 */
    {62, cudaDevAttrMultiGpuBoardGroupID}, /* hipDeviceAttributeMultiGpuBoardGroupID = 62 -> cudaDevAttrMultiGpuBoardGroupID = 85 */
    {73, cudaDevAttrReservedSharedMemoryPerBlock}, /* hipDeviceAttributeReservedSharedMemPerBlock = 73 -> cudaDevAttrReservedSharedMemoryPerBlock = 111 */
    {77, cudaDevAttrSingleToDoublePrecisionPerfRatio}, /* hipDeviceAttributeSingleToDoublePrecisionPerfRatio = 77 -> cudaDevAttrSingleToDoublePrecisionPerfRatio = 87 */
    {78, cudaDevAttrStreamPrioritiesSupported}, /* hipDeviceAttributeStreamPrioritiesSupported = 78 -> cudaDevAttrStreamPrioritiesSupported = 78 */
    {79, cudaDevAttrSurfaceAlignment}, /* hipDeviceAttributeSurfaceAlignment = 79 -> cudaDevAttrSurfaceAlignment = 30 */
    {80, cudaDevAttrTccDriver}, /* hipDeviceAttributeTccDriver = 80 -> cudaDevAttrTccDriver = 35 */
    {85, cudaDevAttrUnifiedAddressing}, /* hipDeviceAttributeUnifiedAddressing = 85 -> cudaDevAttrUnifiedAddressing = 41 */
    {88, cudaDevAttrMemoryPoolsSupported}, /* hipDeviceAttributeMemoryPoolsSupported = 88 -> cudaDevAttrMemoryPoolsSupported = 115 */
    {1, cudaDevAttrMaxAccessPolicyWindowSize}, /* hipDeviceAttributeAccessPolicyMaxWindowSize = 1 -> cudaDevAttrMaxAccessPolicyWindowSize = 109 */
    {2, cudaDevAttrAsyncEngineCount}, /* hipDeviceAttributeAsyncEngineCount = 2 -> cudaDevAttrAsyncEngineCount = 40 */
    {4, cudaDevAttrCanUseHostPointerForRegisteredMem}, /* hipDeviceAttributeCanUseHostPointerForRegisteredMem = 4 -> cudaDevAttrCanUseHostPointerForRegisteredMem = 91 */
    {7, cudaDevAttrComputePreemptionSupported}, /* hipDeviceAttributeComputePreemptionSupported = 7 -> cudaDevAttrComputePreemptionSupported = 90 */
    {15, cudaDevAttrHostNativeAtomicSupported}, /* hipDeviceAttributeHostNativeAtomicSupported = 15 -> cudaDevAttrHostNativeAtomicSupported = 86 */
    {12, cudaDevAttrGpuOverlap}, /* hipDeviceAttributeDeviceOverlap = 12 -> cudaDevAttrGpuOverlap = 15 */
    {20, cudaDevAttrLocalL1CacheSupported}, /* hipDeviceAttributeLocalL1CacheSupported = 20 -> cudaDevAttrLocalL1CacheSupported = 80 */
    {32, cudaDevAttrMaxSurface1DWidth}, /* hipDeviceAttributeMaxSurface1D = 32 -> cudaDevAttrMaxSurface1DWidth = 55 */
    {41, cudaDevAttrMaxTexture1DLinearWidth}, /* hipDeviceAttributeMaxTexture1DLinear = 41 -> cudaDevAttrMaxTexture1DLinearWidth = 69 */
    {42, cudaDevAttrMaxTexture1DMipmappedWidth}, /* hipDeviceAttributeMaxTexture1DMipmap = 42 -> cudaDevAttrMaxTexture1DMipmappedWidth = 77 */
    {53, cudaDevAttrMaxTextureCubemapWidth}, /* hipDeviceAttributeMaxTextureCubemap = 53 -> cudaDevAttrMaxTextureCubemapWidth = 52 */
    {69, cudaDevAttrPciDomainId}, /* hipDeviceAttributePciDomainId = 69 -> cudaDevAttrPciDomainId = 50 */
    {70, cudaDevAttrMaxPersistingL2CacheSize}, /* hipDeviceAttributePersistingL2CacheMaxSize = 70 -> cudaDevAttrMaxPersistingL2CacheSize = 108 */
    {72, cudaDevAttrMaxRegistersPerMultiprocessor}, /* hipDeviceAttributeMaxRegistersPerMultiprocessor = 72 -> cudaDevAttrMaxRegistersPerMultiprocessor = 82 */
    {75, cudaDevAttrMaxSharedMemoryPerBlockOptin}, /* hipDeviceAttributeSharedMemPerBlockOptin = 75 -> cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 */
    {76, cudaDevAttrMaxSharedMemoryPerMultiprocessor}, /* hipDeviceAttributeSharedMemPerMultiprocessor = 76 -> cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81 */
    {91, cudaDevAttrMemoryPoolSupportedHandleTypes}, /* hipDeviceAttributeMemoryPoolSupportedHandleTypes = 91 -> cudaDevAttrMemoryPoolSupportedHandleTypes = 119 */
    {92, cudaDevAttrHostNumaId}, /* hipDeviceAttributeHostNumaId = 92 -> cudaDevAttrHostNumaId = 134 */
};

/* The CUDA numbers this table was written against. */
_Static_assert(cudaDevAttrMaxThreadsPerBlock == 1, "cudaDevAttrMaxThreadsPerBlock");
_Static_assert(cudaDevAttrMaxBlockDimX == 2, "cudaDevAttrMaxBlockDimX");
_Static_assert(cudaDevAttrMaxBlockDimY == 3, "cudaDevAttrMaxBlockDimY");
_Static_assert(cudaDevAttrMaxBlockDimZ == 4, "cudaDevAttrMaxBlockDimZ");
_Static_assert(cudaDevAttrMaxGridDimX == 5, "cudaDevAttrMaxGridDimX");
_Static_assert(cudaDevAttrMaxGridDimY == 6, "cudaDevAttrMaxGridDimY");
_Static_assert(cudaDevAttrMaxGridDimZ == 7, "cudaDevAttrMaxGridDimZ");
_Static_assert(cudaDevAttrMaxSharedMemoryPerBlock == 8, "cudaDevAttrMaxSharedMemoryPerBlock");
_Static_assert(cudaDevAttrTotalConstantMemory == 9, "cudaDevAttrTotalConstantMemory");
_Static_assert(cudaDevAttrWarpSize == 10, "cudaDevAttrWarpSize");
_Static_assert(cudaDevAttrMaxRegistersPerBlock == 12, "cudaDevAttrMaxRegistersPerBlock");
_Static_assert(cudaDevAttrClockRate == 13, "cudaDevAttrClockRate");
_Static_assert(cudaDevAttrMemoryClockRate == 36, "cudaDevAttrMemoryClockRate");
_Static_assert(cudaDevAttrGlobalMemoryBusWidth == 37, "cudaDevAttrGlobalMemoryBusWidth");
_Static_assert(cudaDevAttrMultiProcessorCount == 16, "cudaDevAttrMultiProcessorCount");
_Static_assert(cudaDevAttrComputeMode == 20, "cudaDevAttrComputeMode");
_Static_assert(cudaDevAttrL2CacheSize == 38, "cudaDevAttrL2CacheSize");
_Static_assert(cudaDevAttrMaxThreadsPerMultiProcessor == 39, "cudaDevAttrMaxThreadsPerMultiProcessor");
_Static_assert(cudaDevAttrComputeCapabilityMajor == 75, "cudaDevAttrComputeCapabilityMajor");
_Static_assert(cudaDevAttrComputeCapabilityMinor == 76, "cudaDevAttrComputeCapabilityMinor");
_Static_assert(cudaDevAttrConcurrentKernels == 31, "cudaDevAttrConcurrentKernels");
_Static_assert(cudaDevAttrPciBusId == 33, "cudaDevAttrPciBusId");
_Static_assert(cudaDevAttrPciDeviceId == 34, "cudaDevAttrPciDeviceId");
_Static_assert(cudaDevAttrMaxSharedMemoryPerMultiprocessor == 81, "cudaDevAttrMaxSharedMemoryPerMultiprocessor");
_Static_assert(cudaDevAttrIsMultiGpuBoard == 84, "cudaDevAttrIsMultiGpuBoard");
_Static_assert(cudaDevAttrIntegrated == 18, "cudaDevAttrIntegrated");
_Static_assert(cudaDevAttrMaxTexture1DWidth == 21, "cudaDevAttrMaxTexture1DWidth");
_Static_assert(cudaDevAttrMaxTexture2DWidth == 22, "cudaDevAttrMaxTexture2DWidth");
_Static_assert(cudaDevAttrMaxTexture2DHeight == 23, "cudaDevAttrMaxTexture2DHeight");
_Static_assert(cudaDevAttrMaxTexture3DWidth == 24, "cudaDevAttrMaxTexture3DWidth");
_Static_assert(cudaDevAttrMaxTexture3DHeight == 25, "cudaDevAttrMaxTexture3DHeight");
_Static_assert(cudaDevAttrMaxTexture3DDepth == 26, "cudaDevAttrMaxTexture3DDepth");
_Static_assert(cudaDevAttrMaxPitch == 11, "cudaDevAttrMaxPitch");
_Static_assert(cudaDevAttrTextureAlignment == 14, "cudaDevAttrTextureAlignment");
_Static_assert(cudaDevAttrTexturePitchAlignment == 51, "cudaDevAttrTexturePitchAlignment");
_Static_assert(cudaDevAttrKernelExecTimeout == 17, "cudaDevAttrKernelExecTimeout");
_Static_assert(cudaDevAttrCanMapHostMemory == 19, "cudaDevAttrCanMapHostMemory");
_Static_assert(cudaDevAttrEccEnabled == 32, "cudaDevAttrEccEnabled");
_Static_assert(cudaDevAttrCooperativeLaunch == 95, "cudaDevAttrCooperativeLaunch");
_Static_assert(cudaDevAttrHostRegisterSupported == 99, "cudaDevAttrHostRegisterSupported");
_Static_assert(cudaDevAttrConcurrentManagedAccess == 89, "cudaDevAttrConcurrentManagedAccess");
_Static_assert(cudaDevAttrManagedMemory == 83, "cudaDevAttrManagedMemory");
_Static_assert(cudaDevAttrPageableMemoryAccessUsesHostPageTables == 100, "cudaDevAttrPageableMemoryAccessUsesHostPageTables");
_Static_assert(cudaDevAttrPageableMemoryAccess == 88, "cudaDevAttrPageableMemoryAccess");
_Static_assert(cudaDevAttrDirectManagedMemAccessFromHost == 101, "cudaDevAttrDirectManagedMemAccessFromHost");
_Static_assert(cudaDevAttrGlobalL1CacheSupported == 79, "cudaDevAttrGlobalL1CacheSupported");
_Static_assert(cudaDevAttrMaxBlocksPerMultiprocessor == 106, "cudaDevAttrMaxBlocksPerMultiprocessor");
_Static_assert(cudaDevAttrMultiGpuBoardGroupID == 85, "cudaDevAttrMultiGpuBoardGroupID");
_Static_assert(cudaDevAttrReservedSharedMemoryPerBlock == 111, "cudaDevAttrReservedSharedMemoryPerBlock");
_Static_assert(cudaDevAttrSingleToDoublePrecisionPerfRatio == 87, "cudaDevAttrSingleToDoublePrecisionPerfRatio");
_Static_assert(cudaDevAttrStreamPrioritiesSupported == 78, "cudaDevAttrStreamPrioritiesSupported");
_Static_assert(cudaDevAttrSurfaceAlignment == 30, "cudaDevAttrSurfaceAlignment");
_Static_assert(cudaDevAttrTccDriver == 35, "cudaDevAttrTccDriver");
_Static_assert(cudaDevAttrUnifiedAddressing == 41, "cudaDevAttrUnifiedAddressing");
_Static_assert(cudaDevAttrMemoryPoolsSupported == 115, "cudaDevAttrMemoryPoolsSupported");
_Static_assert(cudaDevAttrMaxAccessPolicyWindowSize == 109, "cudaDevAttrMaxAccessPolicyWindowSize");
_Static_assert(cudaDevAttrAsyncEngineCount == 40, "cudaDevAttrAsyncEngineCount");
_Static_assert(cudaDevAttrCanUseHostPointerForRegisteredMem == 91, "cudaDevAttrCanUseHostPointerForRegisteredMem");
_Static_assert(cudaDevAttrComputePreemptionSupported == 90, "cudaDevAttrComputePreemptionSupported");
_Static_assert(cudaDevAttrHostNativeAtomicSupported == 86, "cudaDevAttrHostNativeAtomicSupported");
_Static_assert(cudaDevAttrGpuOverlap == 15, "cudaDevAttrGpuOverlap");
_Static_assert(cudaDevAttrLocalL1CacheSupported == 80, "cudaDevAttrLocalL1CacheSupported");
_Static_assert(cudaDevAttrMaxSurface1DWidth == 55, "cudaDevAttrMaxSurface1DWidth");
_Static_assert(cudaDevAttrMaxTexture1DLinearWidth == 69, "cudaDevAttrMaxTexture1DLinearWidth");
_Static_assert(cudaDevAttrMaxTexture1DMipmappedWidth == 77, "cudaDevAttrMaxTexture1DMipmappedWidth");
_Static_assert(cudaDevAttrMaxTextureCubemapWidth == 52, "cudaDevAttrMaxTextureCubemapWidth");
_Static_assert(cudaDevAttrPciDomainId == 50, "cudaDevAttrPciDomainId");
_Static_assert(cudaDevAttrMaxPersistingL2CacheSize == 108, "cudaDevAttrMaxPersistingL2CacheSize");
_Static_assert(cudaDevAttrMaxRegistersPerMultiprocessor == 82, "cudaDevAttrMaxRegistersPerMultiprocessor");
_Static_assert(cudaDevAttrMaxSharedMemoryPerBlockOptin == 97, "cudaDevAttrMaxSharedMemoryPerBlockOptin");
_Static_assert(cudaDevAttrMaxSharedMemoryPerMultiprocessor == 81, "cudaDevAttrMaxSharedMemoryPerMultiprocessor");
_Static_assert(cudaDevAttrMemoryPoolSupportedHandleTypes == 119, "cudaDevAttrMemoryPoolSupportedHandleTypes");
_Static_assert(cudaDevAttrHostNumaId == 134, "cudaDevAttrHostNumaId");

#endif
