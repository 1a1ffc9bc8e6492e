//! The device API users call, generic over a [`Platform`].
//!
//! A [`Device`] is a cheap-clone handle around one lock (a `spin` mutex, so it
//! works without `std`); every operation takes the lock once. Buffers and
//! graphs are handles: dropping the last clone releases what they name,
//! deferred through the owning stream's drop queue until the device is done
//! with it.
//!
//! Every operation applies the core's rules:
//! - multi-stream sync: a submission waits on another stream only when it
//!   uses memory that stream wrote (or, for a write, used) since the last
//!   sync — one event per producer stream;
//! - the error-taint graph: a launch over claimed inputs is skipped and its
//!   outputs inherit the claim; a failed launch or copy claims its outputs; a
//!   read of claimed bytes fails with the chain back to the root failure;
//! - capture: `prepare` (warm-up) → `begin_capture` → `end_capture` seals a
//!   [`Graph`]; a failure inside the window dooms it.

mod buffer;
mod config;
mod doom;
mod fences;
mod frees;
mod graph;
mod handle;
mod launch;
mod order;
mod state;
mod stats;
mod transfer;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

pub use buffer::{BufferId, StaleBuffer};
pub use config::DeviceConfig;
pub use handle::{Arg, Buffer, Graph, GraphId, KernelId};
pub use launch::Launched;
pub use stats::{Census, DeviceStats, InfoCensus};

use crate::drop_queue::FlushPolicy;
use crate::error::Error;
use crate::failure::{ErrorGraph, FailureId};
use crate::memory::{MemoryLayout, MemoryManager, MemoryReport};
use crate::platform::{Capabilities, DeviceProperties, KernelSource, LaunchDims, Platform};
use crate::stream::{CrossPins, Phase, StreamId, StreamPool, SyncTable, WaitPlan};
use state::Inner;

/// The next device id. Pointer-sized, not `u64`: 32-bit firmware targets
/// (`thumbv7em`, `riscv32imac`) have no 64-bit atomics. The increment is
/// checked, so ids never repeat; on a 32-bit target the 2^32-th device is
/// refused with a typed error instead of reusing an id.
static NEXT_DEVICE: AtomicUsize = AtomicUsize::new(1);

/// A fresh device id, or `None` once every id was handed out.
fn next_device_id() -> Option<u64> {
    NEXT_DEVICE
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1))
        .ok()
        .map(|n| n as u64)
}

/// A GPU seen through the core. Clone it to share it (between threads when
/// the platform's types are `Send`).
pub struct Device<P: Platform> {
    inner: Arc<spin::Mutex<Inner<P>>>,
}

impl<P: Platform> Clone for Device<P> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<P: Platform> Device<P> {
    /// A device over `platform`. Streams are created on first use.
    pub fn new(platform: P, config: DeviceConfig) -> Result<Self, Error<P::Error>> {
        let props = platform.properties();
        if config.streams == 0 {
            return Err(Error::InvalidArgument("a device needs at least one stream"));
        }
        let flush = config.flush.unwrap_or(FlushPolicy::for_device(&props));
        let layout = config
            .layout
            .clone()
            .unwrap_or_else(|| MemoryLayout::for_device(&props));
        let host_storage = platform
            .host_storage()
            .map_err(|e| Error::platform("host_storage", e))?;
        let host = MemoryManager::new(host_storage, MemoryLayout::for_device(&props));
        let n = config.streams as usize;
        let id = next_device_id().ok_or(Error::InvalidArgument(
            "device ids exhausted: this 32-bit target created 2^32 devices",
        ))?;
        let inner = Inner {
            platform,
            id,
            layout,
            flush,
            streams: StreamPool::new(config.streams, 0),
            sync: SyncTable::new(n),
            plan: WaitPlan::new(n),
            buffers: buffer::BufferTable::new(n),
            taint: ErrorGraph::new(),
            host,
            kernels: Vec::new(),
            graphs: Default::default(),
            next_graph: 1,
            recording: 0,
            pins: CrossPins::new(n),
            pending: Vec::new(),
            pending_vacant: Vec::new(),
            releases: Arc::new(spin::Mutex::new(handle::Releases::default())),
            stats: DeviceStats::default(),
            scratch_ops: Vec::new(),
            scratch_marks: Vec::new(),
            scratch_bindings: Vec::new(),
            scratch_deferred: Vec::new(),
            scratch_ids: Vec::new(),
            scratch_graphs: Vec::new(),
            scratch_pins: Vec::new(),
            config,
        };
        Ok(Self {
            inner: Arc::new(spin::Mutex::new(inner)),
        })
    }

    /// The device's properties.
    pub fn properties(&self) -> DeviceProperties {
        self.inner.lock().platform.properties()
    }

    /// What the platform offers beyond the required methods: its declared
    /// [`Capabilities`], less [`Capabilities::GRAPH_CAPTURE`] when it
    /// provides no [`GraphCapture`](crate::platform::GraphCapture) (the
    /// capture calls then fail with [`Error::NotSupported`]).
    pub fn capabilities(&self) -> Capabilities {
        let inner = self.inner.lock();
        let mut caps = inner.platform.capabilities();
        if inner.platform.capture().is_none() {
            caps.remove(Capabilities::GRAPH_CAPTURE);
        }
        caps
    }

    /// Runs `f` with the platform (e.g. the mock's checker) under the lock.
    pub fn with_platform<R>(&self, f: impl FnOnce(&P) -> R) -> R {
        f(&self.inner.lock().platform)
    }

    /// What the device did so far.
    pub fn stats(&self) -> DeviceStats {
        self.inner.lock().stats
    }

    /// Compiles and loads a kernel.
    pub fn load_kernel(&self, source: &KernelSource<'_>) -> Result<KernelId, Error<P::Error>> {
        self.inner.lock().load_kernel(source)
    }

    /// A new buffer of `size` bytes in `stream`'s pools. Out of memory is an
    /// error (after deferred frees were reclaimed and the reserve retried).
    pub fn alloc(&self, stream: StreamId, size: u64) -> Result<Buffer, Error<P::Error>> {
        self.inner.lock().alloc(stream, size)
    }

    /// A new buffer that exists even when its reservation fails: it then has
    /// no memory and a failure claims it (launches over it are skipped, a
    /// read of it reports the reservation failure).
    pub fn empty(&self, stream: StreamId, size: u64) -> Result<Buffer, Error<P::Error>> {
        self.inner.lock().empty(stream, size)
    }

    /// A new buffer holding `data`, uploaded on `stream`.
    pub fn upload(&self, stream: StreamId, data: &[u8]) -> Result<Buffer, Error<P::Error>> {
        let mut inner = self.inner.lock();
        let b = inner.alloc(stream, data.len() as u64)?;
        inner.write(stream, &b, data)?;
        Ok(b)
    }

    /// Queues a copy of `data` (exactly the buffer's size) into `buffer`.
    pub fn write(
        &self,
        stream: StreamId,
        buffer: &Buffer,
        data: &[u8],
    ) -> Result<(), Error<P::Error>> {
        self.inner.lock().write(stream, buffer, data)
    }

    /// Reads `buffer` back through `stream`, waiting for it.
    pub fn read(&self, stream: StreamId, buffer: &Buffer) -> Result<Vec<u8>, Error<P::Error>> {
        self.inner.lock().read(stream, buffer)
    }

    /// Queues `kernel` on `stream`. `info` words (shapes, strides, scalars)
    /// are served from the info cache and bound last, read-only.
    pub fn launch(
        &self,
        stream: StreamId,
        kernel: KernelId,
        dims: LaunchDims,
        args: &[Arg<'_>],
        info: &[u64],
    ) -> Result<Launched, Error<P::Error>> {
        self.inner.lock().launch(stream, kernel, dims, args, info)
    }

    /// Opens a capture window on `stream` with its warm-up.
    pub fn prepare(&self, stream: StreamId) -> Result<(), Error<P::Error>> {
        self.inner.lock().prepare(stream)
    }

    /// Starts recording `stream` (after `prepare` and a warm-up run).
    pub fn begin_capture(&self, stream: StreamId) -> Result<(), Error<P::Error>> {
        self.inner.lock().begin_capture(stream)
    }

    /// Seals the capture into a graph; refuses a doomed window.
    pub fn end_capture(&self, stream: StreamId) -> Result<Graph, Error<P::Error>> {
        self.inner.lock().end_capture(stream)
    }

    /// Closes `stream`'s window without a graph.
    pub fn abort_capture(&self, stream: StreamId) -> Result<(), Error<P::Error>> {
        self.inner.lock().abort_capture(stream)
    }

    /// The capture phase of `stream`.
    pub fn capture_phase(&self, stream: StreamId) -> Phase {
        self.inner
            .lock()
            .streams
            .get(stream)
            .map_or(Phase::NoCapture, |s| s.capture.phase())
    }

    /// Queues a replay of `graph`.
    pub fn replay(&self, graph: &Graph) -> Result<Launched, Error<P::Error>> {
        self.inner.lock().replay(graph)
    }

    /// Waits for everything queued on `stream`, then releases its deferred frees.
    pub fn sync(&self, stream: StreamId) -> Result<(), Error<P::Error>> {
        let mut inner = self.inner.lock();
        inner.streams.check(stream)?;
        inner.process_releases()?;
        inner.sync_stream(stream)
    }

    /// Waits for every stream; afterwards every deferred free has been
    /// released (nothing stays pinned by a completed use).
    pub fn sync_all(&self) -> Result<(), Error<P::Error>> {
        let mut inner = self.inner.lock();
        // Up to three rounds: frees released by one stream's sync can stage
        // frees on another stream's queue (cross-stream pins).
        for _ in 0..3 {
            inner.process_releases()?;
            for s in 0..inner.streams.capacity() {
                let id = StreamId(s as u16);
                if inner.streams.get(id).is_some() {
                    inner.sync_stream(id)?;
                }
            }
            let settled = inner.pins.total() == 0
                && inner.streams.iter().all(|(_, s)| s.drops.is_empty())
                && inner.releases.lock().buffers.is_empty();
            if settled {
                break;
            }
        }
        Ok(())
    }

    /// Releases, without blocking, every deferred free whose fence passed.
    /// Returns the number of items released.
    pub fn poll(&self) -> Result<usize, Error<P::Error>> {
        let mut inner = self.inner.lock();
        inner.process_releases()?;
        inner.fence_pinned_streams()?;
        let mut n = 0;
        for s in 0..inner.streams.capacity() {
            let id = StreamId(s as u16);
            if inner.streams.get(id).is_some() {
                n += inner.reclaim(id)?;
            }
        }
        Ok(n)
    }

    /// The memory report of `stream`'s pools (empty if never used).
    pub fn memory_report(&self, stream: StreamId) -> Option<MemoryReport> {
        self.inner
            .lock()
            .streams
            .get(stream)
            .map(|s| s.memory.report())
    }

    /// Releases every idle page of every stream not in a capture window.
    pub fn cleanup(&self) -> Result<(), Error<P::Error>> {
        let mut inner = self.inner.lock();
        inner.process_releases()?;
        for (_, st) in inner.streams.iter_mut() {
            if !st.capture.is_open() {
                st.memory.cleanup()?;
            }
        }
        Ok(())
    }

    /// Swaps the pool layout of every stream and of streams created
    /// afterwards. Refuses, changing nothing, while a capture window is open
    /// or the caller holds live buffers (the error gives their bytes).
    /// Otherwise cached info buffers no graph pins are released (waiting for
    /// their fences), and the swap is refused only if memory is still held by
    /// live graphs (the error gives the bytes); the layout is then unchanged
    /// everywhere.
    pub fn install_pools(&self, layout: MemoryLayout) -> Result<(), Error<P::Error>> {
        let mut inner = self.inner.lock();
        inner.process_releases()?;
        if inner.streams.iter().any(|(_, st)| st.capture.is_open()) {
            return Err(Error::NotWhileCapturing {
                op: "install_pools",
            });
        }
        // The caller's live buffers: refuse before touching anything.
        let held = inner.buffers.placed_bytes();
        if held > 0 {
            return Err(Error::Memory(crate::memory::MemoryError::InUse {
                bytes: held,
            }));
        }
        // Cached info buffers are the device's, not the caller's: drop the
        // unpinned ones and wait for every deferred free, so only what the
        // caller (or a live graph) holds counts as in use.
        for s in 0..inner.streams.capacity() {
            let id = StreamId(s as u16);
            if inner.streams.get(id).is_some() {
                inner.with_stream(id, |_, st, evicted| {
                    st.info
                        .clear_unpinned(|(h, _)| evicted.push(state::Deferred::Device(h)));
                })?;
                inner.sync_stream(id)?;
            }
        }
        let in_use: u64 = inner
            .streams
            .iter()
            .map(|(_, st)| st.memory.report().total().in_use)
            .sum();
        if in_use > 0 {
            return Err(Error::Memory(crate::memory::MemoryError::InUse {
                bytes: in_use,
            }));
        }
        for (_, st) in inner.streams.iter_mut() {
            st.memory.install(layout.clone())?;
        }
        inner.layout = layout;
        Ok(())
    }

    /// Where `buffer`'s bytes are (`None` for a buffer without memory or of
    /// another device). For diagnostics and tests.
    pub fn range_of(&self, buffer: &Buffer) -> Option<crate::platform::DeviceRange> {
        let inner = self.inner.lock();
        if buffer.device() != inner.id {
            return None;
        }
        inner.buffers.get(buffer.id()).ok()?.range()
    }

    /// The failure that claims any byte of `buffer`, if one does.
    pub fn failure_of(&self, buffer: &Buffer) -> Option<FailureId> {
        let inner = self.inner.lock();
        let size = inner.buffers.get(buffer.id()).ok()?.size;
        inner.taint.failure(crate::failure::Region::new(
            crate::failure::AllocId(buffer.id().as_u64()),
            0,
            size,
        ))
    }

    /// Info-cache figures of `stream` (`None` for a stream never used), for
    /// invariant checks: entries cached, entries the open capture window
    /// recorded, and graphs holding pins.
    pub fn info_census(&self, stream: StreamId) -> Option<InfoCensus> {
        let inner = self.inner.lock();
        inner.streams.get(stream).map(|s| InfoCensus {
            entries: s.info.len(),
            window: s.info.window_len(),
            graphs: s.info.graph_count(),
        })
    }

    /// Info-cache entries `graph` pins (`None` for a graph that is not live
    /// on this device). For invariant checks.
    pub fn graph_info_pins(&self, graph: &Graph) -> Option<usize> {
        let inner = self.inner.lock();
        if graph.device() != inner.id {
            return None;
        }
        let gs = inner.graphs.get(&graph.id())?;
        let st = inner.streams.get(gs.stream)?;
        Some(
            st.info
                .graph_entries(crate::info_cache::GraphId(graph.id().0))
                .unwrap_or(0),
        )
    }

    /// Counts for invariant checks: live buffers, live failures, live graphs,
    /// items held by drop queues, cross-stream pins.
    pub fn census(&self) -> Census {
        let mut inner = self.inner.lock();
        let _ = inner.process_releases();
        Census {
            buffers: inner.buffers.live(),
            failures: inner.taint.failure_count(),
            graphs: inner.graphs.len(),
            deferred: inner.streams.iter().map(|(_, s)| s.drops.len()).sum(),
            cross_pins: inner.pins.total(),
            live_bytes: inner
                .streams
                .iter()
                .map(|(_, s)| s.memory.report().total().in_use)
                .sum(),
        }
    }
}
