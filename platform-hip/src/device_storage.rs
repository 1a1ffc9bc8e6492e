//! The device storage a [`crate::HipPlatform`] hands its pools: virtual
//! memory where the runtime supports it, `hipMalloc` otherwise, chosen at
//! run time.

use streamcore::platform::{PageId, Storage, StorageTerms};

use crate::error::HipError;
use crate::storage::{DEVICE_ALIGNMENT, HipStorage};
use crate::vmm_storage::HipVmmStorage;

/// Which storage a platform hands out from
/// [`device_storage`](streamcore::platform::Platform::device_storage).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoragePreference {
    /// Virtual memory when the device supports it (the attribute
    /// `VirtualMemoryManagementSupported` is set and
    /// `hipMemGetAllocationGranularity` answers), else `hipMalloc`.
    #[default]
    Auto,
    /// Always `hipMalloc` / `hipFree`.
    Malloc,
}

/// Device memory for one stream's pools: [`HipVmmStorage`] or, where the
/// runtime has no virtual-memory support, [`HipStorage`].
#[derive(Debug)]
#[non_exhaustive]
pub enum HipDeviceStorage {
    /// Over the driver's virtual-memory calls.
    Vmm(HipVmmStorage),
    /// Over `hipMalloc` / `hipFree`.
    Malloc(HipStorage),
}

impl HipDeviceStorage {
    /// A short name of the storage in use: `"vmm"` or `"malloc"`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Vmm(_) => "vmm",
            Self::Malloc(_) => "malloc",
        }
    }

    /// Bytes held in live pages (not counting pages queued for release):
    /// requested sizes for `hipMalloc`, mapped bytes for virtual memory.
    pub fn live_bytes(&self) -> u64 {
        match self {
            Self::Vmm(s) => s.live_bytes(),
            Self::Malloc(s) => s.live_bytes(),
        }
    }

    /// Pages queued by `dealloc` and not yet released.
    pub fn pending_pages(&self) -> usize {
        match self {
            Self::Vmm(s) => s.pending_pages(),
            Self::Malloc(s) => s.pending_pages(),
        }
    }

    /// Driver calls the storage made so far (each HIP entry point called
    /// counts one).
    pub fn driver_calls(&self) -> u64 {
        match self {
            Self::Vmm(s) => s.driver_calls(),
            Self::Malloc(s) => s.driver_calls(),
        }
    }
}

impl Storage for HipDeviceStorage {
    type Error = HipError;

    fn alignment(&self) -> u64 {
        match self {
            Self::Vmm(s) => s.alignment(),
            Self::Malloc(_) => DEVICE_ALIGNMENT,
        }
    }

    fn alloc(&mut self, size: u64) -> Result<PageId, HipError> {
        match self {
            Self::Vmm(s) => s.alloc(size),
            Self::Malloc(s) => s.alloc(size),
        }
    }

    fn dealloc(&mut self, page: PageId) {
        match self {
            Self::Vmm(s) => s.dealloc(page),
            Self::Malloc(s) => s.dealloc(page),
        }
    }

    fn flush(&mut self) -> Result<(), HipError> {
        match self {
            Self::Vmm(s) => s.flush(),
            Self::Malloc(s) => s.flush(),
        }
    }

    fn terms(&self) -> StorageTerms {
        match self {
            Self::Vmm(s) => s.terms(),
            Self::Malloc(s) => s.terms(),
        }
    }

    fn reserve(&mut self, size: u64) -> Result<PageId, HipError> {
        match self {
            Self::Vmm(s) => Storage::reserve(s, size),
            Self::Malloc(s) => s.reserve(size),
        }
    }

    fn commit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), HipError> {
        match self {
            Self::Vmm(s) => Storage::commit(s, page, offset, len),
            Self::Malloc(s) => s.commit(page, offset, len),
        }
    }

    fn decommit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), HipError> {
        match self {
            Self::Vmm(s) => Storage::decommit(s, page, offset, len),
            Self::Malloc(s) => s.decommit(page, offset, len),
        }
    }
}
