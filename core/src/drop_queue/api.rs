//! The methods both drop-queue variants share, written once.

/// Expands to the shared methods inside an `impl` block of a type with an
/// `engine: Engine<..>` field.
macro_rules! shared_queue_api {
    () => {
        /// The flush thresholds.
        pub fn policy(&self) -> FlushPolicy {
            self.engine.policy()
        }

        /// Replaces the flush thresholds; staged items stay staged.
        pub fn set_policy(&mut self, policy: FlushPolicy) {
            self.engine.set_policy(policy);
        }

        /// Seals every staged item into one pending batch behind a fence that
        /// `record` creates (typically `|| platform.record(&mut stream)`).
        ///
        /// - Nothing staged: `record` is not called, [`Flushed::Nothing`].
        /// - Recording a capture: `record` is not called, the flush is owed,
        ///   [`Flushed::Deferred`].
        /// - `record` fails: [`DropQueueError::Fence`], the items stay staged.
        pub fn flush_with<E>(
            &mut self,
            record: impl FnOnce() -> Result<F, E>,
        ) -> Result<Flushed, DropQueueError<E>> {
            self.engine.flush_with(record)
        }

        /// Seals every staged item behind `fence`, a fence the caller has
        /// already recorded after the items' last use. When nothing is staged,
        /// or while recording a capture (where a recorded fence is a graph
        /// node, not an observable point), `fence` is dropped unused and the
        /// answer is [`Flushed::Nothing`] or [`Flushed::Deferred`] (owed).
        /// Prefer [`Self::flush_with`], which records a fence only when one
        /// is needed.
        pub fn flush(&mut self, fence: F) -> Flushed {
            match self
                .engine
                .flush_with(|| Ok::<F, core::convert::Infallible>(fence))
            {
                Ok(flushed) => flushed,
                Err(DropQueueError::Fence(never)) => match never {},
                Err(DropQueueError::Recording) => Flushed::Deferred,
            }
        }

        /// Releases, oldest first, every pending batch whose fence has passed,
        /// handing each item to `release`; never blocks. `passed` answers
        /// whether a fence has passed (typically `|e| platform.query(e)`).
        ///
        /// Fences of one stream pass in order, so polling stops at the first
        /// fence that has not passed. Returns the number of items released.
        ///
        /// While recording a capture nothing is polled and `Ok(0)` is
        /// returned (drivers reject event queries during a capture).
        ///
        /// On an error from `passed`, the batches released before it stay
        /// released and the one it was asked about stays pending.
        pub fn reclaim<E>(
            &mut self,
            passed: impl FnMut(&F) -> Result<bool, E>,
            release: impl FnMut(T),
        ) -> Result<usize, DropQueueError<E>> {
            self.engine.reclaim(passed, release)
        }

        /// Blocks on the oldest pending batch's fence through `sync`
        /// (typically `|e| platform.synchronize(e)`) and releases that batch.
        /// Returns the number of items released (`0` when nothing is pending).
        ///
        /// Refused with [`DropQueueError::Recording`] while recording a
        /// capture. On an error from `sync` the batch stays pending.
        pub fn wait_oldest<E>(
            &mut self,
            sync: impl FnMut(&F) -> Result<(), E>,
            release: impl FnMut(T),
        ) -> Result<usize, DropQueueError<E>> {
            self.engine.wait_oldest(sync, release)
        }

        /// Blocks on every pending batch's fence, oldest first, releasing each
        /// batch once its fence passed. Staged items are not touched: flush
        /// first to drain everything. Returns the number of items released.
        ///
        /// Refused with [`DropQueueError::Recording`] while recording a
        /// capture. On an error from `sync` the batch it was called for and
        /// every later one stay pending.
        pub fn drain<E>(
            &mut self,
            sync: impl FnMut(&F) -> Result<(), E>,
            release: impl FnMut(T),
        ) -> Result<usize, DropQueueError<E>> {
            self.engine.drain(sync, release)
        }

        /// Marks whether the stream is being captured. While recording, no
        /// fence is recorded, polled or waited on, and due flushes are owed.
        /// Returns whether a flush is owed (run it with `flush_with` once
        /// recording stopped).
        pub fn set_recording(&mut self, recording: bool) -> bool {
            self.engine.set_recording(recording)
        }

        /// Whether the queue is marked as recording a capture.
        pub fn is_recording(&self) -> bool {
            self.engine.is_recording()
        }

        /// Whether a flush became due or was asked for while recording and
        /// has not run yet.
        pub fn flush_owed(&self) -> bool {
            self.engine.flush_owed()
        }

        /// Whether a flush is due: items are staged and the thresholds are
        /// reached or a flush is owed.
        pub fn is_flush_due(&self) -> bool {
            self.engine.is_flush_due()
        }

        /// Items staged, not yet behind a fence.
        pub fn staged_len(&self) -> usize {
            self.engine.staged_items()
        }

        /// Bytes of the staged items.
        pub fn staged_bytes(&self) -> u64 {
            self.engine.staged_bytes()
        }

        /// Items in pending batches, waiting for their fence.
        pub fn pending_len(&self) -> usize {
            self.engine.pending_items()
        }

        /// Bytes of the items in pending batches.
        pub fn pending_bytes(&self) -> u64 {
            self.engine.pending_bytes()
        }

        /// Number of pending batches (fences not yet seen passed).
        pub fn pending_batches(&self) -> usize {
            self.engine.pending_batches()
        }

        /// The fence of the oldest pending batch.
        pub fn oldest_fence(&self) -> Option<&F> {
            self.engine.oldest_fence()
        }

        /// Items held, staged or pending.
        pub fn len(&self) -> usize {
            self.engine.staged_items() + self.engine.pending_items()
        }

        /// Whether no item is held.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    };
}

pub(crate) use shared_queue_api;
