//! The drop-queue logic, shared by the growable and the bounded variant.
//!
//! Items live in one FIFO ring: the oldest pending batches first, the staged
//! items last. A second ring holds one marker per pending batch (its fence,
//! how many items of the item ring it covers, their bytes). Releasing a batch
//! pops its marker and that many items from the front.

use core::marker::PhantomData;

use super::error::{DropQueueError, QueueFull};
use super::policy::FlushPolicy;
use super::ring::Ring;
use super::{Flushed, Pushed};

/// One pending batch: the items it covers are released once `fence` passed.
#[derive(Debug)]
pub(crate) struct Batch<F> {
    fence: F,
    count: usize,
    bytes: u64,
}

/// The shared queue logic over an item ring `I` and a batch ring `B`.
#[derive(Debug)]
pub(crate) struct Engine<T, F, I, B> {
    items: I,
    batches: B,
    staged_items: usize,
    staged_bytes: u64,
    pending_items: usize,
    pending_bytes: u64,
    policy: FlushPolicy,
    recording: bool,
    owed: bool,
    _types: PhantomData<fn(T, F)>,
}

impl<T, F, I: Ring<T>, B: Ring<Batch<F>>> Engine<T, F, I, B> {
    pub(crate) const fn new(items: I, batches: B, policy: FlushPolicy) -> Self {
        Self {
            items,
            batches,
            staged_items: 0,
            staged_bytes: 0,
            pending_items: 0,
            pending_bytes: 0,
            policy,
            recording: false,
            owed: false,
            _types: PhantomData,
        }
    }

    pub(crate) fn items_ring(&self) -> &I {
        &self.items
    }

    pub(crate) fn batches_ring(&self) -> &B {
        &self.batches
    }

    pub(crate) fn items_ring_mut(&mut self) -> &mut I {
        &mut self.items
    }

    pub(crate) fn batches_ring_mut(&mut self) -> &mut B {
        &mut self.batches
    }

    pub(crate) fn policy(&self) -> FlushPolicy {
        self.policy
    }

    pub(crate) fn set_policy(&mut self, policy: FlushPolicy) {
        self.policy = policy;
    }

    pub(crate) fn staged_items(&self) -> usize {
        self.staged_items
    }

    pub(crate) fn staged_bytes(&self) -> u64 {
        self.staged_bytes
    }

    pub(crate) fn pending_items(&self) -> usize {
        self.pending_items
    }

    pub(crate) fn pending_bytes(&self) -> u64 {
        self.pending_bytes
    }

    pub(crate) fn pending_batches(&self) -> usize {
        self.batches.len()
    }

    pub(crate) fn oldest_fence(&self) -> Option<&F> {
        self.batches.front().map(|b| &b.fence)
    }

    pub(crate) fn is_recording(&self) -> bool {
        self.recording
    }

    pub(crate) fn flush_owed(&self) -> bool {
        self.owed
    }

    pub(crate) fn is_flush_due(&self) -> bool {
        self.staged_items > 0
            && (self.owed || self.policy.is_due(self.staged_items, self.staged_bytes))
    }

    pub(crate) fn set_recording(&mut self, recording: bool) -> bool {
        self.recording = recording;
        self.owed
    }

    pub(crate) fn push(&mut self, item: T, bytes: u64) -> Result<Pushed, QueueFull<T>> {
        self.items
            .try_push_back(item)
            .map_err(|item| QueueFull { item, bytes })?;
        Ok(self.staged_one(bytes))
    }

    /// Accounts for one item just appended to the item ring.
    pub(crate) fn staged_one(&mut self, bytes: u64) -> Pushed {
        self.staged_items += 1;
        self.staged_bytes = self.staged_bytes.saturating_add(bytes);
        if !self.is_flush_due() {
            Pushed::Staged
        } else if self.recording {
            self.owed = true;
            Pushed::FlushOwed
        } else {
            Pushed::FlushDue
        }
    }

    pub(crate) fn flush_with<E>(
        &mut self,
        record: impl FnOnce() -> Result<F, E>,
    ) -> Result<Flushed, DropQueueError<E>> {
        if self.staged_items == 0 {
            self.owed = false;
            return Ok(Flushed::Nothing);
        }
        if self.recording {
            self.owed = true;
            return Ok(Flushed::Deferred);
        }
        let fence = record().map_err(DropQueueError::Fence)?;
        let (items, bytes) = (self.staged_items, self.staged_bytes);
        self.seal(fence);
        Ok(Flushed::Sealed { items, bytes })
    }

    /// Moves every staged item into a batch behind `fence`. When the batch
    /// ring is full the items join the newest batch, whose fence is replaced
    /// by `fence`: a later fence on the same stream passes no sooner, so they
    /// are released late, never early.
    fn seal(&mut self, fence: F) {
        let batch = Batch {
            fence,
            count: self.staged_items,
            bytes: self.staged_bytes,
        };
        if let Err(batch) = self.batches.try_push_back(batch) {
            // A full ring holds at least one batch (bounded rings have a
            // capacity of at least one, checked at compile time).
            if let Some(newest) = self.batches.back_mut() {
                newest.fence = batch.fence;
                newest.count += batch.count;
                newest.bytes = newest.bytes.saturating_add(batch.bytes);
            }
        }
        self.pending_items += self.staged_items;
        self.pending_bytes = self.pending_bytes.saturating_add(self.staged_bytes);
        self.staged_items = 0;
        self.staged_bytes = 0;
        self.owed = false;
    }

    /// Releases the oldest batch. Its fence is dropped after its items.
    fn release_oldest(&mut self, release: &mut impl FnMut(T)) -> usize {
        let Some(batch) = self.batches.pop_front() else {
            return 0;
        };
        for _ in 0..batch.count {
            if let Some(item) = self.items.pop_front() {
                release(item);
            }
        }
        self.pending_items -= batch.count;
        self.pending_bytes = self.pending_bytes.saturating_sub(batch.bytes);
        batch.count
    }

    pub(crate) fn reclaim<E>(
        &mut self,
        mut passed: impl FnMut(&F) -> Result<bool, E>,
        mut release: impl FnMut(T),
    ) -> Result<usize, DropQueueError<E>> {
        if self.recording {
            return Ok(0);
        }
        let mut released = 0;
        while let Some(batch) = self.batches.front() {
            if !passed(&batch.fence).map_err(DropQueueError::Fence)? {
                break;
            }
            released += self.release_oldest(&mut release);
        }
        Ok(released)
    }

    pub(crate) fn wait_oldest<E>(
        &mut self,
        mut sync: impl FnMut(&F) -> Result<(), E>,
        mut release: impl FnMut(T),
    ) -> Result<usize, DropQueueError<E>> {
        if self.recording {
            return Err(DropQueueError::Recording);
        }
        let Some(batch) = self.batches.front() else {
            return Ok(0);
        };
        sync(&batch.fence).map_err(DropQueueError::Fence)?;
        Ok(self.release_oldest(&mut release))
    }

    pub(crate) fn drain<E>(
        &mut self,
        mut sync: impl FnMut(&F) -> Result<(), E>,
        mut release: impl FnMut(T),
    ) -> Result<usize, DropQueueError<E>> {
        if self.recording {
            return Err(DropQueueError::Recording);
        }
        let mut released = 0;
        while let Some(batch) = self.batches.front() {
            sync(&batch.fence).map_err(DropQueueError::Fence)?;
            released += self.release_oldest(&mut release);
        }
        Ok(released)
    }
}
