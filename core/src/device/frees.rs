//! Dropped handles and deferred frees: a buffer's slice goes to its owner
//! stream's drop queue, first pinned on every other stream whose queued use
//! of it has not completed (cross-stream pins); idle pages given back.

use super::buffer::BufferId;
use super::lock::RawLock;
use super::state::{Deferred, Env, Fence, Inner, Res};
use crate::error::Error;
use crate::failure::AllocId;
use crate::memory::SliceHandle;
use crate::platform::Platform;
use crate::stream::StreamId;

/// A freed slice waiting for other streams' uses to complete.
pub(crate) struct PendingFree {
    pub(crate) handle: SliceHandle,
    pub(crate) owner: StreamId,
    pub(crate) bytes: u64,
    pub(crate) remaining: u32,
}

impl<P: Platform> Inner<P> {
    /// Processes dropped handles, then releases every idle page of every
    /// stream not in a capture window (and flushes their storages); the
    /// first error is returned after every stream was tried.
    pub(crate) fn release_idle_everywhere<L: RawLock>(&mut self, env: &Env<P, L>) -> Res<(), P> {
        self.process_releases(env);
        let mut result = Ok(());
        for (_, st) in self.streams.iter_mut() {
            if !st.capture.is_open() {
                if let Err(e) = st.memory.cleanup() {
                    if result.is_ok() {
                        result = Err(e.into());
                    }
                }
            }
        }
        result
    }

    /// Processes dropped handles: frees buffers (deferred), releases graphs.
    /// Loops because a released graph drops the buffers it kept alive.
    /// Never fails the calling operation: an error of a release is counted
    /// and kept for the user (`Device::take_release_error`).
    #[inline]
    pub(crate) fn process_releases<L: RawLock>(&mut self, env: &Env<P, L>) {
        if self.releases.is_pending() {
            self.process_pending_releases(env);
        }
    }

    fn process_pending_releases<L: RawLock>(&mut self, env: &Env<P, L>) {
        loop {
            // The mailbox first: one buffer, no lock (an alloc + drop loop
            // never goes further).
            if let Some(index) = self.releases.take_mailbox() {
                // Its slot stays taken until this release: the index names it.
                if let Some(id) = self.buffers.live_id(index) {
                    if let Err(e) = self.free_buffer(env, id) {
                        self.buffer_release_failed(id, e);
                    }
                }
            }
            if self.releases.is_queued() {
                self.process_queued_releases(env);
            }
            if !self.releases.is_pending() {
                return;
            }
        }
    }

    /// Releases what the locked queue holds (the mailbox was taken, or
    /// graphs were dropped).
    #[cold]
    fn process_queued_releases<L: RawLock>(&mut self, env: &Env<P, L>) {
        self.scratch_ids.clear();
        self.scratch_graphs.clear();
        if !self
            .releases
            .take(&mut self.scratch_ids, &mut self.scratch_graphs)
        {
            return;
        }
        // By index: releasing one never touches these lists.
        for i in 0..self.scratch_ids.len() {
            let Some(&id) = self.scratch_ids.get(i) else {
                break;
            };
            if let Err(e) = self.free_buffer(env, id) {
                self.buffer_release_failed(id, e);
            }
        }
        for i in 0..self.scratch_graphs.len() {
            let Some(&g) = self.scratch_graphs.get(i) else {
                break;
            };
            if let Err(e) = self.release_graph(env, g) {
                self.release_failed(e);
            }
        }
    }

    /// The release of buffer `id` failed (a cross-stream pin refused, the
    /// pending-free arena full): the error is kept for the user, and the
    /// buffer leaves the table anyway. Its last handle is gone, so nothing
    /// could ever release it again; its slot index (and the handle
    /// allocation the index holds) serves the next buffer, and a closing
    /// release queue does not count that allocation as held by a handle.
    /// Its bytes stay out of the pool: another stream's use of them may not
    /// have completed.
    #[cold]
    fn buffer_release_failed(&mut self, id: BufferId, e: Error<P::Error>) {
        // Already gone when the failure came after the removal.
        let _ = self.buffers.remove(id);
        self.release_failed(e);
    }

    /// A buffer's last handle is gone: its claims end, and its slice goes
    /// back to its pool at once when no queued work uses it (never used, or
    /// every use known complete), or else to the owner's drop queue once no
    /// other stream's queued use is pending.
    #[inline]
    fn free_buffer<L: RawLock>(&mut self, env: &Env<P, L>, id: BufferId) -> Res<(), P> {
        // The common case, decided in one look at the buffer: no claims
        // anywhere, no capture anywhere, no queued use.
        if self.recording == 0 && self.taint.is_empty() {
            if let Some((owner, handle, size)) =
                self.buffers.remove_if_idle(id, self.sync.completed_all())
            {
                return match self.streams.get_mut(owner) {
                    Some(st) if !st.capture.is_open() => Ok(st.memory.free(handle)?),
                    _ => {
                        self.defer(env, owner, Deferred::Device(handle), size);
                        Ok(())
                    }
                };
            }
        }
        self.free_buffer_slow(env, id)
    }

    /// [`free_buffer`](Self::free_buffer) for every other case.
    #[cold]
    fn free_buffer_slow<L: RawLock>(&mut self, env: &Env<P, L>, id: BufferId) -> Res<(), P> {
        let Ok(slot) = self.buffers.get(id) else {
            return Ok(());
        };
        if !self.taint.is_empty() {
            self.taint.free(AllocId(id.as_u64()));
        }
        let owner = slot.owner;
        let size = slot.size;
        let Some(handle) = slot.handle() else {
            self.remove_buffer(id)?;
            return Ok(());
        };
        let mut outstanding = 0u32;
        // The owner's last use not known complete (0: none).
        let mut owner_pending = 0;
        for (s, &used) in slot.last_use().iter().enumerate() {
            // At most MAX_STREAMS: fits a StreamId.
            let s = StreamId(s as u16);
            if used > self.sync.completed_cursor(s)? {
                if s == owner {
                    owner_pending = used;
                } else {
                    outstanding += 1;
                }
            }
        }
        if outstanding == 0 {
            self.remove_buffer(id)?;
            let open = self
                .streams
                .get(owner)
                .is_none_or(|st| st.capture.is_open());
            if open || self.recording > 0 {
                self.defer(env, owner, Deferred::Device(handle), size);
            } else if let Some(st) = self.streams.get_mut(owner) {
                if owner_pending > 0 {
                    // Only the owner's queued work uses it: back to the pool
                    // at once, in stream order (the owner's later work runs
                    // after that use; another stream's first use of a buffer
                    // reserved over these bytes waits for it, see
                    // `insert_placed`). No fence, no drop queue.
                    st.memory.free_ordered(handle, owner_pending)?;
                    self.stats.ordered_frees += 1;
                } else {
                    // No queued work uses it (never used, or every use is
                    // known complete): back to the pool at once.
                    st.memory.free(handle)?;
                }
            }
            return Ok(());
        }
        let key = self
            .pending
            .insert(PendingFree {
                handle,
                owner,
                bytes: size,
                remaining: outstanding,
            })
            .map_err(|_| Error::InvalidArgument("too many frees pending"))?;
        let slot = self.buffers.get(id)?;
        for (s, &used) in slot.last_use().iter().enumerate() {
            let s = StreamId(s as u16);
            if s != owner && used > self.sync.completed_cursor(s)? {
                self.pins.pin(s, used, key)?;
            }
        }
        self.remove_buffer(id)?;
        self.stats.cross_stream_pins += 1;
        Ok(())
    }

    /// Removes buffer `id` from the table (its index keeps the handle
    /// allocation for the next buffer).
    fn remove_buffer(&mut self, id: BufferId) -> Res<(), P> {
        self.buffers.remove(id)?;
        Ok(())
    }

    /// Releases cross-stream pins of consumer `sid` that completed; a freed
    /// slice whose last pin goes moves to its owner's drop queue.
    pub(crate) fn release_pins<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
    ) -> Res<(), P> {
        let completed = self.sync.completed_cursor(sid)?;
        let mut released = core::mem::take(&mut self.scratch_pins);
        self.pins
            .release_completed(sid, completed, |i| released.push(i))?;
        for key in released.drain(..) {
            let Some(p) = self.pending.get_mut(key) else {
                continue;
            };
            p.remaining -= 1;
            if p.remaining == 0 {
                if let Some(p) = self.pending.remove(key) {
                    self.defer(env, p.owner, Deferred::Device(p.handle), p.bytes);
                }
            }
        }
        self.scratch_pins = released;
        Ok(())
    }

    /// Records progress fences on streams whose cross-stream pins wait for
    /// work no fence covers yet, so polling can release them.
    pub(crate) fn fence_pinned_streams<L: RawLock>(&mut self, env: &Env<P, L>) -> Res<(), P> {
        if self.recording > 0 {
            return Ok(());
        }
        for s in 0..self.streams.capacity() {
            let sid = StreamId(s as u16);
            if self.pins.pinned(sid) == 0 {
                continue;
            }
            let cursor = self.sync.cursor(sid)?;
            let Some(st) = self.streams.get_mut(sid) else {
                continue;
            };
            if st.progress.is_some() {
                continue;
            }
            let event = env.record(sid)?;
            if let Some(st) = self.streams.get_mut(sid) {
                st.progress = Some(Fence { cursor, event });
            }
            self.stats.events_recorded += 1;
        }
        Ok(())
    }
}
