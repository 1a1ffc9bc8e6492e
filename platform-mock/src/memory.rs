//! Simulated memory: device and pinned host pages holding real bytes.
//!
//! Page ids come from one counter per platform, shared by device and host
//! pages, and are never reused, so an access to a released page is always
//! recognised. A page's bytes are held per written chunk (`bytes.rs`:
//! unwritten bytes read as zero), so a page of any size the storage accepted
//! costs only what was written into it.
//!
//! With virtual memory on, a device storage also hands out *reservations*:
//! pages whose bytes exist only where a chunk is committed. A reservation
//! costs nothing from the budget; each committed chunk costs its bytes until
//! it is decommitted, which drops its bytes and shadow at once.

use std::collections::BTreeMap;
use std::vec::Vec;

use streamcore::platform::PageId;

mod bytes;

use bytes::SparseBytes;

use crate::check::range_map::RangeMap;
use crate::check::shadow::Shadow;

/// Which memory a page belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryKind {
    /// Device memory (from a [`MockStorage`](crate::MockStorage)).
    Device,
    /// Pinned host memory (from a [`MockHostStorage`](crate::MockHostStorage)).
    Host,
}

/// Where a page is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum PageState {
    /// Allocated and not deallocated.
    Live,
    /// Passed to `dealloc` by op `op`; bytes kept until the storage flushes.
    Deallocated { op: u64 },
    /// Released by a flush after op `op` deallocated it; bytes gone.
    Released { op: u64 },
}

/// One page.
#[derive(Debug)]
pub(crate) struct Page {
    pub kind: MemoryKind,
    /// The storage that handed it out.
    pub storage: u64,
    /// Requested size: accesses must stay inside it.
    pub size: u64,
    /// Size rounded up to the alignment: what the page costs.
    pub reserved: u64,
    pub state: PageState,
    bytes: SparseBytes,
    pub shadow: RangeMap<Shadow>,
    /// A reservation's committed chunks (offset → length); `None` for a
    /// page backed whole.
    pub chunks: Option<BTreeMap<u64, u64>>,
}

impl Page {
    /// Copies `len` bytes from `offset` (zeros where never written or released).
    pub(crate) fn read(&self, offset: u64, len: u64) -> Vec<u8> {
        if matches!(self.state, PageState::Released { .. }) {
            return vec![0; len as usize];
        }
        self.bytes.read(offset, len)
    }

    /// Copies `data` in at `offset`; dropped on a released page or out of
    /// bounds (callers validate bounds first).
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) {
        if matches!(self.state, PageState::Released { .. }) || data.is_empty() {
            return;
        }
        if self.contains(offset, data.len() as u64) {
            self.bytes.write(self.size, offset, data);
        }
    }

    /// Whether `offset..offset + len` lies inside the page (and, in a
    /// reservation, inside committed chunks).
    pub(crate) fn contains(&self, offset: u64, len: u64) -> bool {
        let Some(end) = offset.checked_add(len).filter(|&e| e <= self.size) else {
            return false;
        };
        match &self.chunks {
            None => true,
            Some(chunks) => {
                let mut at = offset;
                while at < end {
                    match chunks.range(..=at).next_back() {
                        Some((&o, &l)) if o + l > at => at = o + l,
                        _ => return false,
                    }
                }
                true
            }
        }
    }

    /// Whether `offset..offset + len` overlaps a committed chunk.
    fn overlaps_chunk(&self, offset: u64, len: u64) -> bool {
        self.chunks.as_ref().is_some_and(|c| {
            c.iter()
                .any(|(&o, &l)| o < offset.saturating_add(len) && offset < o + l)
        })
    }

    /// Forgets the bytes and the shadow of `offset..offset + len`.
    fn forget(&mut self, offset: u64, len: u64) {
        self.bytes.forget(offset, len);
        self.shadow.set(offset, offset + len, Shadow::default());
    }
}

/// Why a virtual-memory call was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum VmError {
    /// Virtual memory is off, or the page is not a live reservation.
    NotReservation,
    /// Offset or length off the granularity, or outside the reservation.
    Misaligned,
    /// The range overlaps a committed chunk (commit) or is not exactly one
    /// (decommit).
    Overlap,
    /// The budget is spent.
    OutOfMemory,
    /// A reservation larger than the storage's terms allow.
    TooLarge,
}

/// All pages of one platform, with the byte accounting per memory kind.
#[derive(Debug)]
pub(crate) struct Memory {
    pages: BTreeMap<u64, Page>,
    next_id: u64,
    alignment: u64,
    used: [u64; 2],
    limit: [u64; 2],
    /// Virtual memory: the granularity of chunks (`None`: off).
    pub granularity: Option<u64>,
}

fn slot(kind: MemoryKind) -> usize {
    match kind {
        MemoryKind::Device => 0,
        MemoryKind::Host => 1,
    }
}

impl Memory {
    /// Empty memories of `device` and `host` bytes, pages aligned to `alignment`.
    pub(crate) fn new(device: u64, host: u64, alignment: u64) -> Self {
        Self {
            pages: BTreeMap::new(),
            next_id: 1,
            alignment,
            used: [0, 0],
            limit: [device, host],
            granularity: None,
        }
    }

    /// The same memories with virtual memory of `granularity`-byte chunks
    /// (`None`: off).
    pub(crate) fn with_virtual_memory(mut self, granularity: Option<u64>) -> Self {
        self.granularity = granularity.filter(|g| g.is_power_of_two());
        self
    }

    /// Bytes reserved by live or not yet released pages of `kind`.
    pub(crate) fn used(&self, kind: MemoryKind) -> u64 {
        self.used[slot(kind)]
    }

    /// Allocates a page, or `None` when it does not fit.
    pub(crate) fn alloc(&mut self, kind: MemoryKind, storage: u64, size: u64) -> Option<PageId> {
        let a = self.alignment;
        let reserved = size.max(1).checked_next_multiple_of(a)?;
        let used = self.used[slot(kind)].checked_add(reserved)?;
        if used > self.limit[slot(kind)] {
            return None;
        }
        self.used[slot(kind)] = used;
        let id = self.next_id;
        self.next_id += 1;
        self.pages.insert(
            id,
            Page {
                kind,
                storage,
                size,
                reserved,
                state: PageState::Live,
                bytes: SparseBytes::default(),
                shadow: RangeMap::new(size, Shadow::default()),
                chunks: None,
            },
        );
        Some(PageId(id))
    }

    /// The largest reservation: the device's memory in whole granules
    /// (`None`: virtual memory is off).
    pub(crate) fn max_reservation(&self) -> Option<u64> {
        let g = self.granularity?;
        let total = self.limit[0].max(g);
        Some(
            total
                .checked_next_multiple_of(g)
                .unwrap_or(total & !(g - 1)),
        )
    }

    /// Reserves `size` bytes of device addresses with nothing committed.
    pub(crate) fn reserve(&mut self, storage: u64, size: u64) -> Result<PageId, VmError> {
        let g = self.granularity.ok_or(VmError::NotReservation)?;
        if size == 0 || size % g != 0 {
            return Err(VmError::Misaligned);
        }
        if Some(size) > self.max_reservation() {
            return Err(VmError::TooLarge);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.pages.insert(
            id,
            Page {
                kind: MemoryKind::Device,
                storage,
                size,
                reserved: 0,
                state: PageState::Live,
                bytes: SparseBytes::default(),
                shadow: RangeMap::new(size, Shadow::default()),
                chunks: Some(BTreeMap::new()),
            },
        );
        Ok(PageId(id))
    }

    /// Commits `len` bytes at `offset` of a live reservation of `storage`.
    pub(crate) fn commit(
        &mut self,
        storage: u64,
        page: PageId,
        offset: u64,
        len: u64,
    ) -> Result<(), VmError> {
        let g = self.granularity.ok_or(VmError::NotReservation)?;
        let used = self.used[0];
        let limit = self.limit[0];
        let p = self.reservation(storage, page)?;
        let end = offset.checked_add(len).ok_or(VmError::Misaligned)?;
        if len == 0 || offset % g != 0 || len % g != 0 || end > p.size {
            return Err(VmError::Misaligned);
        }
        if p.overlaps_chunk(offset, len) {
            return Err(VmError::Overlap);
        }
        let next = used.checked_add(len).filter(|&u| u <= limit);
        let Some(next) = next else {
            return Err(VmError::OutOfMemory);
        };
        p.forget(offset, len);
        if let Some(c) = &mut p.chunks {
            c.insert(offset, len);
        }
        p.reserved += len;
        self.used[0] = next;
        Ok(())
    }

    /// Decommits the chunk committed at `offset` (exactly `len` bytes):
    /// its bytes and shadow are gone at once.
    pub(crate) fn decommit(
        &mut self,
        storage: u64,
        page: PageId,
        offset: u64,
        len: u64,
    ) -> Result<(), VmError> {
        let p = self.reservation(storage, page)?;
        let chunks = p.chunks.as_mut().ok_or(VmError::NotReservation)?;
        if chunks.get(&offset) != Some(&len) {
            return Err(VmError::Overlap);
        }
        chunks.remove(&offset);
        p.forget(offset, len);
        p.reserved -= len;
        self.used[0] = self.used[0].saturating_sub(len);
        Ok(())
    }

    fn reservation(&mut self, storage: u64, page: PageId) -> Result<&mut Page, VmError> {
        match self.pages.get_mut(&page.0) {
            Some(p) if p.chunks.is_some() && p.storage == storage && p.state == PageState::Live => {
                Ok(p)
            }
            _ => Err(VmError::NotReservation),
        }
    }

    /// The page with this id (live, deallocated or released).
    pub(crate) fn page(&self, id: PageId) -> Option<&Page> {
        self.pages.get(&id.0)
    }

    /// The page with this id, mutably.
    pub(crate) fn page_mut(&mut self, id: PageId) -> Option<&mut Page> {
        self.pages.get_mut(&id.0)
    }

    /// Releases a deallocated page: drops its bytes and shadow, returns its
    /// bytes to the budget. Returns whether it was released.
    pub(crate) fn release(&mut self, id: PageId) -> bool {
        let Some(p) = self.pages.get_mut(&id.0) else {
            return false;
        };
        let PageState::Deallocated { op } = p.state else {
            return false;
        };
        p.state = PageState::Released { op };
        p.bytes = SparseBytes::default();
        p.shadow = RangeMap::new(0, Shadow::default());
        if let Some(c) = &mut p.chunks {
            c.clear();
        }
        let k = slot(p.kind);
        self.used[k] = self.used[k].saturating_sub(p.reserved);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_accounts_aligned_bytes_and_refuses_past_the_limit() {
        let mut m = Memory::new(1024, 512, 256);
        let a = m.alloc(MemoryKind::Device, 0, 1).unwrap();
        assert_eq!(m.used(MemoryKind::Device), 256);
        let b = m.alloc(MemoryKind::Device, 0, 700).unwrap();
        assert_eq!(m.used(MemoryKind::Device), 1024);
        assert_ne!(a, b);
        assert!(m.alloc(MemoryKind::Device, 0, 1).is_none());
        assert_eq!(
            m.used(MemoryKind::Device),
            1024,
            "a refused alloc changes nothing"
        );
        assert!(m.alloc(MemoryKind::Host, 0, 512).is_some());
        m.page_mut(a).unwrap().state = PageState::Deallocated { op: 9 };
        assert!(m.release(a));
        assert!(!m.release(a));
        assert_eq!(m.used(MemoryKind::Device), 768);
        let c = m.alloc(MemoryKind::Device, 0, 1).unwrap();
        assert!(c.0 > b.0, "ids are never reused");
    }

    #[test]
    fn bytes_are_lazy_and_released_pages_read_zero() {
        let mut m = Memory::new(1 << 20, 0, 256);
        let a = m.alloc(MemoryKind::Device, 0, 16).unwrap();
        let p = m.page_mut(a).unwrap();
        assert_eq!(p.read(0, 4), vec![0; 4]);
        p.write(2, &[1, 2]);
        assert_eq!(p.read(0, 4), vec![0, 0, 1, 2]);
        assert!(p.contains(0, 16));
        assert!(!p.contains(1, 16));
        assert!(!p.contains(u64::MAX, 2));
        p.state = PageState::Deallocated { op: 1 };
        assert_eq!(p.read(2, 2), vec![1, 2], "deallocated bytes stay valid");
        m.release(a);
        assert_eq!(m.page(a).unwrap().read(2, 2), vec![0, 0]);
    }

    #[test]
    fn a_huge_reservation_holds_only_the_bytes_written_into_it() {
        let g = 64 << 10;
        let mut m = Memory::new(1 << 57, 0, 256).with_virtual_memory(Some(g));
        let size = 1 << 56;
        let r = m.reserve(0, size).unwrap();
        m.commit(0, r, size - g, g).unwrap();
        let p = m.page_mut(r).unwrap();
        p.write(size - 4, &[1, 2, 3, 4]);
        p.write(0, &[5]);
        assert_eq!(p.read(size - 5, 5), vec![0, 1, 2, 3, 4]);
        assert_eq!(p.read(0, 1), vec![0], "bytes not committed are not written");
        assert!(
            p.bytes.held() <= g,
            "{} bytes held for 4 written",
            p.bytes.held()
        );
        m.decommit(0, r, size - g, g).unwrap();
        assert_eq!(m.page(r).unwrap().bytes.held(), 0);
    }
}
