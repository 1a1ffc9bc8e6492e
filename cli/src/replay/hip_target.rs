//! What a trace is replayed through on the real device: streamcore's
//! memory managers over the platform's device storages, or the driver's own
//! stream-ordered pool (`hipMallocAsync`). One stream per trace stream.

use std::fmt;

use streamcore::drop_queue::{DropQueue, DropQueueError, FlushPolicy};
use streamcore::memory::{MemoryError, MemoryLayout, MemoryManager, SliceHandle};
use streamcore::platform::{DeviceRange, Platform};
use streamcore_hip::{HipDeviceStorage, HipError, HipEvent, HipPlatform, HipStream, PoolBlock};

use crate::platform::FreesArg;

/// Bytes written into each new allocation by `--touch`.
pub const TOUCH_BYTES: u64 = 64 * 1024;

/// Why an event of the replay failed.
#[derive(Debug)]
pub enum TargetError {
    /// The memory manager refused.
    Memory(MemoryError<HipError>),
    /// A platform call failed.
    Platform(HipError),
    /// A drop queue refused (it never does outside a capture).
    Queue(String),
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::Memory(e) => write!(f, "{e}"),
            TargetError::Platform(e) => write!(f, "{e}"),
            TargetError::Queue(why) => write!(f, "drop queue: {why}"),
        }
    }
}

impl From<HipError> for TargetError {
    fn from(e: HipError) -> Self {
        TargetError::Platform(e)
    }
}

impl From<MemoryError<HipError>> for TargetError {
    fn from(e: MemoryError<HipError>) -> Self {
        TargetError::Memory(e)
    }
}

impl<E: Into<TargetError>> From<DropQueueError<E>> for TargetError {
    fn from(e: DropQueueError<E>) -> Self {
        match e {
            DropQueueError::Fence(e) => e.into(),
            _ => TargetError::Queue("refused while recording a capture".to_owned()),
        }
    }
}

/// A replay target on the device: alloc and free by trace stream.
pub trait DeviceTarget {
    /// What an allocation is known by.
    type Handle;
    /// Allocates `size` bytes on `stream` (and touches them if asked).
    fn alloc(&mut self, stream: u32, size: u64) -> Result<Self::Handle, TargetError>;
    /// Frees an allocation made on `stream`.
    fn free(&mut self, stream: u32, handle: Self::Handle) -> Result<(), TargetError>;
    /// Waits until every stream's queued work has completed.
    fn finish(&mut self) -> Result<(), TargetError>;
    /// Driver calls that allocate or free memory, so far.
    fn driver_calls(&self) -> u64;
    /// The most bytes the target's own books held at once (`None` when it
    /// keeps none: the driver's pool).
    fn books_peak(&self) -> Option<u64>;
    /// Events recorded to fence frees, so far.
    fn fences(&self) -> u64 {
        0
    }
}

/// Runs one step of a lane's drop queue, freeing each slice it releases
/// into `manager`: the queue's own error first, else the first refused free
/// (the later slices are still freed).
fn free_released(
    manager: &mut MemoryManager<HipDeviceStorage>,
    step: impl FnOnce(&mut dyn FnMut(SliceHandle)) -> Result<usize, DropQueueError<HipError>>,
) -> Result<(), TargetError> {
    let mut failed = None;
    step(&mut |h| {
        if let Err(e) = manager.free(h) {
            failed.get_or_insert(e);
        }
    })?;
    failed.map_or(Ok(()), |e| Err(e.into()))
}

/// One trace stream of the streamcore target.
struct Lane {
    stream: HipStream,
    manager: MemoryManager<HipDeviceStorage>,
    /// Fenced frees: waiting for a fence recorded after the slice's last
    /// use (only with `touch`: otherwise no work is ever queued).
    queue: DropQueue<SliceHandle, HipEvent>,
    /// Fences recorded for the queue, or stream synchronizations the
    /// manager asked for (frees in stream order).
    events: u64,
    /// Commands queued on the stream so far (its cursor).
    cursor: u64,
}

/// streamcore's pools, one manager per stream over the platform's device
/// storage (virtual memory where supported).
pub struct StreamcoreTarget<'p> {
    platform: &'p HipPlatform,
    layout: MemoryLayout,
    touch: bool,
    frees: FreesArg,
    policy: FlushPolicy,
    wait: bool,
    lanes: Vec<Lane>,
    held: u64,
    held_peak: u64,
}

impl<'p> StreamcoreTarget<'p> {
    /// Managers with `layout`. With `touch`, frees reach the managers as
    /// `frees` says: in stream order, or through a drop queue per stream
    /// flushed by `policy` (then, with `wait`, an allocation that the
    /// queue's sealed frees could serve waits for the oldest of them rather
    /// than let the pool grow: the device is only a few small writes
    /// behind).
    pub fn new(
        platform: &'p HipPlatform,
        layout: MemoryLayout,
        touch: bool,
        frees: FreesArg,
        policy: FlushPolicy,
        wait: bool,
    ) -> Self {
        Self {
            platform,
            layout,
            touch,
            frees,
            policy,
            wait,
            lanes: Vec::new(),
            held: 0,
            held_peak: 0,
        }
    }

    fn lane(&mut self, stream: u32) -> Result<&mut Lane, TargetError> {
        while self.lanes.len() <= stream as usize {
            let storage = self.platform.device_storage()?;
            self.lanes.push(Lane {
                stream: self.platform.create_stream()?,
                manager: MemoryManager::new(storage, self.layout.clone()),
                queue: DropQueue::with_capacity(self.policy, 256, 64),
                events: 0,
                cursor: 0,
            });
        }
        Ok(&mut self.lanes[stream as usize])
    }

    /// Fenced frees: hands every slice whose fence has passed back to its
    /// manager.
    fn reclaim(platform: &HipPlatform, lane: &mut Lane) -> Result<(), TargetError> {
        free_released(&mut lane.manager, |release| {
            lane.queue.reclaim(|e| platform.query(e), release)
        })
    }

    /// Fenced frees: blocks until the oldest sealed batch is reclaimed.
    fn wait_oldest(platform: &HipPlatform, lane: &mut Lane) -> Result<(), TargetError> {
        free_released(&mut lane.manager, |release| {
            lane.queue.wait_oldest(|e| platform.synchronize(e), release)
        })
    }

    /// Blocks until every queued command of the lane completed and every
    /// queued free is reclaimed.
    fn drain(platform: &HipPlatform, lane: &mut Lane) -> Result<(), TargetError> {
        let stream = &mut lane.stream;
        let events = &mut lane.events;
        lane.queue.flush_with(|| {
            *events += 1;
            platform.record(stream)
        })?;
        free_released(&mut lane.manager, |release| {
            lane.queue.drain(|e| platform.synchronize(e), release)
        })?;
        lane.stream.synchronize()?;
        lane.manager.complete(lane.cursor);
        Ok(())
    }

    /// Reserves for work queued on the lane's stream, freed in stream
    /// order: when the manager must wait for the stream before it gives
    /// memory back, the stream is synchronized (it is a few small writes
    /// behind).
    fn reserve_ordered(
        lane: &mut Lane,
        size: u64,
    ) -> Result<(SliceHandle, DeviceRange), TargetError> {
        let Lane {
            stream,
            manager,
            events,
            cursor,
            ..
        } = lane;
        let submitted = *cursor;
        let mut failed = None;
        let mut wait = |_: u64| -> Option<u64> {
            *events += 1;
            match stream.synchronize() {
                Ok(()) => Some(submitted),
                Err(e) => {
                    failed.get_or_insert(e);
                    None
                }
            }
        };
        let reserved = manager.reserve_ordered(size, &mut wait);
        if let Some(e) = failed {
            return Err(e.into());
        }
        Ok(reserved?)
    }

    fn note_held(&mut self) {
        self.held = self.lanes.iter().map(|l| l.manager.held_bytes()).sum();
        self.held_peak = self.held_peak.max(self.held);
    }
}

impl DeviceTarget for StreamcoreTarget<'_> {
    /// The slice, its size, and the stream cursor of its touch.
    type Handle = (SliceHandle, u64, u64);

    fn alloc(&mut self, stream: u32, size: u64) -> Result<Self::Handle, TargetError> {
        let platform = self.platform;
        let touch = self.touch;
        let frees = self.frees;
        let wait = self.wait;
        let lane = self.lane(stream)?;
        let reserved = match (touch, frees) {
            (false, _) => lane.manager.reserve(size)?,
            (true, FreesArg::Ordered) => Self::reserve_ordered(lane, size)?,
            (true, FreesArg::Fenced) => {
                Self::reclaim(platform, lane)?;
                if wait && lane.queue.pending_bytes() >= size {
                    Self::wait_oldest(platform, lane)?;
                }
                match lane.manager.reserve(size) {
                    Ok(r) => r,
                    Err(MemoryError::OutOfMemory { .. }) if !lane.queue.is_empty() => {
                        // As the device does: wait for the deferred frees,
                        // retry once.
                        Self::drain(platform, lane)?;
                        lane.manager.reserve(size)?
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        };
        let (handle, range) = reserved;
        if touch {
            let len = range.len.min(TOUCH_BYTES);
            platform.fill(&mut lane.stream, DeviceRange { len, ..range }, 0)?;
            lane.cursor += 1;
        }
        let cursor = lane.cursor;
        self.note_held();
        Ok((handle, size, cursor))
    }

    fn free(
        &mut self,
        stream: u32,
        (handle, size, cursor): Self::Handle,
    ) -> Result<(), TargetError> {
        let platform = self.platform;
        let touch = self.touch;
        let frees = self.frees;
        let lane = self.lane(stream)?;
        match (touch, frees) {
            // Nothing was ever queued on the device: nothing to order.
            (false, _) => lane.manager.free(handle)?,
            // Only this stream's queued work touches it (the touch), and
            // later work of the stream runs after it.
            (true, FreesArg::Ordered) => lane.manager.free_ordered(handle, cursor)?,
            (true, FreesArg::Fenced) => {
                // It goes back to the pool only once a fence recorded after
                // it passed.
                if lane.queue.push(handle, size) != streamcore::drop_queue::Pushed::Staged {
                    let stream = &mut lane.stream;
                    let events = &mut lane.events;
                    lane.queue.flush_with(|| {
                        *events += 1;
                        platform.record(stream)
                    })?;
                }
            }
        }
        self.note_held();
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TargetError> {
        let platform = self.platform;
        for lane in &mut self.lanes {
            Self::drain(platform, lane)?;
        }
        Ok(())
    }

    fn driver_calls(&self) -> u64 {
        self.lanes
            .iter()
            .map(|l| l.manager.storage().driver_calls())
            .sum()
    }

    fn books_peak(&self) -> Option<u64> {
        Some(self.held_peak)
    }

    fn fences(&self) -> u64 {
        self.lanes.iter().map(|l| l.events).sum()
    }
}

/// The driver's own pool: `hipMallocAsync` / `hipFreeAsync` per stream.
pub struct PoolTarget<'p> {
    platform: &'p HipPlatform,
    touch: bool,
    streams: Vec<HipStream>,
    calls: u64,
}

impl<'p> PoolTarget<'p> {
    /// The pool target; with `touch`, each new block gets a 64 KiB memset.
    pub fn new(platform: &'p HipPlatform, touch: bool) -> Self {
        Self {
            platform,
            touch,
            streams: Vec::new(),
            calls: 0,
        }
    }

    fn stream(&mut self, stream: u32) -> Result<&mut HipStream, TargetError> {
        while self.streams.len() <= stream as usize {
            self.streams.push(self.platform.create_stream()?);
        }
        Ok(&mut self.streams[stream as usize])
    }
}

impl DeviceTarget for PoolTarget<'_> {
    type Handle = PoolBlock;

    fn alloc(&mut self, stream: u32, size: u64) -> Result<PoolBlock, TargetError> {
        let platform = self.platform;
        let touch = self.touch;
        let s = self.stream(stream)?;
        let block = platform.pool_alloc(s, size)?;
        if touch {
            platform.pool_fill(s, &block, TOUCH_BYTES, 0)?;
        }
        self.calls += 1;
        Ok(block)
    }

    fn free(&mut self, stream: u32, block: PoolBlock) -> Result<(), TargetError> {
        let platform = self.platform;
        let s = self.stream(stream)?;
        platform.pool_free(s, block).map_err(|(_, e)| e)?;
        self.calls += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TargetError> {
        for s in &mut self.streams {
            let e = self.platform.record(s)?;
            self.platform.synchronize(&e)?;
        }
        Ok(())
    }

    fn driver_calls(&self) -> u64 {
        self.calls
    }

    fn books_peak(&self) -> Option<u64> {
        None
    }
}
