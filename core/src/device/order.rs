//! Wait ordering: what a submission must be ordered after (the last
//! write, and for a write every other stream's last use), and the one event
//! wait per producer stream that orders it.

use super::buffer::BufferId;
use super::lock::RawLock;
use super::state::{Env, Fence, Inner, Res};
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
        self.sync
            .plan(consumer, self.scratch_marks.iter().copied(), &mut self.plan)?;
        if self.plan.is_empty() {
            return Ok(());
        }
        let n = self.plan.len();
        for k in 0..n {
            let Some((producer, _)) = self.plan.waits().nth(k) else {
                break;
            };
            let pst = self
                .streams
                .get_mut(producer)
                .ok_or_else(|| Error::InvalidArgument("producer stream not created"))?;
            // A recording producer: wait on the event recorded before its
            // capture began (it covers every write it can be waited for).
            let kept = match pst.before_capture.take() {
                Some(f) if pst.capture.is_recording() => Some(f),
                _ => None,
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
            let waited = env.on_stream(consumer, |p, s| p.wait(s, &event));
            if reused {
                if let Some(pst) = self.streams.get_mut(producer) {
                    pst.before_capture = Some(Fence { cursor: at, event });
                }
            }
            waited?.map_err(|e| Error::platform("wait", e))?;
            self.stats.waits += 1;
            self.sync.synced(consumer, producer, at)?;
        }
        Ok(())
    }

    /// Fills `scratch_marks` with what a submission on `sid` using `b` with
    /// `access` must be ordered after: the last write, and for a write every
    /// other stream's last use.
    pub(crate) fn push_marks(&mut self, id: BufferId, access: Access) -> Res<(), P> {
        let slot = self.buffers.get(id)?;
        if let Some(w) = slot.last_write {
            self.scratch_marks.push(w);
        }
        if access.writes() {
            for (s, &c) in slot.last_use.iter().enumerate() {
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
    pub(crate) fn mark_use(
        &mut self,
        id: BufferId,
        sid: StreamId,
        cursor: Cursor,
        access: Access,
    ) -> Res<(), P> {
        let slot = self.buffers.get_mut(id)?;
        if let Some(u) = slot.last_use.get_mut(sid.index()) {
            *u = (*u).max(cursor);
        }
        if access.writes() {
            slot.last_write = Some(WriteMark {
                stream: sid,
                cursor,
            });
        }
        Ok(())
    }
}
