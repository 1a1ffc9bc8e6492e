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
