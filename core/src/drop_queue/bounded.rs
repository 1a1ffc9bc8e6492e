//! The fixed-capacity drop queue.

use super::api::shared_queue_api;
use super::engine::{Batch, Engine};
use super::{DropQueueError, FlushPolicy, Flushed, Pushed, QueueFull};

/// A drop queue of fixed capacity that never allocates: at most `ITEMS` held
/// items (staged or pending) and `BATCHES` pending batches.
///
/// A push into a full queue returns the item inside [`QueueFull`]. A flush
/// while `BATCHES` batches are pending joins the staged items to the newest
/// batch and moves that batch's fence forward to the new one (later fences of
/// one stream pass no sooner, so items are released late, never early).
///
/// ```
/// use streamcore::drop_queue::{BoundedDropQueue, FlushPolicy, QueueFull};
///
/// let mut q: BoundedDropQueue<u32, u64, 2, 1> = BoundedDropQueue::new(FlushPolicy::integrated());
/// q.push(1, 0).unwrap();
/// q.push(2, 0).unwrap();
/// assert_eq!(q.push(3, 8), Err(QueueFull { item: 3, bytes: 8 }));
/// ```
#[derive(Debug)]
pub struct BoundedDropQueue<T, F, const ITEMS: usize, const BATCHES: usize> {
    engine: Engine<T, F, heapless::Deque<T, ITEMS>, heapless::Deque<Batch<F>, BATCHES>>,
}

impl<T, F, const ITEMS: usize, const BATCHES: usize> BoundedDropQueue<T, F, ITEMS, BATCHES> {
    /// An empty queue. `BATCHES` must be at least 1 (checked at compile time).
    pub const fn new(policy: FlushPolicy) -> Self {
        const {
            assert!(
                BATCHES >= 1,
                "a bounded drop queue needs room for one batch"
            );
        }
        Self {
            engine: Engine::new(heapless::Deque::new(), heapless::Deque::new(), policy),
        }
    }

    /// Stages `item` (of `bytes` bytes) until the next flush and says whether
    /// a flush is due; a full queue hands the item back.
    pub fn push(&mut self, item: T, bytes: u64) -> Result<Pushed, QueueFull<T>> {
        self.engine.push(item, bytes)
    }

    /// Whether `ITEMS` items are held: the next push fails.
    pub fn is_full(&self) -> bool {
        self.len() >= ITEMS
    }

    shared_queue_api!();
}

impl<T, F, const ITEMS: usize, const BATCHES: usize> Default
    for BoundedDropQueue<T, F, ITEMS, BATCHES>
{
    /// An empty queue with the [`FlushPolicy::discrete`] thresholds.
    fn default() -> Self {
        Self::new(FlushPolicy::discrete())
    }
}
