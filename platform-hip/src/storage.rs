//! Device pages: `hipMalloc` / `hipFree`, releases deferred to `flush`.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;
use std::vec::Vec;

use cubecl_hip_sys as hip;
use streamcore::platform::{CallCost, PageId, Storage, StorageCosts, StorageTerms};

use crate::error::{HipError, check};
use crate::shared::Shared;

/// Every page start `hipMalloc` returns is aligned to at least this many
/// bytes (HIP and CUDA both guarantee 256).
pub const DEVICE_ALIGNMENT: u64 = 256;

/// `hipMalloc` packs requests up to this size into shared chunks and charges
/// their size; larger ones take whole [`MALLOC_GRANULARITY`] units (measured
/// on an NVIDIA H200 through the HIP-on-CUDA shim: 1.5 MiB costs 2 MiB,
/// 5 MiB costs 6 MiB; see `BENCHMARKS.md`).
pub const MALLOC_PACK_LIMIT: u64 = 1 << 20;

/// The unit `hipMalloc` charges above the pack limit.
pub const MALLOC_GRANULARITY: u64 = 2 << 20;

/// What `hipMalloc` and `hipFree` cost (H200, medians of
/// `platform-hip/nvidia/calibrate.c`, fitted over 2–256 MiB; the same
/// figures as the mock's driver model, `streamcore_mock::replay::H200`):
/// `hipMalloc` 33 µs up to 8 MiB, 162 µs at 64 MiB, 635 µs at 256 MiB;
/// `hipFree` 30–33 µs up to 8 MiB, 144 µs at 256 MiB, and it waits for all
/// work queued on the device.
pub const MALLOC_COSTS: StorageCosts = {
    let mut c = StorageCosts::UNKNOWN;
    c.alloc = CallCost::new(31_000, 2_400);
    c.release = CallCost::new(29_000, 450);
    c.release_synchronizes = true;
    c
};

/// Device memory for one stream's pools. A page's id is its device address.
///
/// `dealloc` only queues the page; `flush` calls `hipFree`, which waits for
/// the device work that may still use it. While any stream of the platform is
/// capturing, `flush` keeps the queue (a free inside a capture would
/// synchronize the device) and releases it at the next flush outside one.
/// Dropping the storage frees every page it still holds.
#[derive(Debug)]
pub struct HipStorage {
    live: BTreeMap<u64, u64>,
    pending: Vec<u64>,
    calls: u64,
    shared: Arc<Shared>,
}

impl HipStorage {
    pub(crate) fn new(shared: &Arc<Shared>) -> Self {
        Self {
            live: BTreeMap::new(),
            pending: Vec::new(),
            calls: 0,
            shared: Arc::clone(shared),
        }
    }

    /// Bytes held in live pages (not counting pages queued for release).
    pub fn live_bytes(&self) -> u64 {
        self.live.values().sum()
    }

    /// Pages queued by `dealloc` and not yet released.
    pub fn pending_pages(&self) -> usize {
        self.pending.len()
    }

    /// `hipMalloc` and `hipFree` calls made so far.
    pub fn driver_calls(&self) -> u64 {
        self.calls
    }

    fn release(queue: &mut Vec<u64>, calls: &mut u64) -> Result<(), HipError> {
        while let Some(&address) = queue.last() {
            // SAFETY: `address` came from `hipMalloc`, was removed from the
            // live set by `dealloc`, and is freed exactly once: it leaves the
            // queue only after `hipFree` succeeded.
            check("hipFree", unsafe { hip::hipFree(address as *mut c_void) })?;
            *calls += 1;
            queue.pop();
        }
        Ok(())
    }
}

impl Storage for HipStorage {
    type Error = HipError;

    fn alignment(&self) -> u64 {
        DEVICE_ALIGNMENT
    }

    fn alloc(&mut self, size: u64) -> Result<PageId, HipError> {
        let bytes = usize::try_from(size.max(1))
            .map_err(|_| HipError::invalid("hipMalloc", "page size exceeds the address space"))?;
        self.shared.make_current()?;
        let mut address: *mut c_void = ptr::null_mut();
        // SAFETY: `address` is a valid out-pointer; `bytes` is non-zero.
        check("hipMalloc", unsafe { hip::hipMalloc(&mut address, bytes) })?;
        self.calls += 1;
        let id = address as u64;
        self.live.insert(id, size.max(1));
        self.shared.pages.device_page_added(id, size.max(1));
        Ok(PageId(id))
    }

    fn dealloc(&mut self, page: PageId) {
        if self.live.remove(&page.0).is_some() {
            // No range may name the page from now on.
            self.shared.pages.device_page_retired(page.0);
            self.pending.push(page.0);
        }
    }

    fn terms(&self) -> StorageTerms {
        let mut terms = StorageTerms::plain(DEVICE_ALIGNMENT);
        terms.granularity = MALLOC_GRANULARITY;
        terms.pack_limit = MALLOC_PACK_LIMIT;
        terms.costs = MALLOC_COSTS;
        terms
    }

    fn flush(&mut self) -> Result<(), HipError> {
        if self.pending.is_empty() || self.shared.capturing() {
            return Ok(());
        }
        self.shared.make_current()?;
        // Waits for calls still queueing work on these pages.
        self.shared.pages.device_pages_released(&self.pending);
        Self::release(&mut self.pending, &mut self.calls)
    }
}

impl Drop for HipStorage {
    fn drop(&mut self) {
        for &page in self.live.keys() {
            self.shared.pages.device_page_retired(page);
        }
        self.pending.extend(self.live.keys().copied());
        self.live.clear();
        if self.pending.is_empty() {
            // Nothing to free: no driver call (none may be loadable).
            return;
        }
        self.shared.pages.device_pages_released(&self.pending);
        // A failure shows in `hipFree`'s status.
        let _ = self.shared.make_current();
        // A failure cannot be reported from `drop`; the rest are leaked.
        let _ = Self::release(&mut self.pending, &mut self.calls);
    }
}
