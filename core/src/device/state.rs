//! The device's state behind its lock, and the bookkeeping every operation
//! shares: stream slots, deferred releases, fences, waits.

use alloc::string::ToString;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::buffer::{BufferId, BufferTable, Location};
use super::handle::{Buffer, GraphId, ReleaseQueue};
use super::{DeviceConfig, DeviceStats};
use crate::drop_queue::{DropQueue, Pushed};
use crate::error::Error;
use crate::failure::{AllocId, ErrorGraph, KernelName, Operand};
use crate::info_cache::InfoCache;
use crate::memory::{MemoryLayout, MemoryManager, SliceHandle};
use crate::platform::{Access, DeviceRange, Platform, PlatformError};
use crate::stream::{
    CaptureState, CrossPins, Cursor, StreamId, StreamPool, SyncTable, WaitPlan, WriteMark,
};

/// A fence: an event recorded on a stream when its cursor was `cursor`.
pub(crate) struct Fence<Ev> {
    pub(crate) cursor: Cursor,
    pub(crate) event: Ev,
}

/// What a drop queue holds until its fence passes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Deferred {
    /// A slice of the stream's device pools.
    Device(SliceHandle),
    /// A slice of the pinned host staging pool.
    Host(SliceHandle),
    /// A released graph's pin on a slice of the stream's device pools
    /// (replays of the graph may still be queued).
    Unpin(SliceHandle),
}

/// A buffer or staging slice recorded inside an open capture.
pub(crate) struct WindowUse {
    pub(crate) buffer: Buffer,
    pub(crate) access: Access,
}

/// Everything that moves with one stream.
pub(crate) struct StreamState<P: Platform> {
    pub(crate) stream: P::Stream,
    pub(crate) memory: MemoryManager<P::Storage>,
    pub(crate) drops: DropQueue<Deferred, Fence<P::Event>>,
    pub(crate) capture: CaptureState,
    pub(crate) info: InfoCache<(SliceHandle, DeviceRange)>,
    /// A fence recorded only to learn progress (for cross-stream pins).
    pub(crate) progress: Option<Fence<P::Event>>,
    /// While recording a capture: an event recorded just before it began.
    /// Every write other streams may need to wait for was submitted before
    /// the capture (recorded work is not marked), and an event recorded
    /// inside the capture is a graph node other streams cannot wait on.
    pub(crate) before_capture: Option<Fence<P::Event>>,
    /// Buffers used while recording a capture (kept alive by the graph).
    pub(crate) window: Vec<WindowUse>,
    /// Staging slices used while recording (the graph re-reads them).
    pub(crate) window_host: Vec<SliceHandle>,
}

/// A freed slice waiting for other streams' uses to complete.
pub(crate) struct PendingFree {
    pub(crate) handle: SliceHandle,
    pub(crate) owner: StreamId,
    pub(crate) bytes: u64,
    pub(crate) remaining: u32,
}

/// A sealed graph and what it keeps alive.
pub(crate) struct GraphState<P: Platform> {
    pub(crate) graph: Option<crate::platform::GraphOf<P>>,
    pub(crate) stream: StreamId,
    pub(crate) name: KernelName,
    /// Every buffer the capture used, with the graph's net access.
    pub(crate) uses: Vec<WindowUse>,
    pub(crate) operands: Vec<Operand>,
    pub(crate) pinned: Vec<SliceHandle>,
    pub(crate) host: Vec<SliceHandle>,
}

/// The device's state.
pub(crate) struct Inner<P: Platform> {
    pub(crate) platform: P,
    pub(crate) id: u64,
    pub(crate) config: DeviceConfig,
    pub(crate) layout: MemoryLayout,
    pub(crate) flush: crate::drop_queue::FlushPolicy,
    pub(crate) streams: StreamPool<StreamState<P>>,
    pub(crate) sync: SyncTable,
    pub(crate) plan: WaitPlan,
    pub(crate) buffers: BufferTable<SliceHandle>,
    pub(crate) taint: ErrorGraph<alloc::string::String>,
    pub(crate) host: MemoryManager<P::HostStorage>,
    pub(crate) kernels: Vec<(KernelName, P::Kernel)>,
    pub(crate) graphs: crate::hash::FxHashMap<GraphId, GraphState<P>>,
    pub(crate) next_graph: u64,
    /// Streams recording a capture now. While any is, no event is queried or
    /// synchronized (drivers' global capture mode forbids it).
    pub(crate) recording: u32,
    pub(crate) pins: CrossPins<u32>,
    pub(crate) pending: Vec<Option<PendingFree>>,
    pub(crate) pending_vacant: Vec<u32>,
    pub(crate) releases: Arc<ReleaseQueue>,
    pub(crate) stats: DeviceStats,
    // Scratch space reused by every operation (no allocation when warm).
    pub(crate) scratch_ops: Vec<Operand>,
    pub(crate) scratch_marks: Vec<WriteMark>,
    pub(crate) scratch_bindings: Vec<crate::platform::Binding>,
    pub(crate) scratch_deferred: Vec<Deferred>,
    pub(crate) scratch_ids: Vec<BufferId>,
    pub(crate) scratch_graphs: Vec<GraphId>,
    pub(crate) scratch_pins: Vec<u32>,
}

/// Shorthand for results of device operations.
pub(crate) type Res<T, P> = Result<T, Error<<P as Platform>::Error>>;

impl<P: Platform> Inner<P> {
    /// The stream's state, created on first use.
    pub(crate) fn stream(&mut self, sid: StreamId) -> Res<&mut StreamState<P>, P> {
        let platform = &self.platform;
        let layout = &self.layout;
        let config = &self.config;
        let flush = self.flush;
        let recording = self.recording > 0;
        self.streams
            .get_or_create(sid, || -> Res<StreamState<P>, P> {
                let stream = platform
                    .create_stream()
                    .map_err(|e| Error::platform("create_stream", e))?;
                let storage = platform
                    .device_storage()
                    .map_err(|e| Error::platform("device_storage", e))?;
                let mut memory = MemoryManager::new(storage, layout.clone());
                // Holding flushes cannot fail (nothing is flushed).
                let _ = memory.hold_flushes(recording);
                Ok(StreamState {
                    stream,
                    memory,
                    drops: DropQueue::with_capacity(flush, 256, 16),
                    capture: CaptureState::new(),
                    info: InfoCache::new(config.info_cache),
                    progress: None,
                    before_capture: None,
                    window: Vec::new(),
                    window_host: Vec::new(),
                })
            })
            .map_err(|e| match e {
                crate::stream::pool::GetOrCreateError::OutOfRange(r) => Error::Stream(r),
                crate::stream::pool::GetOrCreateError::Create(e) => e,
            })
    }

    /// Runs `f` with the platform, `sid`'s state and a list collecting
    /// slices to release (e.g. info-cache evictions), then stages those on
    /// `sid`'s drop queue.
    pub(crate) fn with_stream<R>(
        &mut self,
        sid: StreamId,
        f: impl FnOnce(&P, &mut StreamState<P>, &mut Vec<Deferred>) -> R,
    ) -> Res<R, P> {
        self.stream(sid)?;
        let mut deferred = core::mem::take(&mut self.scratch_deferred);
        let r = {
            let Self {
                platform, streams, ..
            } = self;
            let st = streams
                .get_mut(sid)
                .ok_or(Error::InvalidArgument("stream not created"))?;
            f(platform, st, &mut deferred)
        };
        let mut result = Ok(r);
        for d in deferred.drain(..) {
            if let Err(e) = self.defer(sid, d, 0) {
                result = Err(e);
            }
        }
        self.scratch_deferred = deferred;
        result
    }

    /// The live buffer `b` of this device.
    pub(crate) fn check_buffer(&self, b: &Buffer) -> Res<BufferId, P> {
        if b.device() != self.id {
            return Err(Error::StaleBuffer(b.id()));
        }
        self.buffers.get(b.id())?;
        Ok(b.id())
    }

    /// Processes dropped handles: frees buffers (deferred), releases graphs.
    /// Loops because a released graph drops the buffers it kept alive.
    pub(crate) fn process_releases(&mut self) -> Res<(), P> {
        loop {
            {
                let mut q = self.releases.lock();
                if q.buffers.is_empty() && q.graphs.is_empty() {
                    return Ok(());
                }
                core::mem::swap(&mut q.buffers, &mut self.scratch_ids);
                core::mem::swap(&mut q.graphs, &mut self.scratch_graphs);
            }
            let mut ids = core::mem::take(&mut self.scratch_ids);
            let mut graphs = core::mem::take(&mut self.scratch_graphs);
            let mut result = Ok(());
            for id in ids.drain(..) {
                if let Err(e) = self.free_buffer(id) {
                    result = result.and(Err(e));
                }
            }
            for g in graphs.drain(..) {
                if let Err(e) = self.release_graph(g) {
                    result = result.and(Err(e));
                }
            }
            self.scratch_ids = ids;
            self.scratch_graphs = graphs;
            result?;
        }
    }

    /// A buffer's last handle is gone: its claims end, and its slice goes to
    /// the owner's drop queue once no other stream's queued use is pending.
    fn free_buffer(&mut self, id: BufferId) -> Res<(), P> {
        let Ok(slot) = self.buffers.get(id) else {
            return Ok(());
        };
        self.taint.free(AllocId(id.as_u64()));
        let owner = slot.owner;
        let size = slot.size;
        if let Location::Placed { handle, .. } = slot.location {
            let mut outstanding = 0u32;
            for (s, &used) in slot.last_use.iter().enumerate() {
                let s = StreamId(s as u16);
                if s != owner && used > self.sync.completed_cursor(s)? {
                    outstanding += 1;
                }
            }
            if outstanding == 0 {
                self.buffers.remove(id)?;
                self.defer(owner, Deferred::Device(handle), size)?;
            } else {
                let index = match self.pending_vacant.pop() {
                    Some(i) => i,
                    None => {
                        self.pending.push(None);
                        (self.pending.len() - 1) as u32
                    }
                };
                self.pending[index as usize] = Some(PendingFree {
                    handle,
                    owner,
                    bytes: size,
                    remaining: outstanding,
                });
                let slot = self.buffers.get(id)?;
                for (s, &used) in slot.last_use.iter().enumerate() {
                    let s = StreamId(s as u16);
                    if s != owner && used > self.sync.completed_cursor(s)? {
                        self.pins.pin(s, used, index)?;
                    }
                }
                self.buffers.remove(id)?;
                self.stats.cross_stream_pins += 1;
            }
        } else {
            self.buffers.remove(id)?;
        }
        Ok(())
    }

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

    /// Releases cross-stream pins of consumer `sid` that completed; a freed
    /// slice whose last pin goes moves to its owner's drop queue.
    pub(crate) fn release_pins(&mut self, sid: StreamId) -> Res<(), P> {
        let completed = self.sync.completed_cursor(sid)?;
        let mut released = core::mem::take(&mut self.scratch_pins);
        self.pins
            .release_completed(sid, completed, |i| released.push(i))?;
        let mut result = Ok(());
        for i in released.drain(..) {
            let Some(p) = self.pending.get_mut(i as usize).and_then(|p| p.as_mut()) else {
                continue;
            };
            p.remaining -= 1;
            if p.remaining == 0 {
                if let Some(p) = self.pending[i as usize].take() {
                    self.pending_vacant.push(i);
                    if let Err(e) = self.defer(p.owner, Deferred::Device(p.handle), p.bytes) {
                        result = result.and(Err(e));
                    }
                }
            }
        }
        self.scratch_pins = released;
        result
    }

    /// Records progress fences on streams whose cross-stream pins wait for
    /// work no fence covers yet, so polling can release them.
    pub(crate) fn fence_pinned_streams(&mut self) -> Res<(), P> {
        for s in 0..self.streams.capacity() {
            let sid = StreamId(s as u16);
            if self.pins.pinned(sid) == 0 {
                continue;
            }
            let cursor = self.sync.cursor(sid)?;
            let platform = &self.platform;
            let Some(st) = self.streams.get_mut(sid) else {
                continue;
            };
            if st.progress.is_some() || self.recording > 0 {
                continue;
            }
            let event = platform
                .record(&mut st.stream)
                .map_err(|e| Error::platform("record", e))?;
            st.progress = Some(Fence { cursor, event });
            self.stats.events_recorded += 1;
        }
        Ok(())
    }

    /// Makes `consumer` wait for the writes in `self.scratch_marks` that it
    /// has not synced yet: one event per producer stream.
    pub(crate) fn wait_for_marks(&mut self, consumer: StreamId) -> Res<(), P> {
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
                .ok_or(Error::InvalidArgument("producer stream not created"))?;
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
                    let event = self
                        .platform
                        .record(&mut pst.stream)
                        .map_err(|e| Error::platform("record", e))?;
                    self.stats.events_recorded += 1;
                    (at, event, false)
                }
            };
            let cst = self
                .streams
                .get_mut(consumer)
                .ok_or(Error::InvalidArgument("consumer stream not created"))?;
            let waited = self.platform.wait(&mut cst.stream, &event);
            if reused {
                if let Some(pst) = self.streams.get_mut(producer) {
                    pst.before_capture = Some(Fence { cursor: at, event });
                }
            }
            waited.map_err(|e| Error::platform("wait", e))?;
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

    /// Holds every pool's storage flushes while any stream records a
    /// capture (drivers in global capture mode forbid releasing memory, and
    /// would invalidate the capture), and resumes them once none does.
    /// Call after every change of `recording`.
    pub(crate) fn hold_flushes_while_recording(&mut self) -> Res<(), P> {
        let hold = self.recording > 0;
        let mut result = Ok(());
        for (_, st) in self.streams.iter_mut() {
            if let Err(e) = st.memory.hold_flushes(hold) {
                result = Err(Error::Memory(e));
            }
        }
        self.host.hold_flushes(hold).map_err(host_err::<P>)?;
        result
    }

    /// Dooms `sid`'s open window because work asked for inside it failed
    /// on the platform before it was queued (the graph would miss it).
    pub(crate) fn doom_platform(&mut self, sid: StreamId, op: &'static str, e: &Error<P::Error>) {
        let kind = error_kind(e);
        self.doom(sid, crate::stream::DoomReason::Platform { op, kind });
    }

    /// Dooms `sid`'s open capture window, if any.
    pub(crate) fn doom(&mut self, sid: StreamId, reason: crate::stream::DoomReason) {
        if let Some(st) = self.streams.get_mut(sid) {
            st.capture.doom(reason);
        }
    }
}

/// Converts a host-pool error (same platform error type) into the core error.
pub(crate) fn host_err<P: Platform>(e: crate::memory::MemoryError<P::Error>) -> Error<P::Error> {
    Error::Memory(e)
}

/// Renders a platform error for the failure record.
pub(crate) fn describe<E: PlatformError>(e: &E) -> alloc::string::String {
    e.to_string()
}

/// The platform classification of a core error, for a capture window's
/// doom reason (`Other` for errors that carry none).
pub(crate) fn error_kind<E: PlatformError>(e: &Error<E>) -> crate::platform::ErrorKind {
    use crate::memory::{MemoryError, OomCause};
    use crate::platform::ErrorKind;
    match e {
        Error::Platform { source, .. } => source.kind(),
        Error::Failed { kind, .. } => *kind,
        Error::Memory(MemoryError::Storage { source, .. }) => source.kind(),
        Error::Memory(MemoryError::OutOfMemory {
            cause: OomCause::Storage(source),
            ..
        }) => source.kind(),
        Error::Memory(MemoryError::OutOfMemory { .. }) => ErrorKind::OutOfMemory,
        _ => ErrorKind::Other,
    }
}
