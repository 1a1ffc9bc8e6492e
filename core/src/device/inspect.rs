//! Read-only views of a device for diagnostics, reports, tests and
//! invariant checks. None of them changes what the device does.

use super::Device;
use super::handle::{Buffer, Graph};
use super::launch::taint_region;
use super::lock::{LockFamilyMutex, RawLock};
use super::stats::{Census, InfoCensus};
use crate::failure::FailureId;
use crate::memory::MemoryReport;
use crate::platform::{DeviceRange, Platform};
use crate::stream::StreamId;

impl<P: Platform, L: RawLock> Device<P, L> {
    /// The memory report of `stream`'s pools (empty if never used).
    pub fn memory_report(&self, stream: StreamId) -> Option<MemoryReport> {
        self.shared
            .state
            .lock()
            .streams
            .get(stream)
            .map(|s| s.memory.report())
    }

    /// Where `buffer`'s bytes are (`None` for a buffer without memory or of
    /// another device). For diagnostics and tests.
    pub fn range_of(&self, buffer: &Buffer) -> Option<DeviceRange> {
        let inner = self.shared.state.lock();
        if buffer.device() != inner.id {
            return None;
        }
        inner.buffers.get(buffer.id()).ok()?.range()
    }

    /// The failure that claims any byte of `buffer`, if one does (`None` for
    /// a buffer of another device or one already freed).
    pub fn failure_of(&self, buffer: &Buffer) -> Option<FailureId> {
        let inner = self.shared.state.lock();
        if buffer.device() != inner.id {
            return None;
        }
        let size = inner.buffers.get(buffer.id()).ok()?.size;
        inner.taint.failure(taint_region(buffer.id(), size))
    }

    /// Info-cache figures of `stream` (`None` for a stream never used), for
    /// invariant checks: entries cached, entries the open capture window
    /// recorded, and graphs holding pins.
    pub fn info_census(&self, stream: StreamId) -> Option<InfoCensus> {
        let inner = self.shared.state.lock();
        inner.streams.get(stream).map(|s| InfoCensus {
            entries: s.info().len(),
            window: s.info().window_len(),
            graphs: s.info().graph_count(),
        })
    }

    /// Info-cache entries `graph` pins (`None` for a graph that is not live
    /// on this device). For invariant checks.
    pub fn graph_info_pins(&self, graph: &Graph) -> Option<usize> {
        let inner = self.shared.state.lock();
        if graph.device() != inner.id {
            return None;
        }
        let gs = inner.graphs.get(&graph.id())?;
        let st = inner.streams.get(gs.stream)?;
        Some(
            st.info()
                .graph_entries(crate::info_cache::GraphId(graph.id().0))
                .unwrap_or(0),
        )
    }

    /// Counts for invariant checks: live buffers, live failures, live graphs,
    /// items held by drop queues, cross-stream pins.
    pub fn census(&self) -> Census {
        let (mut inner, env) = self.parts();
        inner.process_releases(env);
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
