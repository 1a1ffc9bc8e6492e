//! Pinned host pages: `hipHostMalloc` / `hipHostFree`, read and written
//! directly by the host.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;
use std::vec::Vec;

use cubecl_hip_sys as hip;
use streamcore::platform::{HostStorage, PageId, Storage};

use crate::error::{HipError, check};
use crate::shared::Shared;

/// Alignment of every pinned page start (page-granular in practice; 256 is
/// what the core may rely on, matching device pages).
pub const HOST_ALIGNMENT: u64 = 256;

/// Pinned host memory for the staging pool. A page's id is its host address.
///
/// Release is deferred to `flush` as for [`crate::HipStorage`];
/// `hipHostFree` waits for device work still using the page. Dropping the
/// storage frees every page it still holds.
#[derive(Debug)]
pub struct HipHostStorage {
    live: BTreeMap<u64, u64>,
    pending: Vec<u64>,
    shared: Arc<Shared>,
}

impl HipHostStorage {
    pub(crate) fn new(shared: &Arc<Shared>) -> Self {
        Self {
            live: BTreeMap::new(),
            pending: Vec::new(),
            shared: Arc::clone(shared),
        }
    }

    /// The host address of `len` bytes at `offset` in a live page.
    fn span(
        &self,
        call: &'static str,
        page: PageId,
        offset: u64,
        len: usize,
    ) -> Result<*mut u8, HipError> {
        let size = *self
            .live
            .get(&page.0)
            .ok_or_else(|| HipError::invalid(call, "not a live page of this storage"))?;
        let end = offset
            .checked_add(len as u64)
            .filter(|&end| end <= size)
            .ok_or_else(|| HipError::invalid(call, "range outside the page"))?;
        debug_assert!(end <= size);
        Ok((page.0 + offset) as *mut u8)
    }

    fn release(queue: &mut Vec<u64>) -> Result<(), HipError> {
        while let Some(&address) = queue.last() {
            // SAFETY: `address` came from `hipHostMalloc`, left the live set
            // in `dealloc`, and is freed exactly once (popped only after
            // `hipHostFree` succeeded).
            check("hipHostFree", unsafe {
                hip::hipHostFree(address as *mut c_void)
            })?;
            queue.pop();
        }
        Ok(())
    }
}

impl Storage for HipHostStorage {
    type Error = HipError;

    fn alignment(&self) -> u64 {
        HOST_ALIGNMENT
    }

    fn alloc(&mut self, size: u64) -> Result<PageId, HipError> {
        let bytes = usize::try_from(size.max(1)).map_err(|_| {
            HipError::invalid("hipHostMalloc", "page size exceeds the address space")
        })?;
        self.shared.make_current()?;
        let mut address: *mut c_void = ptr::null_mut();
        // SAFETY: `address` is a valid out-pointer; `bytes` is non-zero and
        // the flag is HIP's default.
        let status = unsafe { hip::hipHostMalloc(&mut address, bytes, hip::hipHostMallocDefault) };
        check("hipHostMalloc", status)?;
        let id = address as u64;
        self.live.insert(id, size.max(1));
        self.shared.pages.host_page_added(id, size.max(1));
        Ok(PageId(id))
    }

    fn dealloc(&mut self, page: PageId) {
        if self.live.remove(&page.0).is_some() {
            // No copy may name the page from now on.
            self.shared.pages.host_page_retired(page.0);
            self.pending.push(page.0);
        }
    }

    fn flush(&mut self) -> Result<(), HipError> {
        if self.pending.is_empty() || self.shared.capturing() {
            return Ok(());
        }
        self.shared.make_current()?;
        // Waits for calls still queueing copies on these pages.
        self.shared.pages.host_pages_released(&self.pending);
        Self::release(&mut self.pending)
    }
}

impl HostStorage for HipHostStorage {
    fn write(&mut self, page: PageId, offset: u64, data: &[u8]) -> Result<(), HipError> {
        let dst = self.span("HostStorage::write", page, offset, data.len())?;
        // SAFETY: `dst .. dst + data.len()` lies inside a live pinned page
        // this storage owns (checked by `span`), which no Rust reference
        // aliases; `data` is a distinct Rust slice, so the ranges do not
        // overlap. The core writes only bytes no queued copy still reads.
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    fn read(&self, page: PageId, offset: u64, out: &mut [u8]) -> Result<(), HipError> {
        let src = self.span("HostStorage::read", page, offset, out.len())?;
        // SAFETY: `src .. src + out.len()` lies inside a live pinned page
        // this storage owns (checked by `span`); `out` is a distinct Rust
        // slice. The bytes are plain `u8`s, valid at any value; the core
        // reads only after synchronizing with every copy into them.
        unsafe { ptr::copy_nonoverlapping(src.cast_const(), out.as_mut_ptr(), out.len()) };
        Ok(())
    }
}

impl Drop for HipHostStorage {
    fn drop(&mut self) {
        for &page in self.live.keys() {
            self.shared.pages.host_page_retired(page);
        }
        self.pending.extend(self.live.keys().copied());
        self.live.clear();
        self.shared.pages.host_pages_released(&self.pending);
        // A failure cannot be reported from `drop`; the rest are leaked.
        let _ = self.shared.make_current();
        let _ = Self::release(&mut self.pending);
    }
}
