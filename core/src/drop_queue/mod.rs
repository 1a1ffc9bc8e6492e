//! Deferred drops gated by fences: the drop queue.
//!
//! Host bytes and device slices must stay alive until the device has finished
//! every piece of work queued before their last use. The drop queue holds such
//! items and hands them back (to a `release` callback) only once a fence
//! recorded after their last use has passed.
//!
//! # Life of an item
//!
//! 1. [`DropQueue::push`] *stages* the item with its size in bytes and says
//!    whether a flush is due under the [`FlushPolicy`] (by item count or by
//!    bytes, whichever is reached first).
//! 2. [`DropQueue::flush_with`] records a fence (through the caller's closure,
//!    typically `|| platform.record(&mut stream)`) and seals every staged item
//!    into one *pending batch* gated by that fence.
//! 3. [`DropQueue::reclaim`] polls the oldest batches (typically with
//!    `|e| platform.query(e)`) and releases every batch whose fence has passed.
//!    It never blocks the host. The blocking paths, [`DropQueue::wait_oldest`]
//!    and [`DropQueue::drain`] (typically with `|e| platform.synchronize(e)`),
//!    run only when the caller asks, for instance when a bounded queue is full.
//!
//! The core never queries a fence itself: every fence operation is a closure
//! the caller passes, so the queue is generic over the fence type `F` and
//! works with any platform (or a plain counter in tests).
//!
//! # Ordering
//!
//! One queue belongs to one stream. Fences recorded on one stream pass in
//! the order they were recorded, so once a fence has not passed, no later one
//! has: `reclaim` polls oldest-first and stops at the first fence that has not
//! passed. A queue fed fences from several unordered streams would still never
//! release an item early, only late.
//!
//! # Capture
//!
//! While the stream is being captured into a graph ([`DropQueue::set_recording`]),
//! no fence is recorded, queried or waited on: a fence recorded during a
//! capture is a node of the graph, not a point the host can observe, and a host
//! synchronization would invalidate the capture. A flush that becomes due (or
//! is asked for) while recording is remembered as *owed*
//! ([`DropQueue::flush_owed`]) and should be run right after the capture ends.
//!
//! # Errors
//!
//! An error from a caller's closure is returned as
//! [`DropQueueError::Fence`]; the batch being worked on stays where it was.
//! No item is ever dropped on an error path, and no item is released twice.
//!
//! # Variants
//!
//! - [`DropQueue`]: growable (two ring buffers: items, and batch markers
//!   `(fence, count, bytes)`); allocates nothing once both reached their
//!   steady-state capacity.
//! - [`BoundedDropQueue`]: fixed capacity (`heapless`), never allocates; a
//!   push into a full queue hands the item back inside [`QueueFull`].

mod api;
mod bounded;
mod engine;
mod error;
mod growable;
mod policy;
mod ring;

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;

pub use bounded::BoundedDropQueue;
pub use error::{DropQueueError, QueueFull};
pub use growable::DropQueue;
pub use policy::FlushPolicy;

/// What [`DropQueue::push`] says about flushing after staging an item.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[must_use = "a due flush should be run (flush_with) or its omission be deliberate"]
pub enum Pushed {
    /// The item is staged; the thresholds are not reached.
    Staged,
    /// The item is staged and a flush is due: call `flush_with`.
    FlushDue,
    /// The item is staged and a flush is due, but the queue is recording a
    /// capture: the flush is remembered as owed and should run after it ends.
    FlushOwed,
}

/// What a flush did.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Flushed {
    /// Nothing was staged: no fence was recorded.
    Nothing,
    /// The queue is recording a capture: no fence was recorded, the flush is
    /// owed and the staged items stay staged.
    Deferred,
    /// The staged items were sealed into a pending batch behind the new fence.
    Sealed {
        /// Items sealed.
        items: usize,
        /// Their bytes.
        bytes: u64,
    },
}
