//! Fences: staged frees are sealed behind an event recorded on their
//! stream, released once it has passed (polled, never waited for on the hot
//! path), or after a host synchronization covered them.
//!
//! A host synchronization is split so the device lock is never held while
//! the host waits: [`Inner::sync_submit`] seals the staged drops and records
//! the event to wait for (under the lock), the caller waits for it with no
//! lock held, and [`Inner::sync_complete`] releases what the wait covered
//! (under the lock again). Work other threads queue in between is not
//! covered and stays behind its own fences.

use super::lock::RawLock;
use super::state::{Deferred, Env, Fence, Inner, Res, host_err};
use crate::drop_queue::{DropQueueError, Flushed, Pushed};
use crate::error::Error;
use crate::platform::Platform;
use crate::stream::{Cursor, StreamId};

impl<P: Platform> Inner<P> {
    /// Stages `item` on `sid`'s drop queue, flushing and reclaiming when the
    /// policy says so. A failure of that flush is a deferred-release error:
    /// the items stay staged for the next flush, and the operation that
    /// happened to stage the item is not charged with it.
    pub(crate) fn defer<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        item: Deferred,
        bytes: u64,
    ) {
        let Some(st) = self.streams.get_mut(sid) else {
            // Unreachable: items are deferred on streams that used them.
            self.release_failed(Error::InvalidArgument(
                "deferred release on a stream that was never created",
            ));
            return;
        };
        if st.drops.push(item, bytes) == Pushed::FlushDue {
            if let Err(e) = self.flush(env, sid) {
                self.release_failed(e);
            } else if let Err(e) = self.reclaim(env, sid) {
                self.release_failed(e);
            }
        }
    }

    /// Seals `sid`'s staged drops behind a fresh fence.
    pub(crate) fn flush<L: RawLock>(&mut self, env: &Env<P, L>, sid: StreamId) -> Res<(), P> {
        let cursor = self.sync.cursor(sid)?;
        let st = self
            .streams
            .get_mut(sid)
            .ok_or_else(|| Error::InvalidArgument("stream not created"))?;
        let flushed = st
            .drops
            .flush_with(|| env.record(sid).map(|event| Fence { cursor, event }));
        match flushed {
            Ok(Flushed::Sealed { .. }) => {
                self.stats.events_recorded += 1;
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(DropQueueError::Fence(e)) => Err(e),
            Err(_) => Err(Error::InvalidArgument("drop queue refused the flush")),
        }
    }

    /// Notes that `sid` completed everything up to `cursor`: the sync table
    /// learns it, and so does the stream's pool (bytes it took back in
    /// stream order up to there may now be given back to the storage).
    pub(crate) fn note_completed(&mut self, sid: StreamId, cursor: Cursor) -> Res<(), P> {
        self.sync.completed(sid, cursor)?;
        if let Some(st) = self.streams.get_mut(sid) {
            st.memory.complete(cursor);
        }
        Ok(())
    }

    /// Releases, without blocking, everything of `sid` whose fence passed.
    pub(crate) fn reclaim<L: RawLock>(&mut self, env: &Env<P, L>, sid: StreamId) -> Res<usize, P> {
        if self.recording > 0 {
            return Ok(0);
        }
        let Self {
            streams,
            scratch_deferred,
            ..
        } = self;
        let Some(st) = streams.get_mut(sid) else {
            return Ok(0);
        };
        let platform = &env.platform;
        let mut done = 0;
        let polled = st.drops.reclaim(
            |f| {
                let passed = platform.query(&f.event)?;
                if passed {
                    done = done.max(f.cursor);
                }
                Ok(passed)
            },
            |item| scratch_deferred.push(item),
        );
        let progress = match &st.progress {
            Some(p) => platform
                .query(&p.event)
                .map(|passed| passed.then_some(p.cursor)),
            None => Ok(None),
        };
        let released = self.release_deferred(env, sid, done);
        if let Ok(Some(c)) = progress {
            if let Some(st) = self.streams.get_mut(sid) {
                st.progress = None;
            }
            self.note_completed(sid, c)?;
            self.release_pins(env, sid)?;
        }
        match polled {
            Err(DropQueueError::Fence(e)) => Err(Error::platform("query", e)),
            _ => match progress {
                Err(e) => Err(Error::platform("query", e)),
                Ok(_) => released,
            },
        }
    }

    /// Frees every item in `scratch_deferred` (released by `sid`'s drop
    /// queue), notes that `sid` completed `done`, and releases the
    /// cross-stream pins that completes. Every item is freed even when one
    /// fails; the first error is returned.
    pub(crate) fn release_deferred<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        done: Cursor,
    ) -> Res<usize, P> {
        let Self {
            streams,
            scratch_deferred,
            host,
            ..
        } = self;
        let n = scratch_deferred.len();
        let mut result = Ok(n);
        if let Some(st) = streams.get_mut(sid) {
            for item in scratch_deferred.drain(..) {
                let freed = match item {
                    Deferred::Device(h) => st.memory.free(h).map_err(Error::from),
                    Deferred::Unpin(h) => st.memory.unpin(h).map_err(Error::from),
                    Deferred::Host(h) => host.free(h).map_err(host_err::<P>),
                };
                if let Err(e) = freed {
                    result = result.and(Err(e));
                }
            }
        }
        self.note_completed(sid, done)?;
        self.release_pins(env, sid)?;
        result
    }

    /// The submit half of a host synchronization of `sid`: seals its staged
    /// drops behind a fence and records the event the host will wait for.
    /// `None` for a stream never created (nothing to wait for).
    pub(crate) fn sync_submit<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
    ) -> Res<Option<Fence<P::Event>>, P> {
        self.streams.check(sid)?;
        if self.recording > 0 {
            return Err(Error::NotWhileCapturing { op: "sync" });
        }
        if self.streams.get(sid).is_none() {
            return Ok(None);
        }
        self.flush(env, sid)?;
        let cursor = self.sync.cursor(sid)?;
        let event = env.record(sid)?;
        self.stats.events_recorded += 1;
        Ok(Some(Fence { cursor, event }))
    }

    /// The complete half: the host saw everything of `sid` up to `cursor`
    /// complete. Releases the drops fenced at or before it and the
    /// cross-stream pins that completes.
    pub(crate) fn sync_complete<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        cursor: Cursor,
    ) -> Res<(), P> {
        self.stats.host_syncs += 1;
        let Self {
            streams,
            scratch_deferred,
            ..
        } = self;
        if let Some(st) = streams.get_mut(sid) {
            if st.progress.as_ref().is_some_and(|p| p.cursor <= cursor) {
                st.progress = None;
            }
            // A stream that began recording since keeps its drops until the
            // capture ends (the queue refuses while recording).
            let _ = st.drops.reclaim(
                |f| Ok::<bool, core::convert::Infallible>(f.cursor <= cursor),
                |item| scratch_deferred.push(item),
            );
        }
        self.release_deferred(env, sid, cursor)?;
        Ok(())
    }
}
