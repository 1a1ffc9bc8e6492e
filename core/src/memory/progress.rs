//! Frees in stream order: how a manager learns that the work queued on its
//! stream has completed.
//!
//! A slice freed with [`MemoryManager::free_ordered`](super::MemoryManager::free_ordered)
//! goes back to its pool at once, though work queued on the stream up to
//! some cursor may still touch it: later work on the same stream runs after
//! that work, so the bytes may serve it without a fence (the driver's
//! stream-ordered pools do the same). Only giving the bytes back to the
//! driver (decommitting a chunk) must wait until the stream has completed
//! that cursor. The manager is told how far the stream got through
//! [`MemoryManager::complete`](super::MemoryManager::complete), or asks, when
//! a reserve would otherwise grow past its trim limit, through a
//! [`Progress`] passed to
//! [`reserve_ordered`](super::MemoryManager::reserve_ordered).

use super::error::MemoryError;
use super::handle::SliceHandle;
use super::manager::MemoryManager;
use super::slots::OWNER;
use crate::platform::Storage;

/// Waits for a stream's queued work, on a manager's behalf.
///
/// Implemented for every `FnMut(u64) -> Option<u64>`.
pub trait Progress {
    /// Blocks until the stream has completed every command up to `cursor`;
    /// returns the cursor now known complete (at least `cursor`), or `None`
    /// when it cannot wait (the manager then holds the memory it wanted to
    /// give back, and grows instead).
    fn wait(&mut self, cursor: u64) -> Option<u64>;
}

impl<F: FnMut(u64) -> Option<u64>> Progress for F {
    fn wait(&mut self, cursor: u64) -> Option<u64> {
        self(cursor)
    }
}

/// A [`Progress`] that never waits (what [`reserve`](super::MemoryManager::reserve) uses).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWait;

impl Progress for NoWait {
    fn wait(&mut self, _cursor: u64) -> Option<u64> {
        None
    }
}

impl<S: Storage> MemoryManager<S> {
    /// Frees a slice in stream order: work queued on this manager's stream
    /// up to `cursor` may still touch it, and no other stream's queued work
    /// does. Its bytes go back to the pool at once (unless a capture window
    /// or a graph pin still holds the slice), to serve later work of the
    /// same stream, which runs after that cursor; only giving them back to
    /// the storage (decommitting a chunk they lie in) waits until
    /// [`complete`](Self::complete) says the stream got past `cursor`.
    ///
    /// The caller orders any *other* stream's first use of a slice this
    /// manager hands out after [`reuse_cursor`](Self::reuse_cursor) (at the
    /// time of the reserve) on this stream, as with the driver's
    /// stream-ordered allocations. Over a storage without resizable pages a
    /// page handed back goes through `dealloc` and `flush`, which let queued
    /// work finish (the storage contract), so nothing waits.
    pub fn free_ordered(
        &mut self,
        h: SliceHandle,
        cursor: u64,
    ) -> Result<(), MemoryError<S::Error>> {
        let s = self.slot(h)?;
        if s.holds & OWNER == 0 {
            return Err(MemoryError::AlreadyFreed(h));
        }
        if cursor > self.books.fence {
            self.books.fence = cursor;
            if let Some(seg) = &mut self.segment {
                seg.set_fence(cursor);
            }
        }
        self.drop_owner(h.index);
        Ok(())
    }

    /// Tells the manager that its stream has completed every command up to
    /// `cursor` (a smaller value than one told before changes nothing).
    /// Idle memory freed in stream order up to it may now be given back.
    pub fn complete(&mut self, cursor: u64) {
        self.books.completed = self.books.completed.max(cursor);
    }

    /// The highest cursor [`complete`](Self::complete) was told.
    pub fn completed(&self) -> u64 {
        self.books.completed
    }

    /// The highest cursor a free in stream order named: a slice handed out
    /// now may share bytes with work queued up to it.
    pub fn reuse_cursor(&self) -> u64 {
        self.books.fence
    }

    /// The cursor the stream must complete before every idle chunk may be
    /// given back, when some must wait (`None` when none does).
    pub fn awaiting(&self) -> Option<u64> {
        let fence = self.segment.as_ref()?.youngest_idle_fence()?;
        (fence > self.books.completed).then_some(fence)
    }

    /// Times a reserve waited for the stream (through
    /// [`reserve_ordered`](Self::reserve_ordered)'s `progress`) before
    /// giving memory back.
    pub fn waits(&self) -> u64 {
        self.books.waits
    }
}
