//! The device's state behind its lock: per-stream state, sealed graphs,
//! and access to streams and buffers. What operations do with it lives in
//! the files named after each concern: `frees.rs` (dropped handles, deferred
//! frees, cross-stream pins), `fences.rs` (drop-queue fences, reclaiming,
//! host syncs), `order.rs` (cross-stream wait placement), `doom.rs` (what a
//! failure does to an open capture window).

use alloc::string::ToString;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::buffer::{BufferId, BufferTable};
use super::frees::PendingFree;
use super::handle::{Buffer, GraphId, ReleaseQueue};
use super::{DeviceConfig, DeviceStats};
use crate::drop_queue::DropQueue;
use crate::error::Error;
use crate::failure::{ErrorGraph, KernelName, Operand};
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
}

/// Converts a host-pool error (same platform error type) into the core error.
pub(crate) fn host_err<P: Platform>(e: crate::memory::MemoryError<P::Error>) -> Error<P::Error> {
    Error::Memory(e)
}

/// Renders a platform error for the failure record.
pub(crate) fn describe<E: PlatformError>(e: &E) -> alloc::string::String {
    e.to_string()
}
