//! The device's state behind its lock (per-stream state, sealed graphs,
//! access to streams and buffers) and what lives outside it (the platform
//! and each stream's lane). What operations do with it lives in
//! the files named after each concern: `frees.rs` (dropped handles, deferred
//! frees, cross-stream pins), `fences.rs` (drop-queue fences, reclaiming,
//! host syncs), `order.rs` (cross-stream wait placement), `doom.rs` (what a
//! failure does to an open capture window).

use alloc::boxed::Box;
use alloc::string::ToString;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::buffer::{BufferId, BufferTable};
use super::frees::PendingFree;
use super::handle::{Buffer, GraphId, KernelId};
use super::lock::{LockFamilyMutex, RawLock};
use super::release_queue::ReleaseQueue;
use super::{DeviceConfig, DeviceStats};
use crate::arena::{Arena, Key};
use crate::drop_queue::DropQueue;
use crate::error::Error;
use crate::failure::{ErrorGraph, KernelName, Operand};
use crate::info_cache::InfoCache;
use crate::memory::{MemoryLayout, MemoryManager, SliceHandle};
use crate::platform::{Access, Binding, DeviceRange, Platform, PlatformError};
use crate::stream::CacheMode;
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

/// Everything that moves with one stream, except its driver queue (which
/// lives in the stream's [`Lane`], outside the device lock).
///
/// In declaration order (`repr(C)`): what a launch reads (the capture
/// phase, the last-hit memo, the info cache) first and together.
#[repr(C)]
pub(crate) struct StreamState<P: Platform> {
    pub(crate) capture: CaptureState,
    /// The last cache hit in normal mode, while nothing else touched the
    /// cache since: the same words again are served without hashing. The
    /// entry's reference bit is then already set (only an insert or a trim,
    /// which forget the memo, give second chances), so skipping the cache's
    /// own lookup changes nothing in its eviction order.
    info_memo: InfoMemo,
    /// The info cache; changed only through [`StreamState::info_mut`] (which
    /// forgets the memo) or looked up through [`StreamState::info_get`].
    info: InfoCache<(SliceHandle, DeviceRange)>,
    pub(crate) memory: MemoryManager<P::Storage>,
    pub(crate) drops: DropQueue<Deferred, Fence<P::Event>>,
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

/// Info words up to this many are remembered by the last-hit memo.
const MEMO_WORDS: usize = 16;

/// The last info-cache hit of a stream, kept in place (rewritten, never
/// rebuilt: a stream whose words change every launch pays a short copy).
/// In declaration order (`repr(C)`): a few words' memo is one cache line.
#[repr(C)]
pub(crate) struct InfoMemo {
    /// Whether `words` and `range` name a cached entry.
    valid: bool,
    len: u8,
    range: DeviceRange,
    words: [u64; MEMO_WORDS],
}

impl InfoMemo {
    /// No memo.
    pub(crate) const fn new() -> Self {
        Self {
            valid: false,
            len: 0,
            words: [0; MEMO_WORDS],
            range: DeviceRange {
                page: crate::platform::PageId(0),
                offset: 0,
                len: 0,
            },
        }
    }

    /// The remembered range, if `words` are the remembered words.
    #[inline]
    fn hit(&self, words: &[u64]) -> Option<DeviceRange> {
        if !self.valid || usize::from(self.len) != words.len() {
            return None;
        }
        let mut same = true;
        for (a, b) in self.words.iter().zip(words) {
            same &= a == b;
        }
        same.then_some(self.range)
    }

    /// Remembers `words` (at most [`MEMO_WORDS`]) cached at `range`.
    #[inline]
    fn set(&mut self, words: &[u64], range: DeviceRange) {
        let Some(dst) = self.words.get_mut(..words.len()) else {
            self.valid = false;
            return;
        };
        for (d, &w) in dst.iter_mut().zip(words) {
            *d = w;
        }
        // At most MEMO_WORDS (16): fits a u8.
        self.len = words.len() as u8;
        self.range = range;
        self.valid = true;
    }
}

impl<P: Platform> StreamState<P> {
    /// The info cache, to read.
    pub(crate) fn info(&self) -> &InfoCache<(SliceHandle, DeviceRange)> {
        &self.info
    }

    /// The info cache, to change (forgets the last-hit memo).
    pub(crate) fn info_mut(&mut self) -> &mut InfoCache<(SliceHandle, DeviceRange)> {
        self.info_memo.valid = false;
        &mut self.info
    }

    /// The device range of `words` when they are the last hit's words
    /// (then already the most recently used entry: nothing to mark).
    #[inline]
    pub(crate) fn info_memo_hit(&self, words: &[u64]) -> Option<DeviceRange> {
        self.info_memo.hit(words)
    }

    /// The device range caching `words`, marked used (a cache hit), or
    /// `None`.
    #[inline]
    pub(crate) fn info_get(&mut self, words: &[u64]) -> Option<DeviceRange> {
        if let Some(range) = self.info_memo.hit(words) {
            return Some(range);
        }
        self.info_lookup(words)
    }

    /// [`info_get`](Self::info_get) for words the memo does not hold (the
    /// caller looked): the cache's own lookup, remembered on a hit.
    #[inline]
    pub(crate) fn info_lookup(&mut self, words: &[u64]) -> Option<DeviceRange> {
        let range = self.info.get(words).map(|&(_, r)| r);
        match range {
            Some(range) if self.info.mode() == CacheMode::Normal => {
                self.info_memo.set(words, range);
            }
            _ => self.info_memo.valid = false,
        }
        range
    }
}

/// A sealed graph and what it keeps alive.
pub(crate) struct GraphState<P: Platform> {
    pub(crate) graph: Option<crate::platform::GraphOf<P>>,
    pub(crate) stream: StreamId,
    /// Every buffer the capture used, with the graph's net access.
    pub(crate) uses: Vec<WindowUse>,
    pub(crate) operands: Vec<Operand>,
    pub(crate) pinned: Vec<SliceHandle>,
    pub(crate) host: Vec<SliceHandle>,
}

/// A loaded kernel: its name (for failure reports) and the platform's
/// kernel, shared with launches in flight outside the device lock.
pub(crate) struct LoadedKernel<P: Platform> {
    pub(crate) name: KernelName,
    /// (The bindings every launch passes, declared at load, are in its
    /// `KernelId`.)
    pub(crate) kernel: Arc<P::Kernel>,
}

/// One stream's driver queue, behind a lock of its own so a launch can be
/// submitted without the device lock.
///
/// Lock order: a lane is locked only by a thread that holds the device lock,
/// or that took the lane while holding it and released the device lock
/// afterwards (hand over hand). A thread holding a lane without the device
/// lock makes one platform submission and unlocks; it never waits for
/// another lock. So a thread waiting for a lane under the device lock waits
/// for one submission at most, and no cycle can form.
pub(crate) struct Lane<P: Platform> {
    /// The platform stream, once created.
    pub(crate) stream: Option<P::Stream>,
    /// The bindings of the launch being submitted outside the device lock.
    pub(crate) bindings: Vec<Binding>,
    /// The kernel of the last launch submitted outside the device lock
    /// (kept, so launching the same kernel again touches no shared count).
    pub(crate) kernel: Option<(KernelId, Arc<P::Kernel>)>,
}

/// What lives outside the device lock: the platform (so `with_platform`
/// takes no lock and a blocking call needs none) and the streams' lanes.
pub(crate) struct Env<P: Platform, L: RawLock> {
    pub(crate) platform: P,
    pub(crate) lanes: Box<[LaneLock<P, L>]>,
}

/// One stream's lane behind its lock, on cache lines of its own.
pub(crate) type LaneLock<P, L> = Padded<<L as RawLock>::LaneMutex<Lane<P>>>;

/// A value alone on its cache line(s), so threads locking their own
/// stream's lane do not contend for a line another lane shares.
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

/// The guard of a locked lane.
pub(crate) type LaneGuard<'a, P, L> =
    <<L as RawLock>::LaneMutex<Lane<P>> as LockFamilyMutex<Lane<P>>>::Guard<'a>;

impl<P: Platform, L: RawLock> Env<P, L> {
    /// Lanes for `streams` streams, none created.
    pub(crate) fn new(platform: P, streams: usize) -> Self {
        let mut lanes = Vec::with_capacity(streams);
        lanes.resize_with(streams, || {
            Padded(L::LaneMutex::new(Lane {
                stream: None,
                bindings: Vec::new(),
                kernel: None,
            }))
        });
        Self {
            platform,
            lanes: lanes.into_boxed_slice(),
        }
    }

    /// Locks `sid`'s lane.
    #[inline(always)]
    pub(crate) fn lane(&self, sid: StreamId) -> Res<LaneGuard<'_, P, L>, P> {
        self.lanes
            .get(sid.index())
            .map(|l| l.0.lock())
            .ok_or_else(|| Error::InvalidArgument("stream id outside the device's lanes"))
    }

    /// Runs `f` with the platform and `sid`'s created driver stream (its lane
    /// locked for the call).
    pub(crate) fn on_stream<R>(
        &self,
        sid: StreamId,
        f: impl FnOnce(&P, &mut P::Stream) -> R,
    ) -> Res<R, P> {
        let mut lane = self.lane(sid)?;
        let stream = lane
            .stream
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("stream not created"))?;
        Ok(f(&self.platform, stream))
    }

    /// Records an event on `sid`.
    pub(crate) fn record(&self, sid: StreamId) -> Res<P::Event, P> {
        self.on_stream(sid, |p, s| p.record(s))?
            .map_err(|e| Error::platform("record", e))
    }
}

/// The device's state behind its lock.
///
/// Laid out in declaration order (`repr(C)`), what the warm paths (launch,
/// alloc, free) read first and together: between two device calls a
/// driver runs its own code and data and evicts the device's lines, so
/// each line those paths touch is a cache miss. The state follows the
/// lock word in memory.
#[repr(C)]
pub(crate) struct Inner<P: Platform> {
    pub(crate) id: u64,
    /// Streams recording a capture now. While any is, no event is queried or
    /// synchronized (drivers' global capture mode forbids it).
    pub(crate) recording: u32,
    pub(crate) sync: SyncTable,
    pub(crate) streams: StreamPool<StreamState<P>>,
    pub(crate) kernels: Vec<LoadedKernel<P>>,
    // Scratch space reused by every operation (no allocation when warm).
    pub(crate) scratch_bindings: Vec<Binding>,
    pub(crate) buffers: BufferTable<SliceHandle>,
    /// (Its emptiness, what a launch asks, is two words 32 bytes apart:
    /// placed here they share a line on a 64-bit target.)
    pub(crate) taint: ErrorGraph<alloc::string::String>,
    pub(crate) scratch_marks: Vec<WriteMark>,
    pub(crate) stats: DeviceStats,
    pub(crate) scratch_ops: Vec<Operand>,
    pub(crate) releases: &'static ReleaseQueue,
    // The rest: rarer paths.
    pub(crate) plan: WaitPlan,
    /// Frees waiting for other streams' uses, pinned (by key) on each
    /// consumer until its use completes.
    pub(crate) pins: CrossPins<Key>,
    pub(crate) pending: Arena<PendingFree>,
    pub(crate) graphs: crate::hash::FxHashMap<GraphId, GraphState<P>>,
    pub(crate) next_graph: u64,
    /// The first error of a deferred release (a dropped handle's free, a
    /// dropped graph's destroy, a due flush) not yet taken by the user.
    pub(crate) release_error: Option<Error<P::Error>>,
    pub(crate) scratch_deferred: Vec<Deferred>,
    pub(crate) scratch_ids: Vec<BufferId>,
    pub(crate) scratch_graphs: Vec<GraphId>,
    pub(crate) scratch_pins: Vec<Key>,
    pub(crate) scratch_bytes: Vec<u8>,
    pub(crate) host: MemoryManager<P::HostStorage>,
    pub(crate) config: DeviceConfig,
    pub(crate) layout: MemoryLayout,
    pub(crate) flush: crate::drop_queue::FlushPolicy,
}

/// Shorthand for results of device operations.
pub(crate) type Res<T, P> = Result<T, Error<<P as Platform>::Error>>;

impl<P: Platform> Inner<P> {
    /// The stream's state, created on first use (its driver stream goes to
    /// its lane).
    pub(crate) fn stream<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
    ) -> Res<&mut StreamState<P>, P> {
        if self.streams.get(sid).is_none() {
            self.create_stream(env, sid)?;
        }
        self.streams
            .get_mut(sid)
            .ok_or_else(|| Error::InvalidArgument("stream not created"))
    }

    #[cold]
    #[inline(never)]
    fn create_stream<L: RawLock>(&mut self, env: &Env<P, L>, sid: StreamId) -> Res<(), P> {
        self.streams.check(sid)?;
        let layout = &self.layout;
        let config = &self.config;
        let flush = self.flush;
        let recording = self.recording > 0;
        let platform = &env.platform;
        let mut lane = env.lane(sid)?;
        self.streams
            .get_or_create(sid, || -> Res<StreamState<P>, P> {
                let storage = platform
                    .device_storage()
                    .map_err(|e| Error::platform("device_storage", e))?;
                if lane.stream.is_none() {
                    lane.stream = Some(
                        platform
                            .create_stream_for(sid)
                            .map_err(|e| Error::platform("create_stream", e))?,
                    );
                }
                let mut memory = MemoryManager::new(storage, layout.clone());
                // Holding flushes cannot fail (nothing is flushed).
                let _ = memory.hold_flushes(recording);
                Ok(StreamState {
                    memory,
                    drops: DropQueue::with_capacity(flush, flush.queue_room(), 16),
                    capture: CaptureState::new(),
                    info: InfoCache::new(config.info_cache),
                    info_memo: InfoMemo::new(),
                    progress: None,
                    before_capture: None,
                    window: Vec::new(),
                    window_host: Vec::new(),
                })
            })
            .map_err(|e| match e {
                crate::stream::pool::GetOrCreateError::OutOfRange(r) => Error::Stream(r),
                crate::stream::pool::GetOrCreateError::Create(e) => e,
            })?;
        drop(lane);
        // Tables indexed by stream grow with the streams in use.
        let used = sid.index() + 1;
        self.sync.grow(used);
        self.plan.grow(used);
        self.pins.grow(used);
        self.buffers.grow(used);
        Ok(())
    }

    /// Runs `f` with `sid`'s state and a list collecting slices to release
    /// (e.g. info-cache evictions), then stages those on `sid`'s drop queue.
    pub(crate) fn with_stream<L: RawLock, R>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        f: impl FnOnce(&mut StreamState<P>, &mut Vec<Deferred>) -> R,
    ) -> Res<R, P> {
        self.stream(env, sid)?;
        let mut deferred = core::mem::take(&mut self.scratch_deferred);
        let r = {
            let st = self
                .streams
                .get_mut(sid)
                .ok_or_else(|| Error::InvalidArgument("stream not created"))?;
            f(st, &mut deferred)
        };
        for d in deferred.drain(..) {
            self.defer(env, sid, d, 0);
        }
        self.scratch_deferred = deferred;
        Ok(r)
    }

    /// The live buffer `b` of this device.
    pub(crate) fn check_buffer(&self, b: &Buffer) -> Res<BufferId, P> {
        if b.device() != self.id {
            return Err(Error::StaleBuffer(b.id()));
        }
        self.buffers.get(b.id())?;
        Ok(b.id())
    }

    /// Notes the error of a deferred release: counted, and kept (the first
    /// one) for [`Device::take_release_error`](super::Device::take_release_error),
    /// never returned by the unrelated operation that happened to run it.
    pub(crate) fn release_failed(&mut self, e: Error<P::Error>) {
        self.stats.release_errors += 1;
        if self.release_error.is_none() {
            self.release_error = Some(e);
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
