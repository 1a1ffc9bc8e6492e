//! Memory calls: allocation, deallocation, release, and host access to
//! pinned (or, for test setup, device) bytes.

use std::vec::Vec;

use streamcore::platform::{ErrorKind, PageId};

use super::State;

/// A refused virtual-memory call as the platform's error.
fn vm_error(op: &str, e: VmError, bytes: u64) -> MockError {
    match e {
        VmError::OutOfMemory => MockError::new(
            ErrorKind::OutOfMemory,
            std::format!("{op}: cannot commit {bytes} bytes of device memory"),
        ),
        VmError::NotReservation => MockError::invalid(std::format!(
            "{op}: not a live reservation of this storage (or virtual memory is off)"
        )),
        VmError::Misaligned => MockError::invalid(std::format!(
            "{op}: {bytes} bytes off the granularity or outside the reservation"
        )),
        VmError::Overlap => MockError::invalid(std::format!(
            "{op}: the range overlaps a committed chunk, or is not exactly one"
        )),
        VmError::TooLarge => MockError::invalid(std::format!(
            "{op}: {bytes} bytes, more than the largest reservation"
        )),
    }
}
use super::command::Touch;
use super::submit::use_after_free;
use crate::check::shadow::AccessRec;
use crate::check::{Agent, ByteRange, Hazard, HazardKind, OpKind, OpRef};
use crate::counters::Call;
use crate::error::MockError;
use crate::memory::{MemoryKind, PageState, VmError};

impl State {
    /// While a capture is open, a call that takes or gives back memory
    /// (`reason` says which) invalidates every capture and fails, as the
    /// driver's would.
    fn refuse_in_capture(&mut self, reason: &str) -> Result<(), MockError> {
        if self.any_capture_open() {
            self.invalidate_all(reason);
            return Err(MockError::new(ErrorKind::CaptureUnsupported, reason));
        }
        Ok(())
    }

    /// Allocates a page of `size` bytes of `kind` for storage `storage`.
    pub(crate) fn alloc(
        &mut self,
        kind: MemoryKind,
        storage: u64,
        size: u64,
    ) -> Result<PageId, MockError> {
        self.refuse_in_capture("a storage allocation while a capture was open")?;
        let Some(page) = self.memory.alloc(kind, storage, size) else {
            return Err(MockError::new(
                ErrorKind::OutOfMemory,
                std::format!(
                    "cannot allocate {size} bytes of {kind:?} memory ({} in use)",
                    self.memory.used(kind)
                ),
            ));
        };
        match kind {
            MemoryKind::Device => self.counters.allocs += 1,
            MemoryKind::Host => self.counters.host_allocs += 1,
        }
        self.calls.push(Call::Alloc {
            memory: kind,
            page,
            size,
        });
        Ok(page)
    }

    /// Marks a page deallocated. Returns `false` (and reports an
    /// [`HazardKind::InvalidFree`]) if it is not a live page of `storage`.
    pub(crate) fn dealloc(&mut self, kind: MemoryKind, storage: u64, page: PageId) -> bool {
        let op = self.next_op();
        let current = OpRef {
            op,
            agent: Agent::Host,
            kind: OpKind::Dealloc,
        };
        let (previous, bytes) = match self.memory.page_mut(page) {
            Some(p) if p.kind == kind && p.storage == storage && p.state == PageState::Live => {
                p.state = PageState::Deallocated { op };
                match kind {
                    MemoryKind::Device => self.counters.deallocs += 1,
                    MemoryKind::Host => self.counters.host_deallocs += 1,
                }
                self.calls.push(Call::Dealloc { memory: kind, page });
                return true;
            }
            Some(p) => {
                let previous = match p.state {
                    PageState::Deallocated { op } | PageState::Released { op } => Some(OpRef {
                        op,
                        agent: Agent::Host,
                        kind: OpKind::Dealloc,
                    }),
                    PageState::Live => None,
                };
                let bytes = ByteRange {
                    memory: p.kind,
                    page,
                    offset: 0,
                    len: p.size,
                };
                (previous, Some(bytes))
            }
            None => (None, None),
        };
        self.hazards.push(Hazard {
            kind: HazardKind::InvalidFree,
            current,
            previous,
            bytes,
        });
        false
    }

    /// Releases `pages` (deallocated through one storage) after letting all
    /// queued work complete, as a driver's free synchronizes the device.
    /// The host's clock does not advance: a flush is not a synchronization
    /// the core may rely on. Returns how many pages were released.
    pub(crate) fn flush(&mut self, kind: MemoryKind, pages: &[PageId]) -> Result<u64, MockError> {
        if !pages.is_empty() {
            self.refuse_in_capture("a flush releasing pages while a capture was open")?;
        }
        if !pages.is_empty() {
            self.run_until(State::idle)?;
        }
        let mut released = 0;
        for p in pages {
            if self.memory.release(*p) {
                released += 1;
            }
        }
        self.counters.flushes += 1;
        self.counters.pages_released += released;
        self.calls.push(Call::Flush {
            memory: kind,
            released,
        });
        Ok(released)
    }

    /// Reserves `size` bytes of device addresses for storage `storage`.
    pub(crate) fn reserve(&mut self, storage: u64, size: u64) -> Result<PageId, MockError> {
        let page = self
            .memory
            .reserve(storage, size)
            .map_err(|e| vm_error("reserve", e, size))?;
        self.calls.push(Call::Alloc {
            memory: MemoryKind::Device,
            page,
            size: 0,
        });
        Ok(page)
    }

    /// Commits a chunk of a reservation. Like an allocation, it invalidates
    /// every open capture and fails while one is open.
    pub(crate) fn commit(
        &mut self,
        storage: u64,
        page: PageId,
        offset: u64,
        len: u64,
    ) -> Result<(), MockError> {
        self.refuse_in_capture("a commit while a capture was open")?;
        self.memory
            .commit(storage, page, offset, len)
            .map_err(|e| vm_error("commit", e, len))?;
        self.counters.allocs += 1;
        self.calls.push(Call::Alloc {
            memory: MemoryKind::Device,
            page,
            size: len,
        });
        Ok(())
    }

    /// Decommits a chunk at once, without letting queued work complete (as
    /// the driver's unmap does): any queued command that still touches its
    /// bytes is a [`HazardKind::UseAfterFree`]. While a capture is open it
    /// invalidates every capture and fails, as a flush releasing pages does.
    pub(crate) fn decommit(
        &mut self,
        storage: u64,
        page: PageId,
        offset: u64,
        len: u64,
    ) -> Result<(), MockError> {
        self.refuse_in_capture("a decommit while a capture was open")?;
        let op = self.next_op();
        let end = offset.saturating_add(len);
        let mut found = Vec::new();
        for (sid, st) in self.streams.iter().enumerate() {
            for q in &st.queue {
                for t in q.cmd.touches() {
                    if t.page == page && t.offset < end && offset < t.offset + t.len {
                        found.push(Hazard {
                            kind: HazardKind::UseAfterFree,
                            current: OpRef {
                                op: q.op,
                                agent: Agent::Stream(sid as u32),
                                kind: q.cmd.op_kind().unwrap_or(OpKind::Dealloc),
                            },
                            previous: Some(OpRef {
                                op,
                                agent: Agent::Host,
                                kind: OpKind::Dealloc,
                            }),
                            bytes: Some(ByteRange {
                                memory: MemoryKind::Device,
                                page,
                                offset: t.offset,
                                len: t.len,
                            }),
                        });
                    }
                }
            }
        }
        self.hazards.append(&mut found);
        self.memory
            .decommit(storage, page, offset, len)
            .map_err(|e| vm_error("decommit", e, len))?;
        self.counters.deallocs += 1;
        self.calls.push(Call::Dealloc {
            memory: MemoryKind::Device,
            page,
        });
        Ok(())
    }

    /// Validates a host access to `len` bytes at `offset` of `page`.
    fn host_touch(
        &self,
        kind: MemoryKind,
        storage: Option<u64>,
        page: PageId,
        offset: u64,
        len: u64,
        writes: bool,
    ) -> Result<Touch, MockError> {
        let t = Touch {
            memory: kind,
            page,
            offset,
            len,
            reads: !writes,
            writes,
        };
        self.validate_touch(&t)?;
        if let (Some(s), Some(p)) = (storage, self.memory.page(page)) {
            if p.storage != s {
                return Err(MockError::invalid(std::format!(
                    "page {} belongs to another storage",
                    page.0
                )));
            }
        }
        Ok(t)
    }

    /// A host access: opportunistic choice point, checks, then the bytes.
    fn host_access(&mut self, t: &Touch, kind: OpKind) -> Result<(), MockError> {
        let op = self.next_op();
        let epoch = self.host_clock.tick(Agent::Host);
        let rec = AccessRec {
            agent: Agent::Host,
            epoch,
            op,
            kind,
        };
        if let Some(PageState::Released { op: d }) = self.memory.page(t.page).map(|p| p.state) {
            self.hazards
                .push(use_after_free(t.memory, t.page, t.offset, t.len, &rec, d));
            return Err(MockError::invalid(std::format!(
                "page {} was released",
                t.page.0
            )));
        }
        self.tick();
        let clock = self.host_clock.clone();
        self.check_touch(t, &rec, &clock);
        Ok(())
    }

    /// `HostStorage::write`, or (with `storage` `None` and device memory) a
    /// direct host write used to set up device bytes in tests.
    pub(crate) fn host_write(
        &mut self,
        kind: MemoryKind,
        storage: Option<u64>,
        page: PageId,
        offset: u64,
        data: &[u8],
    ) -> Result<(), MockError> {
        let t = self.host_touch(kind, storage, page, offset, data.len() as u64, true)?;
        self.host_access(&t, OpKind::HostWrite)?;
        if let Some(p) = self.memory.page_mut(page) {
            p.write(offset, data);
        }
        self.counters.host_writes += 1;
        self.calls.push(Call::HostWrite {
            page,
            offset,
            len: data.len() as u64,
        });
        Ok(())
    }

    /// `HostStorage::read`, or a checked host read of device bytes.
    pub(crate) fn host_read(
        &mut self,
        kind: MemoryKind,
        storage: Option<u64>,
        page: PageId,
        offset: u64,
        out: &mut [u8],
    ) -> Result<(), MockError> {
        let t = self.host_touch(kind, storage, page, offset, out.len() as u64, false)?;
        self.host_access(&t, OpKind::HostRead)?;
        let data: Vec<u8> = self
            .memory
            .page(page)
            .map(|p| p.read(offset, out.len() as u64))
            .unwrap_or_default();
        for (o, d) in out.iter_mut().zip(data) {
            *o = d;
        }
        self.counters.host_reads += 1;
        self.calls.push(Call::HostRead {
            page,
            offset,
            len: out.len() as u64,
        });
        Ok(())
    }
}
