//! Storages: device pages and pinned host pages of a [`MockPlatform`](crate::MockPlatform).
//!
//! Both share the platform's state, so an allocation while a capture is open
//! invalidates it, and a page freed here is recognised by every later
//! access. `dealloc` keeps the page readable by queued work; `flush` lets all
//! queued work complete (as a driver's free does) and then releases the
//! pages deallocated through this storage since the last flush.

use std::sync::{Arc, Mutex, MutexGuard};
use std::vec::Vec;

use streamcore::platform::{HostStorage, PageId, ResizableTerms, Storage, StorageTerms};

use crate::device::State;
use crate::error::MockError;
use crate::memory::MemoryKind;

fn lock(shared: &Mutex<State>) -> MutexGuard<'_, State> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// Device pages for one stream's pools.
#[derive(Debug)]
pub struct MockStorage {
    pub(crate) shared: Arc<Mutex<State>>,
    pub(crate) id: u64,
    pub(crate) alignment: u64,
    pub(crate) pending: Vec<PageId>,
}

/// Pinned host pages: the host reads and writes them directly.
#[derive(Debug)]
pub struct MockHostStorage {
    pub(crate) shared: Arc<Mutex<State>>,
    pub(crate) id: u64,
    pub(crate) alignment: u64,
    pub(crate) pending: Vec<PageId>,
}

fn alloc(shared: &Mutex<State>, kind: MemoryKind, id: u64, size: u64) -> Result<PageId, MockError> {
    let mut st = lock(shared);
    let r = st.alloc(kind, id, size);
    st.outcome("alloc", r)
}

fn dealloc(
    shared: &Mutex<State>,
    kind: MemoryKind,
    id: u64,
    page: PageId,
    pending: &mut Vec<PageId>,
) {
    if lock(shared).dealloc(kind, id, page) {
        pending.push(page);
    }
}

fn flush(
    shared: &Mutex<State>,
    kind: MemoryKind,
    pending: &mut Vec<PageId>,
) -> Result<(), MockError> {
    let mut st = lock(shared);
    let r = st.flush(kind, pending);
    st.outcome("flush", r)?;
    pending.clear();
    Ok(())
}

impl MockStorage {
    /// Pages deallocated and waiting for the next flush.
    pub fn pending(&self) -> &[PageId] {
        &self.pending
    }
}

impl MockHostStorage {
    /// Pages deallocated and waiting for the next flush.
    pub fn pending(&self) -> &[PageId] {
        &self.pending
    }
}

impl Storage for MockStorage {
    type Error = MockError;

    fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Fails with `OutOfMemory` past the configured total, and with
    /// `CaptureUnsupported` (invalidating every open capture) while a
    /// capture is open.
    fn alloc(&mut self, size: u64) -> Result<PageId, MockError> {
        alloc(&self.shared, MemoryKind::Device, self.id, size)
    }

    /// A page that is not live in this storage is reported as an
    /// [`InvalidFree`](crate::HazardKind::InvalidFree) hazard and ignored.
    fn dealloc(&mut self, page: PageId) {
        dealloc(
            &self.shared,
            MemoryKind::Device,
            self.id,
            page,
            &mut self.pending,
        );
    }

    fn flush(&mut self) -> Result<(), MockError> {
        flush(&self.shared, MemoryKind::Device, &mut self.pending)
    }

    /// Resizable pages when the platform was configured with
    /// [`virtual_memory`](crate::MockConfig::virtual_memory); reservations
    /// are as large as the device. The call costs the config declares
    /// ([`storage_costs`](crate::MockConfig::storage_costs): the H200
    /// driver's by default).
    fn terms(&self) -> StorageTerms {
        let st = lock(&self.shared);
        let mut t = StorageTerms::plain(self.alignment);
        t.costs = st.storage_costs;
        if let (Some(g), Some(max)) = (st.memory.granularity, st.memory.max_reservation()) {
            t.resizable = Some(ResizableTerms::new(g, max));
        }
        t
    }

    /// Fails (invalid) when virtual memory is off, or `size` is off the
    /// granularity or larger than the terms' largest reservation.
    fn reserve(&mut self, size: u64) -> Result<PageId, MockError> {
        let mut st = lock(&self.shared);
        let r = st.reserve(self.id, size);
        st.outcome("reserve", r)
    }

    /// Fails with `OutOfMemory` past the configured total, with
    /// `CaptureUnsupported` (invalidating every open capture) while a
    /// capture is open, and (invalid) on a range off the granularity or over
    /// a committed chunk.
    fn commit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), MockError> {
        let mut st = lock(&self.shared);
        let r = st.commit(self.id, page, offset, len);
        st.outcome("commit", r)
    }

    /// Unmaps at once; queued work that still touches the bytes is a
    /// [`UseAfterFree`](crate::HazardKind::UseAfterFree) hazard.
    fn decommit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), MockError> {
        let mut st = lock(&self.shared);
        let r = st.decommit(self.id, page, offset, len);
        st.outcome("decommit", r)
    }
}

impl Storage for MockHostStorage {
    type Error = MockError;

    fn alignment(&self) -> u64 {
        self.alignment
    }

    /// As [`MockStorage::alloc`], against the pinned host budget.
    fn alloc(&mut self, size: u64) -> Result<PageId, MockError> {
        alloc(&self.shared, MemoryKind::Host, self.id, size)
    }

    fn dealloc(&mut self, page: PageId) {
        dealloc(
            &self.shared,
            MemoryKind::Host,
            self.id,
            page,
            &mut self.pending,
        );
    }

    fn flush(&mut self) -> Result<(), MockError> {
        flush(&self.shared, MemoryKind::Host, &mut self.pending)
    }
}

impl HostStorage for MockHostStorage {
    /// Checked like any access: writing bytes a queued copy still reads (or
    /// writes) without having synchronized with it is a
    /// [`HostWritePending`](crate::HazardKind::HostWritePending) hazard.
    fn write(&mut self, page: PageId, offset: u64, data: &[u8]) -> Result<(), MockError> {
        let mut st = lock(&self.shared);
        let r = st.host_write(MemoryKind::Host, Some(self.id), page, offset, data);
        st.outcome("host_write", r)
    }

    /// Reading bytes a queued `copy_to_host` writes before synchronizing
    /// with it is a [`HostReadPending`](crate::HazardKind::HostReadPending)
    /// hazard, whether or not the copy happened to complete.
    fn read(&self, page: PageId, offset: u64, out: &mut [u8]) -> Result<(), MockError> {
        let mut st = lock(&self.shared);
        let r = st.host_read(MemoryKind::Host, Some(self.id), page, offset, out);
        st.outcome("host_read", r)
    }
}
