//! Device pages over the driver's virtual memory: address ranges reserved
//! once, physical chunks mapped into them and unmapped in place.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::vec::Vec;

use streamcore::platform::{ErrorKind, PageId, Storage};

use crate::error::HipError;
use crate::shared::Shared;
use crate::storage::DEVICE_ALIGNMENT;
use crate::vmm::{self, Chunk};

/// One reserved address range and the chunks mapped into it, by offset.
#[derive(Debug)]
struct Range {
    size: u64,
    chunks: BTreeMap<u64, Chunk>,
}

/// Driver calls a storage made, by kind.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct VmmCalls {
    /// `hipMemAddressReserve`.
    pub reserve: u64,
    /// `hipMemAddressFree`.
    pub address_free: u64,
    /// `hipMemCreate` + `hipMemMap` + `hipMemSetAccess`, counted once per chunk.
    pub map: u64,
    /// `hipMemUnmap` + `hipMemRelease`, counted once per chunk.
    pub unmap: u64,
}

impl VmmCalls {
    /// Every driver call, one per HIP entry point called.
    pub fn total(&self) -> u64 {
        self.reserve + self.address_free + 3 * self.map + 2 * self.unmap
    }
}

/// Device memory over the driver's virtual-memory API.
///
/// - A page from `alloc` is an address range of whole granules with one
///   chunk mapped over all of it.
/// - A *reservation* (`reserve_range`) is an address range with nothing
///   behind it; `commit` maps a chunk of whole granules into it, `decommit`
///   unmaps and releases one chunk at once. The caller guarantees that no
///   queued work touches a chunk it decommits (the driver does not wait).
/// - `dealloc` queues a page or an emptied reservation; `flush` unmaps what
///   is still mapped in it and frees the address range. Like `decommit`, it
///   does not synchronize the device: the caller deallocates a page only
///   once no queued work touches it (the core frees slices through
///   fence-gated drop queues).
/// - Nothing is mapped or unmapped while any stream of the platform is
///   capturing: `commit` and `decommit` fail with `CaptureUnsupported`
///   (changing nothing) and `flush` keeps its queue for the next flush.
///
/// Dropping the storage synchronizes the device once, then unmaps and frees
/// everything it still holds.
#[derive(Debug)]
pub struct HipVmmStorage {
    granularity: u64,
    ranges: BTreeMap<u64, Range>,
    pending: Vec<(u64, Range)>,
    /// Chunks already unmapped whose release failed.
    orphans: Vec<Chunk>,
    calls: VmmCalls,
    mapped: u64,
    shared: Arc<Shared>,
}

impl HipVmmStorage {
    /// A storage whose chunks are multiples of `granularity` (a power of
    /// two, from [`vmm::probe`]).
    pub(crate) fn new(shared: &Arc<Shared>, granularity: u64) -> Self {
        Self {
            granularity,
            ranges: BTreeMap::new(),
            pending: Vec::new(),
            orphans: Vec::new(),
            calls: VmmCalls::default(),
            mapped: 0,
            shared: Arc::clone(shared),
        }
    }

    /// Offsets and lengths of chunks are multiples of this many bytes.
    pub fn granularity(&self) -> u64 {
        self.granularity
    }

    /// Bytes of device memory mapped now (live and queued pages alike).
    pub fn mapped_bytes(&self) -> u64 {
        self.mapped
    }

    /// Bytes mapped in live pages and reservations (not counting those
    /// queued for release).
    pub fn live_bytes(&self) -> u64 {
        self.ranges
            .values()
            .flat_map(|r| r.chunks.values())
            .map(Chunk::size)
            .sum()
    }

    /// Driver calls made so far.
    pub fn calls(&self) -> VmmCalls {
        self.calls
    }

    /// Pages and reservations queued by `dealloc` and not yet released.
    pub fn pending_pages(&self) -> usize {
        self.pending.len()
    }

    fn round_up(&self, call: &'static str, size: u64) -> Result<u64, HipError> {
        let g = self.granularity;
        size.max(1)
            .checked_add(g - 1)
            .map(|v| v & !(g - 1))
            .ok_or_else(|| {
                HipError::invalid(call, "size overflows when rounded to the granularity")
            })
    }

    fn refuse_in_capture(&self, call: &'static str) -> Result<(), HipError> {
        if self.shared.capturing() {
            Err(HipError::platform(
                call,
                ErrorKind::CaptureUnsupported,
                Some(cubecl_hip_sys::hipError_t_hipErrorStreamCaptureUnsupported),
                "hipErrorStreamCaptureUnsupported",
                "no memory is mapped or unmapped while a stream of the platform is capturing",
            ))
        } else {
            Ok(())
        }
    }

    /// Reserves an address range of `size` bytes (rounded up to the
    /// granularity) with nothing mapped; its id is its start address.
    pub fn reserve_range(&mut self, size: u64) -> Result<PageId, HipError> {
        let size = self.round_up("hipMemAddressReserve", size)?;
        self.shared.make_current()?;
        let address = vmm::reserve(size, self.granularity)?;
        self.calls.reserve += 1;
        self.ranges.insert(
            address,
            Range {
                size,
                chunks: BTreeMap::new(),
            },
        );
        Ok(PageId(address))
    }

    /// Maps a new chunk of `len` bytes at `offset` of the live range `page`.
    /// `offset` and `len` are multiples of the granularity, the chunk lies
    /// inside the range and overlaps no mapped chunk; anything else is an
    /// `InvalidValue` error. Out of memory: `OutOfMemory`. On any error
    /// nothing changed.
    pub fn commit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), HipError> {
        const CALL: &str = "hipMemMap";
        self.refuse_in_capture(CALL)?;
        let g = self.granularity;
        let range = self
            .ranges
            .get(&page.0)
            .ok_or_else(|| HipError::invalid(CALL, "not a live reservation of this storage"))?;
        if len == 0 || offset % g != 0 || len % g != 0 {
            return Err(HipError::invalid(
                CALL,
                "offset and length must be non-zero multiples of the granularity",
            ));
        }
        let end = offset
            .checked_add(len)
            .filter(|&end| end <= range.size)
            .ok_or_else(|| HipError::invalid(CALL, "chunk outside the reservation"))?;
        let overlaps_before = range
            .chunks
            .range(..=offset)
            .next_back()
            .is_some_and(|(&o, c)| o + c.size() > offset);
        let overlaps_after = range.chunks.range(offset..end).next().is_some();
        if overlaps_before || overlaps_after {
            return Err(HipError::invalid(CALL, "chunk overlaps a mapped chunk"));
        }
        self.shared.make_current()?;
        let chunk = vmm::create(self.shared.device, len)?;
        // SAFETY: `page.0 + offset .. + len` lies inside the live range
        // reserved at `page.0` (checked above) and overlaps no mapping.
        if let Err(e) = unsafe { vmm::map(self.shared.device, page.0 + offset, &chunk) } {
            // A chunk that could not be released is leaked; the map error
            // is the one worth reporting.
            let _ = vmm::release(chunk);
            return Err(e);
        }
        self.calls.map += 1;
        self.mapped += len;
        if let Some(range) = self.ranges.get_mut(&page.0) {
            range.chunks.insert(offset, chunk);
        }
        Ok(())
    }

    /// Unmaps and releases the chunk committed at `offset` (`len` bytes) of
    /// the live range `page`, at once. The caller guarantees no queued work
    /// touches it. On an error the chunk stays mapped and usable.
    pub fn decommit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), HipError> {
        const CALL: &str = "hipMemUnmap";
        self.refuse_in_capture(CALL)?;
        let range = self
            .ranges
            .get_mut(&page.0)
            .ok_or_else(|| HipError::invalid(CALL, "not a live reservation of this storage"))?;
        match range.chunks.get(&offset) {
            Some(c) if c.size() == len => {}
            _ => {
                return Err(HipError::invalid(
                    CALL,
                    "no chunk of that length committed at that offset",
                ));
            }
        }
        self.shared.make_current()?;
        // SAFETY: exactly one mapping made by `commit` (checked above); the
        // caller guarantees that no queued work touches it.
        unsafe { vmm::unmap(page.0 + offset, len) }?;
        self.calls.unmap += 1;
        self.mapped -= len;
        if let Some(chunk) = range.chunks.remove(&offset) {
            if let Err((chunk, e)) = vmm::release(chunk) {
                // The mapping is gone; the memory is still held by the
                // handle: a later flush or the drop releases it.
                self.orphans.push(chunk);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Allocates one page of `size` bytes (rounded up to the granularity):
    /// a range with one chunk mapped over all of it.
    pub(crate) fn alloc_page(&mut self, size: u64) -> Result<PageId, HipError> {
        let rounded = self.round_up("hipMemCreate", size)?;
        let page = self.reserve_range(rounded)?;
        if let Err(e) = self.commit(page, 0, rounded) {
            if let Some(range) = self.ranges.remove(&page.0) {
                // SAFETY: the range was reserved just above and has nothing
                // mapped (the commit failed and changed nothing).
                if unsafe { vmm::address_free(page.0, range.size) }.is_ok() {
                    self.calls.address_free += 1;
                }
            }
            return Err(e);
        }
        Ok(page)
    }

    /// Queues a page or reservation for release at the next flush.
    pub(crate) fn dealloc_page(&mut self, page: PageId) {
        if let Some(range) = self.ranges.remove(&page.0) {
            self.pending.push((page.0, range));
        }
    }

    /// Unmaps, releases and frees everything queued, unless a capture is
    /// open (then the queue waits for the next flush).
    pub(crate) fn flush_pending(&mut self) -> Result<(), HipError> {
        if (self.pending.is_empty() && self.orphans.is_empty()) || self.shared.capturing() {
            return Ok(());
        }
        self.shared.make_current()?;
        self.release_pending()
    }

    fn release_pending(&mut self) -> Result<(), HipError> {
        while let Some(chunk) = self.orphans.pop() {
            if let Err((chunk, e)) = vmm::release(chunk) {
                self.orphans.push(chunk);
                return Err(e);
            }
        }
        while let Some((address, mut range)) = self.pending.pop() {
            if let Err(e) = self.release_range(address, &mut range) {
                self.pending.push((address, range));
                return Err(e);
            }
        }
        Ok(())
    }

    /// Unmaps and releases every chunk of a deallocated range, then frees
    /// its addresses. On an error the rest stays in `range`.
    fn release_range(&mut self, address: u64, range: &mut Range) -> Result<(), HipError> {
        while let Some((offset, chunk)) = range.chunks.pop_first() {
            let len = chunk.size();
            // SAFETY: the chunk was mapped at `address + offset` by `commit`
            // and is unmapped once (it left the map just above); the page
            // was deallocated, so no queued work touches it (the storage's
            // contract with its caller).
            if let Err(e) = unsafe { vmm::unmap(address + offset, len) } {
                range.chunks.insert(offset, chunk);
                return Err(e);
            }
            self.calls.unmap += 1;
            self.mapped -= len;
            if let Err((chunk, e)) = vmm::release(chunk) {
                self.orphans.push(chunk);
                return Err(e);
            }
        }
        // SAFETY: the range came from `hipMemAddressReserve`, every chunk in
        // it was unmapped above, and it is freed once (the caller drops it
        // on success).
        unsafe { vmm::address_free(address, range.size) }?;
        self.calls.address_free += 1;
        Ok(())
    }
}

impl Drop for HipVmmStorage {
    fn drop(&mut self) {
        let ranges = std::mem::take(&mut self.ranges);
        self.pending.extend(ranges);
        if self.pending.is_empty() && self.orphans.is_empty() {
            return;
        }
        // Queued work may still use live pages: wait for it once.
        // SAFETY: no arguments; the runtime is loaded (a platform made this
        // storage).
        let _ = unsafe { cubecl_hip_sys::hipDeviceSynchronize() };
        // A failure cannot be reported from `drop`; the rest are leaked.
        let _ = self.shared.make_current();
        let _ = self.release_pending();
    }
}

impl Storage for HipVmmStorage {
    type Error = HipError;

    fn alignment(&self) -> u64 {
        // Pages start at granule boundaries, which honours the device
        // alignment. What the pools align their slices to, not the unit the
        // driver charges (that is the granularity).
        DEVICE_ALIGNMENT
    }

    fn alloc(&mut self, size: u64) -> Result<PageId, HipError> {
        self.alloc_page(size)
    }

    fn dealloc(&mut self, page: PageId) {
        self.dealloc_page(page);
    }

    fn flush(&mut self) -> Result<(), HipError> {
        self.flush_pending()
    }
}
