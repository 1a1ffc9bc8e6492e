//! Fences: staged frees are sealed behind an event recorded on their
//! stream, released once it has passed (polled, never waited for on the hot
//! path), or all at once after a host synchronization.

use super::state::{Deferred, Fence, Inner, Res, host_err};
use crate::drop_queue::Pushed;
use crate::error::Error;
use crate::platform::Platform;
use crate::stream::{Cursor, StreamId};

impl<P: Platform> Inner<P> {
    /// Stages `item` on `sid`'s drop queue, flushing when the policy says so.
    pub(crate) fn defer(&mut self, sid: StreamId, item: Deferred, bytes: u64) -> Res<(), P> {
        let st = self.stream(sid)?;
        if st.drops.push(item, bytes) == Pushed::FlushDue {
            self.flush(sid)?;
            self.reclaim(sid)?;
        }
        Ok(())
    }

    /// Seals `sid`'s staged drops behind a fresh fence.
    pub(crate) fn flush(&mut self, sid: StreamId) -> Res<(), P> {
        let cursor = self.sync.cursor(sid)?;
        let platform = &self.platform;
        let st = self
            .streams
            .get_mut(sid)
            .ok_or(Error::InvalidArgument("stream not created"))?;
        let stream = &mut st.stream;
        let flushed = st
            .drops
            .flush_with(|| platform.record(stream).map(|event| Fence { cursor, event }));
        match flushed {
            Ok(crate::drop_queue::Flushed::Sealed { .. }) => {
                self.stats.events_recorded += 1;
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(crate::drop_queue::DropQueueError::Fence(e)) => Err(Error::platform("record", e)),
            Err(_) => Err(Error::InvalidArgument("drop queue refused the flush")),
        }
    }

    /// Releases, without blocking, everything of `sid` whose fence passed.
    pub(crate) fn reclaim(&mut self, sid: StreamId) -> Res<usize, P> {
        if self.recording > 0 {
            return Ok(0);
        }
        let Self {
            platform,
            streams,
            scratch_deferred,
            ..
        } = self;
        let Some(st) = streams.get_mut(sid) else {
            return Ok(0);
        };
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
        let released = self.release_deferred(sid, done);
        if let Ok(Some(c)) = progress {
            if let Some(st) = self.streams.get_mut(sid) {
                st.progress = None;
            }
            self.sync.completed(sid, c)?;
            self.release_pins(sid)?;
        }
        match polled {
            Err(crate::drop_queue::DropQueueError::Fence(e)) => Err(Error::platform("query", e)),
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
    fn release_deferred(&mut self, sid: StreamId, done: Cursor) -> Res<usize, P> {
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
        self.sync.completed(sid, done)?;
        self.release_pins(sid)?;
        result
    }

    /// Blocks until everything queued on `sid` has completed, then releases
    /// all of its deferred drops.
    pub(crate) fn sync_stream(&mut self, sid: StreamId) -> Res<(), P> {
        if self.recording > 0 {
            return Err(Error::NotWhileCapturing { op: "sync" });
        }
        let Some(st) = self.streams.get_mut(sid) else {
            return Ok(());
        };
        let cursor = self.sync.cursor(sid)?;
        let event = self
            .platform
            .record(&mut st.stream)
            .map_err(|e| Error::platform("record", e))?;
        self.stats.events_recorded += 1;
        self.platform
            .synchronize(&event)
            .map_err(|e| Error::platform("synchronize", e))?;
        self.stats.host_syncs += 1;
        // Every drop staged or pending on `sid` waits for work up to
        // `cursor`, which has completed: release them all without polling.
        self.flush(sid)?;
        let Self {
            streams,
            scratch_deferred,
            ..
        } = self;
        if let Some(st) = streams.get_mut(sid) {
            st.progress = None;
            let drained = st.drops.drain(
                |_| Ok::<(), core::convert::Infallible>(()),
                |item| scratch_deferred.push(item),
            );
            if let Err(crate::drop_queue::DropQueueError::Recording) = drained {
                return Err(Error::NotWhileCapturing { op: "sync" });
            }
        }
        self.release_deferred(sid, cursor)?;
        Ok(())
    }
}
