//! The growable drop queue.

use alloc::collections::VecDeque;

use super::api::shared_queue_api;
use super::engine::{Batch, Engine};
use super::{DropQueueError, FlushPolicy, Flushed, Pushed};

/// A drop queue that grows as needed (see the [module docs](super)).
///
/// Items sit in one ring buffer and batch markers in another; once both have
/// grown to the largest backlog seen (or were sized by
/// [`DropQueue::with_capacity`]), pushing, flushing and reclaiming allocate
/// nothing.
///
/// ```
/// use streamcore::drop_queue::{DropQueue, FlushPolicy, Pushed};
///
/// let mut q: DropQueue<&str, u64> = DropQueue::new(FlushPolicy { max_items: 2, max_bytes: 1 << 20 });
/// assert_eq!(q.push("a", 10), Pushed::Staged);
/// assert_eq!(q.push("b", 10), Pushed::FlushDue);
/// let fence = 7u64; // e.g. `platform.record(&mut stream)`
/// q.flush_with(|| Ok::<_, ()>(fence)).unwrap();
///
/// let mut released = Vec::new();
/// let completed = 6; // the device has not reached fence 7 yet
/// q.reclaim(|f| Ok::<_, ()>(*f <= completed), |i| released.push(i)).unwrap();
/// assert!(released.is_empty());
/// let completed = 7;
/// q.reclaim(|f| Ok::<_, ()>(*f <= completed), |i| released.push(i)).unwrap();
/// assert_eq!(released, ["a", "b"]);
/// ```
#[derive(Debug)]
pub struct DropQueue<T, F> {
    engine: Engine<T, F, VecDeque<T>, VecDeque<Batch<F>>>,
}

impl<T, F> DropQueue<T, F> {
    /// An empty queue; allocates nothing until the first push.
    pub const fn new(policy: FlushPolicy) -> Self {
        Self {
            engine: Engine::new(VecDeque::new(), VecDeque::new(), policy),
        }
    }

    /// An empty queue with room for `items` held items and `batches` pending
    /// batches before it allocates. The room is a hint: what the allocator
    /// cannot grant (`usize::MAX`) is left to grow as the queue fills; it
    /// never panics.
    pub fn with_capacity(policy: FlushPolicy, items: usize, batches: usize) -> Self {
        let mut q = Self::new(policy);
        let _ = q.try_reserve(items, batches);
        q
    }

    /// Makes room for at least `items` more items and `batches` more pending
    /// batches.
    ///
    /// # Panics
    ///
    /// Where the room exceeds `isize::MAX` bytes, as `VecDeque::reserve`
    /// does; [`try_reserve`](Self::try_reserve) answers an error instead.
    pub fn reserve(&mut self, items: usize, batches: usize) {
        self.engine.items_ring_mut().reserve(items);
        self.engine.batches_ring_mut().reserve(batches);
    }

    /// Makes room for at least `items` more items and `batches` more
    /// pending batches, or says why the allocator cannot (the queue keeps
    /// whatever room it already had).
    pub fn try_reserve(
        &mut self,
        items: usize,
        batches: usize,
    ) -> Result<(), alloc::collections::TryReserveError> {
        self.engine.items_ring_mut().try_reserve(items)?;
        self.engine.batches_ring_mut().try_reserve(batches)
    }

    /// Items and batches the queue can hold without allocating.
    pub fn capacity(&self) -> (usize, usize) {
        (
            self.engine.items_ring().capacity(),
            self.engine.batches_ring().capacity(),
        )
    }

    /// Stages `item` (of `bytes` bytes) until the next flush and says whether
    /// a flush is due. Allocates only when the item ring is at capacity.
    pub fn push(&mut self, item: T, bytes: u64) -> Pushed {
        self.engine.items_ring_mut().push_back(item);
        self.engine.staged_one(bytes)
    }

    shared_queue_api!();
}

impl<T, F> Default for DropQueue<T, F> {
    /// An empty queue with the [`FlushPolicy::discrete`] thresholds.
    fn default() -> Self {
        Self::new(FlushPolicy::discrete())
    }
}
