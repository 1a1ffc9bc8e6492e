//! Drop-queue errors.

use core::fmt;

/// A drop-queue operation that could not complete.
///
/// Whatever the variant, no item was dropped or lost: items not yet released
/// are still in the queue, in their places.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropQueueError<E> {
    /// The caller's fence closure (record, query or synchronize) failed; the
    /// batch it was called for stays in the queue.
    Fence(E),
    /// A blocking wait was asked for while the queue is recording a capture
    /// (a host synchronization would invalidate the capture); nothing was
    /// waited on.
    Recording,
}

impl<E: fmt::Display> fmt::Display for DropQueueError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DropQueueError::Fence(e) => write!(f, "drop-queue fence operation failed: {e}"),
            DropQueueError::Recording => {
                write!(f, "cannot wait on a fence while a capture is recording")
            }
        }
    }
}

impl<E: fmt::Debug + fmt::Display> core::error::Error for DropQueueError<E> {}

/// A push into a full [`BoundedDropQueue`](super::BoundedDropQueue): the item
/// is handed back untouched.
///
/// Make room with `reclaim` (non-blocking) or, outside a capture,
/// `wait_oldest`; a queue whose items are all staged needs a flush first.
#[derive(Debug, PartialEq, Eq)]
pub struct QueueFull<T> {
    /// The item that was not staged.
    pub item: T,
    /// The bytes it was pushed with.
    pub bytes: u64,
}

impl<T> fmt::Display for QueueFull<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "drop queue is full; the item of {} bytes was not staged",
            self.bytes
        )
    }
}

impl<T: fmt::Debug> core::error::Error for QueueFull<T> {}
