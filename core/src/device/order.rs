//! Wait ordering: what a submission must be ordered after (the last
//! write, and for a write every other stream's last use), and the one event
//! wait per producer stream that orders it.

use super::buffer::BufferId;
use super::lock::RawLock;
use super::state::{Env, Fence, Inner, Lane, Res};
use crate::error::Error;
use crate::platform::{Access, Platform};
use crate::stream::{Cursor, StreamId, WriteMark};

impl<P: Platform> Inner<P> {
    /// Makes `consumer` wait for the writes in `self.scratch_marks` that it
    /// has not synced yet: one event per producer stream.
    pub(crate) fn wait_for_marks<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        consumer: StreamId,
    ) -> Res<(), P> {
        if self.scratch_marks.is_empty() {
            return Ok(());
        }
        let mut lane = env.lane(consumer)?;
        self.wait_for_marks_on(env, consumer, &mut lane)
    }

    /// [`wait_for_marks`](Self::wait_for_marks) with `consumer`'s lane
    /// already locked by the caller (a launch keeps it for its own
    /// submission). Producers' lanes are locked one at a time while it is
    /// held: the caller holds the device lock, and a thread holding a lane
    /// without it only makes one submission, so no cycle can form.
    #[inline(always)]
    pub(crate) fn wait_for_marks_on<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        consumer: StreamId,
        lane: &mut Lane<P>,
    ) -> Res<(), P> {
        let Some(first) = self.scratch_marks.first().map(|m| m.stream) else {
            return Ok(());
        };
        // The common case: every mark names one producer (two streams, or a
        // hand-off). Its wait is decided without building a plan.
        let mut need = 0;
        let mut single = true;
        for m in &self.scratch_marks {
            if m.stream != first {
                single = false;
                break;
            }
            need = need.max(m.cursor);
        }
        if single {
            if self.sync.needs_wait(consumer, first, need)? {
                self.wait_one(env, consumer, lane, first)?;
            }
            return Ok(());
        }
        self.sync
            .plan(consumer, self.scratch_marks.iter().copied(), &mut self.plan)?;
        let n = self.plan.len();
        for k in 0..n {
            let Some((producer, _)) = self.plan.waits().nth(k) else {
                break;
            };
            self.wait_one(env, consumer, lane, producer)?;
        }
        Ok(())
    }

    /// Makes `consumer` (its lane `lane`, held) wait for everything
    /// `producer` submitted so far: one event recorded on `producer` and
    /// waited on, and the sync table told.
    #[inline]
    fn wait_one<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        consumer: StreamId,
        lane: &mut Lane<P>,
        producer: StreamId,
    ) -> Res<(), P> {
        // A recording producer: wait on the event recorded before its
        // capture began (it covers every write it can be waited for).
        let kept = if self.recording > 0 {
            let pst = self
                .streams
                .get_mut(producer)
                .ok_or_else(|| Error::InvalidArgument("producer stream not created"))?;
            match pst.before_capture.take() {
                Some(f) if pst.capture.is_recording() => Some(f),
                _ => None,
            }
        } else {
            None
        };
        let (at, event, reused) = match kept {
            Some(f) => (f.cursor, f.event, true),
            None => {
                let at = self.sync.cursor(producer)?;
                let event = env.record(producer)?;
                self.stats.events_recorded += 1;
                (at, event, false)
            }
        };
        let waited = lane.stream.as_mut().map(|s| env.platform.wait(s, &event));
        if reused {
            if let Some(pst) = self.streams.get_mut(producer) {
                pst.before_capture = Some(Fence { cursor: at, event });
            }
        }
        waited
            .ok_or_else(|| Error::InvalidArgument("stream not created"))?
            .map_err(|e| Error::platform("wait", e))?;
        self.stats.waits += 1;
        self.sync.synced(consumer, producer, at)?;
        Ok(())
    }

    /// Fills `scratch_marks` with what a submission on `sid` using `b` with
    /// `access` must be ordered after: the last write, and for a write every
    /// other stream's last use.
    pub(crate) fn push_marks(&mut self, id: BufferId, access: Access) -> Res<(), P> {
        let slot = self.buffers.get(id)?;
        if let Some(w) = slot.last_write() {
            self.scratch_marks.push(w);
        }
        if access.writes() {
            for (s, &c) in slot.last_use().iter().enumerate() {
                if c > 0 {
                    self.scratch_marks.push(WriteMark {
                        stream: StreamId(s as u16),
                        cursor: c,
                    });
                }
            }
        }
        Ok(())
    }

    /// Records that submission `cursor` on `sid` used `id` with `access`.
    #[inline]
    pub(crate) fn mark_use(
        &mut self,
        id: BufferId,
        sid: StreamId,
        cursor: Cursor,
        access: Access,
    ) -> Res<(), P> {
        self.buffers
            .get_mut(id)?
            .mark_use(sid, cursor, access.writes());
        Ok(())
    }
}
