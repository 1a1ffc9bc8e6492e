//! The replay driver: feeds a [`Trace`] through a [`ReplayTarget`] (one
//! memory manager per stream) and measures what it held.

use std::fmt;
use std::string::String;
use std::time::Instant;
use std::vec::Vec;

use streamcore::memory::{MemoryLayout, MemoryManager, MemoryReport, SliceHandle};
use streamcore::platform::Storage;

use super::counting::{Accounting, CountingStorage, StorageStats};
use super::driver_model::DriverModel;
use super::trace::{MAX_TRACE_STREAMS, Trace, TraceEvent};

/// Something that serves a trace's allocations: one allocator per stream.
pub trait ReplayTarget {
    /// What an allocation is known by (moved into `free`).
    type Handle;
    /// Why an allocation failed.
    type Error: fmt::Display;

    /// Reserves `size` bytes on `stream`.
    fn alloc(&mut self, stream: u32, size: u64) -> Result<Self::Handle, Self::Error>;

    /// Frees an allocation made on `stream`.
    fn free(&mut self, stream: u32, handle: Self::Handle) -> Result<(), Self::Error>;

    /// The accounting every storage of the target reports into.
    fn accounting(&self) -> &Accounting;
}

/// One point of the series sampler.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sample {
    /// Events done.
    pub event: u64,
    /// Bytes the storages held.
    pub reserved: u64,
    /// Bytes the trace had live.
    pub live: u64,
}

/// Hooks of a replay; all optional.
#[derive(Default)]
pub struct ReplayOptions<'a> {
    /// Called with (events done, total) every `progress_every` events and at
    /// the end.
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
    /// How often `progress` is called (0: only at the end).
    pub progress_every: u64,
    /// Called every `sample_every` events (and after the last) with the
    /// bytes reserved and live.
    pub sampler: Option<&'a mut dyn FnMut(Sample)>,
    /// Sampling stride (0 is taken as 1).
    pub sample_every: u64,
}

/// What a replay measured.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayReport {
    /// Events replayed.
    pub events: u64,
    /// Allocations among them.
    pub allocs: u64,
    /// The most bytes the storages held at once (released pages count until
    /// flushed).
    pub peak_reserved: u64,
    /// The most bytes the trace had live at once (its own sizes).
    pub peak_live: u64,
    /// The storages' counters at the end.
    pub storage: StorageStats,
    /// Wall time of the event loop, in nanoseconds.
    pub elapsed_ns: u64,
}

impl ReplayReport {
    /// Peak reserved / peak live; `None` when nothing was ever live (a
    /// trace without allocations: the ratio has no value).
    pub fn live_ratio(&self) -> Option<f64> {
        (self.peak_live > 0).then(|| self.peak_reserved as f64 / self.peak_live as f64)
    }

    /// Peak reserved / peak live; 0 when nothing was ever live (reports
    /// should print [`live_ratio`](Self::live_ratio)'s `None` as no value).
    pub fn ratio(&self) -> f64 {
        self.live_ratio().unwrap_or(0.0)
    }

    /// The storages' estimated driver time, in milliseconds.
    pub fn driver_ms(&self) -> f64 {
        self.storage.driver_ns as f64 / 1e6
    }

    /// Nanoseconds per event (alloc or free).
    pub fn ns_per_op(&self) -> f64 {
        if self.events == 0 {
            0.0
        } else {
            self.elapsed_ns as f64 / self.events as f64
        }
    }
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use streamcore::memory::HumanBytes;
        writeln!(f, "events            {}", self.events)?;
        writeln!(f, "peak reserved     {}", HumanBytes(self.peak_reserved))?;
        writeln!(f, "peak live         {}", HumanBytes(self.peak_live))?;
        writeln!(f, "reserved / live   {:.3}", self.ratio())?;
        writeln!(f, "storage allocs    {}", self.storage.allocs)?;
        writeln!(f, "storage deallocs  {}", self.storage.deallocs)?;
        writeln!(
            f,
            "commits/decommits {} / {}",
            self.storage.commits, self.storage.decommits
        )?;
        writeln!(f, "device syncs      {}", self.storage.syncs)?;
        writeln!(
            f,
            "driver time (est) {:.2} ms beside {:.2} ms of bookkeeping",
            self.driver_ms(),
            self.elapsed_ns as f64 / 1e6
        )?;
        write!(f, "time per op       {:.1} ns", self.ns_per_op())
    }
}

/// A replay that could not finish.
#[derive(Debug)]
pub struct ReplayError {
    /// The 0-based event index that failed.
    pub event: u64,
    /// What the target said.
    pub why: String,
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "event {}: {}", self.event, self.why)
    }
}

impl std::error::Error for ReplayError {}

/// Refuses, before anything is replayed, a trace a loader would not have
/// produced (its fields are public): a slot at or past `trace.slots`, a
/// stream at or past [`MAX_TRACE_STREAMS`], an allocation into a live slot,
/// a free of a slot that is not live.
fn check_events(trace: &Trace) -> Result<(), ReplayError> {
    let mut live = std::vec![false; trace.slots as usize];
    for (i, e) in trace.events.iter().enumerate() {
        let refuse = |why: std::string::String| ReplayError {
            event: i as u64,
            why,
        };
        let (slot, alloc) = match *e {
            TraceEvent::Alloc { slot, stream, .. } => {
                if stream >= MAX_TRACE_STREAMS {
                    return Err(refuse(std::format!(
                        "stream {stream} is past the last one a trace may use ({})",
                        MAX_TRACE_STREAMS - 1
                    )));
                }
                (slot, true)
            }
            TraceEvent::Free { slot } => (slot, false),
        };
        let Some(state) = live.get_mut(slot as usize) else {
            return Err(refuse(std::format!(
                "slot {slot} is past the trace's {} slots",
                trace.slots
            )));
        };
        if *state == alloc {
            let why = if alloc {
                std::format!("allocation into slot {slot}, which is still live")
            } else {
                std::format!("free of slot {slot}, which is not live")
            };
            return Err(refuse(why));
        }
        *state = alloc;
    }
    Ok(())
}

/// Replays `trace` through `target`. A trace whose events a loader would
/// not have produced (see [`Trace`]'s fields) is refused with a
/// [`ReplayError`] before anything is replayed.
pub fn replay<T: ReplayTarget>(
    trace: &Trace,
    target: &mut T,
    mut options: ReplayOptions<'_>,
) -> Result<ReplayReport, ReplayError> {
    check_events(trace)?;
    let total = trace.events.len() as u64;
    let mut handles: Vec<Option<(u32, u64, T::Handle)>> = Vec::new();
    handles.resize_with(trace.slots as usize, || None);
    let mut live = 0u64;
    let mut peak_live = 0u64;
    let mut allocs = 0u64;
    let progress_every = options.progress_every;
    let sample_every = options.sample_every.max(1);
    let hooks = options.progress.is_some() || options.sampler.is_some();
    let start = Instant::now();
    for (i, e) in trace.events.iter().enumerate() {
        match *e {
            TraceEvent::Alloc { slot, size, stream } => {
                let h = target.alloc(stream, size).map_err(|e| ReplayError {
                    event: i as u64,
                    why: std::format!("alloc of {size} B on stream {stream}: {e}"),
                })?;
                handles[slot as usize] = Some((stream, size, h));
                live += size;
                peak_live = peak_live.max(live);
                allocs += 1;
            }
            TraceEvent::Free { slot } => {
                // Checked above: only live slots are freed.
                if let Some((stream, size, h)) = handles[slot as usize].take() {
                    target.free(stream, h).map_err(|e| ReplayError {
                        event: i as u64,
                        why: std::format!("free on stream {stream}: {e}"),
                    })?;
                    live -= size;
                }
            }
        }
        if hooks {
            let done = i as u64 + 1;
            if let Some(p) = options.progress.as_mut() {
                if progress_every > 0 && done % progress_every == 0 && done != total {
                    p(done, total);
                }
            }
            if let Some(s) = options.sampler.as_mut() {
                if done % sample_every == 0 || done == total {
                    s(Sample {
                        event: done,
                        reserved: target.accounting().held(),
                        live,
                    });
                }
            }
        }
    }
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    if let Some(p) = options.progress.as_mut() {
        p(total, total);
    }
    let storage = target.accounting().stats();
    Ok(ReplayReport {
        events: total,
        allocs,
        peak_reserved: storage.peak_held,
        peak_live,
        storage,
        elapsed_ns,
    })
}

/// streamcore's managers, one per stream, over counting storages. Streams
/// are dense indices: a call on stream `s` makes the managers of every
/// stream up to `s` (a trace's streams are below [`MAX_TRACE_STREAMS`],
/// which [`replay`] checks before it starts).
pub struct StreamcoreTarget {
    accounting: Accounting,
    layout: MemoryLayout,
    alignment: u64,
    model: DriverModel,
    managers: Vec<MemoryManager<CountingStorage>>,
    /// Frees in stream order: each allocation is touched by one command on
    /// its stream (the stream's cursor, by stream), and freed naming it.
    ordered: Option<Vec<u64>>,
}

impl StreamcoreTarget {
    /// Managers with `layout`, storages aligned to `alignment` charging the
    /// H200's default route ([`DriverModel::Vmm`]).
    pub fn new(layout: MemoryLayout, alignment: u64) -> Self {
        Self::with_accounting(layout, alignment, Accounting::new())
    }

    /// The same, reporting into an existing accounting (to set a capacity).
    pub fn with_accounting(layout: MemoryLayout, alignment: u64, accounting: Accounting) -> Self {
        Self {
            accounting,
            layout,
            alignment,
            model: DriverModel::default(),
            managers: Vec::new(),
            ordered: None,
        }
    }

    /// The same target freeing in stream order, as `streamcore replay
    /// --platform hip --touch` does: every allocation is touched by one
    /// command queued on its stream, frees go back at once naming that
    /// command's cursor (`MemoryManager::free_ordered`), and where a manager
    /// must wait for its stream before giving memory back it waits (the
    /// modelled device keeps up: a wait completes everything queued).
    pub fn ordered(mut self) -> Self {
        self.ordered = Some(Vec::new());
        self
    }

    /// Times the managers waited for their stream (frees in stream order).
    pub fn waits(&self) -> u64 {
        self.managers.iter().map(MemoryManager::waits).sum()
    }

    /// The same target over storages charging `model`.
    pub fn with_model(mut self, model: DriverModel) -> Self {
        self.model = model;
        self
    }

    /// The driver model the storages charge.
    pub fn model(&self) -> DriverModel {
        self.model
    }

    /// The managers, by stream.
    pub fn managers(&self) -> &[MemoryManager<CountingStorage>] {
        &self.managers
    }

    /// The report of each stream's manager.
    pub fn reports(&self) -> Vec<MemoryReport> {
        self.managers.iter().map(MemoryManager::report).collect()
    }

    fn manager(&mut self, stream: u32) -> &mut MemoryManager<CountingStorage> {
        while self.managers.len() <= stream as usize {
            let storage =
                CountingStorage::with_model(self.accounting.clone(), self.alignment, self.model);
            self.managers
                .push(MemoryManager::new(storage, self.layout.clone()));
        }
        &mut self.managers[stream as usize]
    }
}

impl ReplayTarget for StreamcoreTarget {
    /// The slice and the cursor of the command that touched it.
    type Handle = (SliceHandle, u64);
    type Error = streamcore::memory::MemoryError<<CountingStorage as Storage>::Error>;

    #[inline]
    fn alloc(&mut self, stream: u32, size: u64) -> Result<(SliceHandle, u64), Self::Error> {
        let Some(cursors) = self.ordered.as_mut() else {
            return self.manager(stream).reserve(size).map(|(h, _)| (h, 0));
        };
        if cursors.len() <= stream as usize {
            cursors.resize(stream as usize + 1, 0);
        }
        let submitted = cursors[stream as usize];
        cursors[stream as usize] += 1;
        let mut caught_up = |_: u64| Some(submitted);
        let (h, _) = self.manager(stream).reserve_ordered(size, &mut caught_up)?;
        Ok((h, submitted + 1))
    }

    #[inline]
    fn free(
        &mut self,
        stream: u32,
        (handle, cursor): (SliceHandle, u64),
    ) -> Result<(), Self::Error> {
        if self.ordered.is_some() {
            self.manager(stream).free_ordered(handle, cursor)
        } else {
            self.manager(stream).free(handle)
        }
    }

    fn accounting(&self) -> &Accounting {
        &self.accounting
    }
}
