//! The device API users call, generic over a [`Platform`] and the lock its
//! host picks ([`RawLock`]).
//!
//! A [`Device`] is a cheap-clone handle. Its bookkeeping sits behind one
//! lock; the platform and each stream's driver queue (its lane) live outside
//! it, so [`Device::with_platform`] takes no lock and a blocking call needs
//! none. Operations that block are split: submit under the lock, wait with
//! no lock held, complete under the lock (`blocking.rs`). A launch on the
//! common path is booked under the device lock and submitted to the driver
//! holding only its stream's lane, so threads launching on different streams
//! overlap their driver calls. Buffers and graphs are handles: dropping the
//! last clone releases what they name, deferred through the owning stream's
//! drop queue until the device is done with it.
//!
//! Every operation applies the core's rules:
//! - multi-stream sync: a submission waits on another stream only when it
//!   uses memory that stream wrote (or, for a write, used) since the last
//!   sync — one event per producer stream;
//! - the error-taint graph: a launch over claimed inputs is skipped and its
//!   outputs inherit the claim; a failed launch or copy claims its outputs; a
//!   read of claimed bytes fails with the chain back to the root failure;
//! - capture: `prepare` (warm-up) → `begin_capture` → `end_capture` seals a
//!   [`Graph`]; a failure inside the window dooms it, and a refused window
//!   claims what it would have written.

mod blocking;
mod buffer;
mod config;
mod doom;
mod fences;
mod frees;
mod graph;
mod handle;
mod info;
mod inspect;
mod launch;
mod lock;
mod order;
mod release_queue;
mod state;
mod stats;
mod teardown;
#[cfg(test)]
mod tests;
mod transfer;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

pub use blocking::SYNC_ALL_ROUNDS;
pub use buffer::{BufferId, StaleBuffer};
pub use config::{ConfigError, DeviceConfig, MAX_STREAMS};
pub use handle::{Arg, Buffer, Graph, GraphId, KernelId};
pub use launch::Launched;
pub use lock::{
    DefaultLock, InterruptMask, LocalLock, LockFamilyMutex, MaskedGuard, MaskedLock, MaskedMutex,
    RawLock, SpinLock,
};
#[cfg(feature = "std")]
pub use lock::{ParkingLock, StdLock, YieldNow};
pub use stats::{Census, DeviceStats, InfoCensus};

use crate::drop_queue::FlushPolicy;
use crate::error::Error;
use crate::failure::ErrorGraph;
use crate::memory::{MemoryLayout, MemoryManager};
use crate::platform::{Capabilities, DeviceProperties, LaunchDims, Platform};
use crate::stream::{CrossPins, Phase, StreamId, StreamPool, SyncTable, WaitPlan};
use state::{Env, Inner};

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

/// The guard of the device lock.
type StateGuard<'a, P, L> =
    <<L as RawLock>::Mutex<Inner<P>> as LockFamilyMutex<Inner<P>>>::Guard<'a>;

/// What a device shares between its clones.
pub(crate) struct Shared<P: Platform, L: RawLock> {
    /// The bookkeeping, behind the device lock. Declared first: it is torn
    /// down before the platform that made what it holds.
    pub(crate) state: L::Mutex<Inner<P>>,
    /// The platform and the streams' lanes, outside the lock.
    pub(crate) env: Env<P, L>,
}

/// A GPU seen through the core. Clone it to share it (between threads when
/// the platform and its types are `Send` and `Sync` and the lock `L` is a
/// thread-safe one).
///
/// `L` is the lock its host picks: [`DefaultLock`] (`ParkingLock` with the
/// `std` feature, [`SpinLock`] without), `StdLock` (the standard library's
/// mutex), [`LocalLock`] for one context, [`MaskedLock`] where interrupt
/// handlers call the device too, or any [`RawLock`].
pub struct Device<P: Platform, L: RawLock = DefaultLock> {
    shared: Arc<Shared<P, L>>,
}

impl<P: Platform, L: RawLock> Clone for Device<P, L> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<P: Platform> Device<P> {
    /// A device over `platform`, on the [`DefaultLock`]. Streams are created
    /// on first use; the tables indexed by stream grow with the streams in
    /// use. Fails with [`Error::Config`] for no streams or more than
    /// [`MAX_STREAMS`], and with [`LayoutError::PageLargerThanDevice`]
    /// (in [`Error::Memory`]) for a configured layout whose pages exceed
    /// the device's memory.
    ///
    /// [`LayoutError::PageLargerThanDevice`]: crate::memory::LayoutError::PageLargerThanDevice
    pub fn new(platform: P, config: DeviceConfig) -> Result<Self, Error<P::Error>> {
        Self::with_lock(platform, config)
    }
}

impl<P: Platform, L: RawLock> Device<P, L> {
    /// A device over `platform` on the lock `L`, e.g.
    /// `Device::<_, SpinLock>::with_lock(platform, config)`; otherwise as
    /// [`Device::new`].
    pub fn with_lock(platform: P, config: DeviceConfig) -> Result<Self, Error<P::Error>> {
        config.check()?;
        let props = platform.properties();
        let flush = config.flush.unwrap_or(FlushPolicy::for_device(&props));
        // A layout from properties the pools cannot honour (an alignment
        // past `MAX_ALIGNMENT`) is refused here, not at the first reserve.
        let from_props = || {
            MemoryLayout::try_for_device(&props)
                .map_err(|e| Error::Memory(crate::memory::MemoryError::Layout(e)))
        };
        let layout = match &config.layout {
            // A page larger than the device would make every reserve of
            // its pool a false out of memory: refused here.
            Some(l) => {
                l.fits(props.total_memory)
                    .map_err(|e| Error::Memory(crate::memory::MemoryError::Layout(e)))?;
                l.clone()
            }
            None => from_props()?,
        };
        let staging = match (&config.staging_layout, &config.layout) {
            (Some(l), _) | (None, Some(l)) => l.clone(),
            (None, None) => layout.clone(),
        };
        let host_storage = platform
            .host_storage()
            .map_err(|e| Error::platform("host_storage", e))?;
        let host = MemoryManager::new(host_storage, staging);
        let id = next_device_id().ok_or_else(|| {
            Error::InvalidArgument("device ids exhausted: this 32-bit target created 2^32 devices")
        })?;
        let inner = Inner {
            id,
            layout,
            flush,
            streams: StreamPool::new(config.streams, 0),
            sync: SyncTable::new(0),
            plan: WaitPlan::new(0),
            buffers: buffer::BufferTable::new(0),
            taint: ErrorGraph::new(),
            host,
            kernels: Vec::new(),
            graphs: Default::default(),
            next_graph: 1,
            recording: 0,
            pins: CrossPins::new(0),
            pending: crate::arena::Arena::new(),
            releases: release_queue::ReleaseQueue::open(id, release_queue::family_of::<L>()),
            stats: DeviceStats::default(),
            release_error: None,
            scratch_ops: Vec::new(),
            scratch_marks: Vec::new(),
            scratch_bindings: Vec::new(),
            scratch_deferred: Vec::new(),
            scratch_ids: Vec::new(),
            scratch_graphs: Vec::new(),
            scratch_pins: Vec::new(),
            scratch_bytes: Vec::new(),
            config: config.clone(),
        };
        Ok(Self {
            shared: Arc::new(Shared {
                state: L::Mutex::new(inner),
                env: Env::new(platform, usize::from(config.streams)),
            }),
        })
    }

    /// The device lock and what lives outside it.
    fn parts(&self) -> (StateGuard<'_, P, L>, &Env<P, L>) {
        (self.shared.state.lock(), &self.shared.env)
    }

    /// The device's properties.
    pub fn properties(&self) -> DeviceProperties {
        self.shared.env.platform.properties()
    }

    /// What the platform offers beyond the required methods: its declared
    /// [`Capabilities`], less [`Capabilities::GRAPH_CAPTURE`] when it
    /// provides no [`GraphCapture`](crate::platform::GraphCapture) (the
    /// capture calls then fail with [`Error::NotSupported`]).
    pub fn capabilities(&self) -> Capabilities {
        let platform = &self.shared.env.platform;
        let mut caps = platform.capabilities();
        if platform.capture().is_none() {
            caps.remove(Capabilities::GRAPH_CAPTURE);
        }
        caps
    }

    /// Runs `f` with the platform (e.g. the mock's checker). No lock is
    /// held: `f` may call the device.
    pub fn with_platform<R>(&self, f: impl FnOnce(&P) -> R) -> R {
        f(&self.shared.env.platform)
    }

    /// What the device did so far.
    pub fn stats(&self) -> DeviceStats {
        self.shared.state.lock().stats
    }

    /// The first error of a deferred release since the last call (a
    /// dropped buffer's free, a dropped graph's destroy, a flush of deferred
    /// frees that came due), if any. Such errors never fail the unrelated
    /// operation that happened to run the release; each is counted in
    /// [`DeviceStats::release_errors`] and the first is kept here.
    pub fn take_release_error(&self) -> Option<Error<P::Error>> {
        self.shared.state.lock().release_error.take()
    }

    /// A new buffer that exists even when its reservation fails: it then has
    /// no memory and a failure claims it (launches over it are skipped, a
    /// read of it reports the reservation failure). A zero-byte request
    /// always fails its reservation that way.
    pub fn empty(&self, stream: StreamId, size: u64) -> Result<Buffer, Error<P::Error>> {
        self.allocate(stream, "empty", |inner, env, may_sync| {
            inner.empty(env, stream, size, may_sync)
        })
    }

    /// A new buffer holding `data`, uploaded on `stream`.
    pub fn upload(&self, stream: StreamId, data: &[u8]) -> Result<Buffer, Error<P::Error>> {
        let size = data.len() as u64;
        let b = self.allocate(stream, "upload", |inner, env, may_sync| {
            inner.alloc(env, stream, size, may_sync)
        })?;
        self.write(stream, &b, data)?;
        Ok(b)
    }

    /// Queues a copy of `data` (exactly the buffer's size) into `buffer`.
    /// A write refused once its arguments passed (its staging, its wait,
    /// the copy itself) leaves `buffer` claimed by a failure naming the
    /// refusal, so no read returns the bytes from before as if written.
    pub fn write(
        &self,
        stream: StreamId,
        buffer: &Buffer,
        data: &[u8],
    ) -> Result<(), Error<P::Error>> {
        let (mut inner, env) = self.parts();
        inner.write(env, stream, buffer, data)
    }

    /// Queues `kernel` on `stream`. `info` words (shapes, strides, scalars)
    /// are served from the info cache and bound last, read-only.
    ///
    /// On the common path (no failure claims anything, the stream is not
    /// recording a capture, the info words are cached) the driver call is
    /// made with only `stream`'s lane locked, not the device lock.
    ///
    /// A launch whose inputs are claimed is skipped
    /// ([`Launched::Skipped`]) and its outputs inherit the claim. One
    /// refused once its arguments passed (its info words, its wait, the
    /// driver call) claims its outputs with a new failure; the error is
    /// the refusal's. Bad arguments (a stale buffer, a binding count that
    /// differs from the kernel's) are refused claiming nothing.
    pub fn launch(
        &self,
        stream: StreamId,
        kernel: KernelId,
        dims: LaunchDims,
        args: &[Arg<'_>],
        info: &[u64],
    ) -> Result<Launched, Error<P::Error>> {
        let (mut inner, env) = self.parts();
        match inner.launch(env, stream, kernel, dims, args, info)? {
            launch::Submitted::Done(l) => Ok(l),
            launch::Submitted::Tail { mut lane } => {
                // Hand over hand where the family allows it: the driver call
                // holds only the lane. Otherwise the device lock stays held
                // and every guard drops in the reverse order of taking.
                let held = if L::HAND_OVER_HAND {
                    drop(inner);
                    None
                } else {
                    Some(inner)
                };
                let l = &mut *lane;
                let result = match (l.stream.as_mut(), l.kernel.as_ref()) {
                    (Some(s), Some((_, k))) => env.platform.launch(s, k, dims, &l.bindings),
                    // Unreachable: both were set under the device lock.
                    _ => return Err(Error::InvalidArgument("stream not created")),
                };
                // The lane goes before the device lock is taken again: a
                // thread holding the device lock may be waiting for it.
                drop(lane);
                match (result, held) {
                    (Ok(()), _) => Ok(Launched::Queued),
                    (Err(e), Some(mut inner)) => Err(inner.tail_failed(stream, kernel, args, e)),
                    (Err(e), None) => Err(self.launch_tail_failed(stream, kernel, args, e)),
                }
            }
        }
    }

    /// A launch's unlocked platform call failed: booked as failed under the
    /// lock again. Out of line: the launch's frame stays small.
    #[cold]
    #[inline(never)]
    fn launch_tail_failed(
        &self,
        stream: StreamId,
        kernel: KernelId,
        args: &[Arg<'_>],
        e: P::Error,
    ) -> Error<P::Error> {
        let mut inner = self.shared.state.lock();
        inner.tail_failed(stream, kernel, args, e)
    }

    /// Opens a capture window on `stream` with its warm-up.
    pub fn prepare(&self, stream: StreamId) -> Result<(), Error<P::Error>> {
        let (mut inner, env) = self.parts();
        inner.prepare(env, stream)
    }

    /// Seals the capture into a graph. A doomed window, or one the platform
    /// could not seal, yields no graph: what its recorded launches and copies
    /// would have written is claimed (by the failure that doomed it, or by a
    /// new failure naming the refusal), so a read of it fails with a report
    /// instead of returning the bytes from before; rewriting clears it.
    pub fn end_capture(&self, stream: StreamId) -> Result<Graph, Error<P::Error>> {
        let (mut inner, env) = self.parts();
        inner.end_capture(env, stream)
    }

    /// Closes `stream`'s window without a graph.
    pub fn abort_capture(&self, stream: StreamId) -> Result<(), Error<P::Error>> {
        let (mut inner, env) = self.parts();
        inner.abort_capture(env, stream)
    }

    /// The capture phase of `stream`.
    pub fn capture_phase(&self, stream: StreamId) -> Phase {
        self.shared
            .state
            .lock()
            .streams
            .get(stream)
            .map_or(Phase::NoCapture, |s| s.capture.phase())
    }

    /// Queues a replay of `graph`.
    pub fn replay(&self, graph: &Graph) -> Result<Launched, Error<P::Error>> {
        let (mut inner, env) = self.parts();
        inner.replay(env, graph)
    }

    /// Releases, without blocking, every deferred free whose fence passed.
    /// Returns the number of items released.
    pub fn poll(&self) -> Result<usize, Error<P::Error>> {
        let (mut inner, env) = self.parts();
        inner.process_releases(env);
        inner.fence_pinned_streams(env)?;
        let mut n = 0;
        for s in 0..inner.sync.streams() {
            // At most MAX_STREAMS: fits a StreamId.
            n += inner.reclaim(env, StreamId(s as u16))?;
        }
        Ok(n)
    }

    /// Releases every idle page of every stream not in a capture window.
    pub fn cleanup(&self) -> Result<(), Error<P::Error>> {
        let (mut inner, env) = self.parts();
        inner.release_idle_everywhere(env)
    }
}
