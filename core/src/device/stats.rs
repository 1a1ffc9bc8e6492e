//! Counts of what a device did and holds: for tests, reports, benches and
//! invariant checks.

/// Counts of what the device did: for tests, reports and benches.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    // The counters a launch bumps come first, on one cache line.
    /// Kernels queued or recorded.
    pub launches: u64,
    /// Info-cache hits.
    pub info_hits: u64,
    /// Cross-stream event waits inserted.
    pub waits: u64,
    /// Events recorded (fences, waits, syncs).
    pub events_recorded: u64,
    /// Launches and replays skipped over claimed inputs.
    pub skipped: u64,
    /// Failures recorded (failed launches, copies, reservations).
    pub failures: u64,
    /// Host synchronizations.
    pub host_syncs: u64,
    /// Uploads queued.
    pub uploads: u64,
    /// Downloads done.
    pub downloads: u64,
    /// Info-cache misses (uploads of info words).
    pub info_misses: u64,
    /// Graphs sealed.
    pub graphs_sealed: u64,
    /// Graph replays queued.
    pub graph_replays: u64,
    /// Graphs released.
    pub graphs_released: u64,
    /// Frees that waited for another stream's use (cross-stream pins).
    pub cross_stream_pins: u64,
    /// Reservations retried after reclaiming deferred frees.
    pub oom_retries: u64,
    /// Deferred releases that failed (a dropped buffer's free, a dropped
    /// graph's destroy, a flush of deferred frees that came due); the first
    /// is kept for `Device::take_release_error`.
    pub release_errors: u64,
    /// Buffers whose slice went back to the pool in stream order: dropped
    /// while only their owner stream's queued work used them (no fence).
    pub ordered_frees: u64,
}

/// What a device holds, for leak and invariant checks.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Live buffers.
    pub buffers: usize,
    /// Live failures in the taint graph.
    pub failures: usize,
    /// Live graphs.
    pub graphs: usize,
    /// Items in drop queues (staged or pending).
    pub deferred: usize,
    /// Cross-stream pins.
    pub cross_pins: usize,
    /// Bytes in use in every stream's pools (info buffers included).
    pub live_bytes: u64,
}

/// The info cache of one stream, for invariant checks.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct InfoCensus {
    /// Entries cached (pinned, in the open window, or in the LRU list).
    pub entries: usize,
    /// Entries the open capture window recorded.
    pub window: usize,
    /// Live graphs holding pins in this cache.
    pub graphs: usize,
}
