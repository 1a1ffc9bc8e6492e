//! Graph capture through the device: warm-up, capture, seal, replay,
//! release. The stream's capture state, memory manager, info cache and drop
//! queue move together.

use alloc::vec::Vec;

use super::handle::{Graph, GraphId};
use super::state::{Deferred, GraphState, Inner, Res, WindowUse};
use crate::error::Error;
use crate::failure::{AllocId, Decision, KernelName, Operand, Operation, Region};
use crate::info_cache::{CacheMode, GraphId as CacheGraphId};
use crate::platform::{Access, Capabilities, GraphCapture, GraphOf, Platform};
use crate::stream::{CaptureError, StreamId};

/// The platform's graph capture, or [`Error::NotSupported`] when it declares
/// none ([`Capabilities::GRAPH_CAPTURE`] and [`Platform::capture`] must agree).
fn capture_of<'p, P: Platform>(platform: &'p P, op: &'static str) -> Res<&'p P::Capture, P> {
    let needs = Capabilities::GRAPH_CAPTURE;
    match platform.capture() {
        Some(c) if platform.capabilities().contains(needs) => Ok(c),
        _ => Err(Error::NotSupported { op, needs }),
    }
}

impl<P: Platform> Inner<P> {
    /// `NoCapture → Prepare`: the warm-up. Pools retain what they hand out
    /// and the info cache records what the window uses.
    pub(crate) fn prepare(&mut self, sid: StreamId) -> Res<(), P> {
        capture_of(&self.platform, "prepare")?;
        self.process_releases()?;
        self.with_stream(sid, |_, st, evicted| -> Res<(), P> {
            st.capture.prepare()?;
            if let Err(e) = st.memory.prepare() {
                let _ = st.capture.abort();
                return Err(e.into());
            }
            st.info.set_mode(CacheMode::Capture, |(h, _)| {
                evicted.push(Deferred::Device(h))
            });
            Ok(())
        })?
    }

    /// `Prepare → Capture`: the retained slices go back to the pools, due
    /// frees are flushed, and the platform starts recording.
    pub(crate) fn begin_capture(&mut self, sid: StreamId) -> Res<(), P> {
        capture_of(&self.platform, "begin_capture")?;
        self.process_releases()?;
        // Out-of-order calls are rejected before anything changes.
        if self.stream(sid)?.capture.phase() != crate::stream::Phase::Prepare {
            let mut probe = self.stream(sid)?.capture;
            probe.begin()?;
        }
        // Settle the stream before recording: once recording, no fence can be
        // recorded or waited on, so staging slices still behind a fence could
        // not be reused inside the window (an upload there would then need
        // fresh pinned memory, which invalidates a driver capture).
        if self.recording == 0 {
            self.sync_stream(sid)?;
        } else {
            self.flush(sid)?;
        }
        let st = self.stream(sid)?;
        st.capture.begin()?;
        st.memory.begin_capture()?;
        let cursor = self.sync.cursor(sid)?;
        self.with_stream(sid, |platform, st, evicted| -> Res<(), P> {
            // What other streams wait on for this stream's earlier writes
            // while it records (an event recorded inside the capture would
            // be a graph node they cannot wait on).
            st.before_capture = match platform.record(&mut st.stream) {
                Ok(event) => Some(super::state::Fence { cursor, event }),
                Err(_) => None,
            };
            let _ = st.drops.set_recording(true);
            let began = capture_of(platform, "begin_capture").and_then(|c| {
                c.begin_capture(&mut st.stream)
                    .map_err(|e| Error::platform("begin_capture", e))
            });
            if let Err(e) = began {
                let _ = st.drops.set_recording(false);
                let _ = st.capture.abort();
                let _ = st.memory.abort_capture();
                let _ = st
                    .info
                    .capture_discard(|(h, _)| evicted.push(Deferred::Device(h)));
                return Err(e);
            }
            Ok(())
        })??;
        self.recording += 1;
        self.hold_flushes_while_recording()
    }

    /// Ends the capture. A doomed window, or a capture the platform
    /// invalidated, yields no graph: everything the window held is released
    /// and the error says why.
    pub(crate) fn end_capture(&mut self, sid: StreamId) -> Res<Graph, P> {
        capture_of(&self.platform, "end_capture")?;
        self.process_releases()?;
        // Out-of-order calls are rejected before anything changes.
        if let Err(e @ CaptureError::NotCapturing { .. }) = self.stream(sid)?.capture.check_end() {
            return Err(e.into());
        }
        let mut pinned = Vec::new();
        self.recording = self.recording.saturating_sub(1);
        let (sealed, graph, owed, memory, window, window_host) =
            self.with_stream(sid, |platform, st, _| {
                let sealed = st.capture.end();
                let graph = capture_of(platform, "end_capture").and_then(|c| {
                    c.end_capture(&mut st.stream)
                        .map_err(|e| Error::platform("end_capture", e))
                });
                let owed = st.drops.set_recording(false);
                let memory = st.memory.end_capture(|c| pinned.push(c.handle));
                let window = core::mem::take(&mut st.window);
                let window_host = core::mem::take(&mut st.window_host);
                st.before_capture = None;
                (sealed, graph, owed, memory, window, window_host)
            })?;
        // The platform capture is closed: flushes may resume.
        let resumed = self.hold_flushes_while_recording();

        let outcome: Res<GraphOf<P>, P> = match (sealed, graph) {
            (Ok(()), Ok(g)) => match memory {
                Ok(()) => Ok(g),
                Err(e) => {
                    let _ = self.destroy_platform_graph(g);
                    Err(e.into())
                }
            },
            (Err(doomed), Ok(g)) => {
                let _ = self.destroy_platform_graph(g);
                Err(doomed.into())
            }
            (Err(doomed), Err(_)) => Err(doomed.into()),
            (Ok(()), Err(e)) => Err(e),
        };
        let gid = GraphId(self.next_graph);
        self.next_graph += 1;
        let result = match outcome {
            Ok(g) => {
                self.with_stream(sid, |_, st, evicted| {
                    let _ = st.info.capture_commit(CacheGraphId(gid.0), |(h, _)| {
                        evicted.push(Deferred::Device(h))
                    });
                })?;
                let (uses, operands) = self.net_uses(window)?;
                self.graphs.insert(
                    gid,
                    GraphState {
                        graph: Some(g),
                        stream: sid,
                        name: KernelName::new(&alloc::format!("graph #{}", gid.0)),
                        uses,
                        operands,
                        pinned,
                        host: window_host,
                    },
                );
                self.stats.graphs_sealed += 1;
                Ok(Graph::new(gid, sid, self.id, self.releases.clone()))
            }
            Err(e) => {
                self.with_stream(sid, |_, st, evicted| {
                    for h in pinned {
                        let _ = st.memory.unpin(h);
                    }
                    let _ = st
                        .info
                        .capture_discard(|(h, _)| evicted.push(Deferred::Device(h)));
                    evicted.extend(window_host.into_iter().map(Deferred::Host));
                })?;
                drop(window);
                Err(e)
            }
        };
        if owed {
            self.flush(sid)?;
        }
        resumed?;
        result
    }

    /// Closes an open window without a graph.
    pub(crate) fn abort_capture(&mut self, sid: StreamId) -> Res<(), P> {
        capture_of(&self.platform, "abort_capture")?;
        self.process_releases()?;
        let was_recording = self.stream(sid)?.capture.is_recording();
        let (owed, window) = self.with_stream(sid, |platform, st, evicted| -> Res<_, P> {
            let recording = st.capture.is_recording();
            st.capture.abort()?;
            if recording {
                if let Ok(c) = capture_of(platform, "abort_capture") {
                    if let Ok(g) = c.end_capture(&mut st.stream) {
                        let _ = c.destroy_graph(g);
                    }
                }
            }
            let owed = st.drops.set_recording(false);
            let _ = st.memory.abort_capture();
            st.before_capture = None;
            let window = core::mem::take(&mut st.window);
            let _ = st
                .info
                .capture_discard(|(h, _)| evicted.push(Deferred::Device(h)));
            evicted.extend(st.window_host.drain(..).map(Deferred::Host));
            Ok((owed, window))
        })??;
        if was_recording {
            self.recording = self.recording.saturating_sub(1);
            self.hold_flushes_while_recording()?;
        }
        drop(window);
        if owed {
            self.flush(sid)?;
        }
        Ok(())
    }

    /// The graph's net use of each buffer: a buffer whose first use in the
    /// window is a full write is an output (reads after it are internal);
    /// otherwise it is an input, and an output too if anything wrote it.
    fn net_uses(&self, window: Vec<WindowUse>) -> Res<(Vec<WindowUse>, Vec<Operand>), P> {
        let mut uses: Vec<WindowUse> = Vec::new();
        for w in window {
            if let Some(u) = uses.iter_mut().find(|u| u.buffer.id() == w.buffer.id()) {
                if u.access == Access::Read && w.access.writes() {
                    u.access = Access::ReadWrite;
                }
            } else {
                uses.push(w);
            }
        }
        let mut operands = Vec::with_capacity(uses.len());
        for u in &uses {
            let size = self.buffers.get(u.buffer.id())?.size;
            operands.push(Operand {
                region: Region::new(AllocId(u.buffer.id().as_u64()), 0, size),
                access: u.access,
            });
        }
        Ok((uses, operands))
    }

    /// Queues one replay of `graph` on the stream it was captured on.
    pub(crate) fn replay(&mut self, graph: &Graph) -> Res<super::Launched, P> {
        capture_of(&self.platform, "replay")?;
        self.process_releases()?;
        if graph.device() != self.id {
            return Err(Error::UnknownGraph(graph.id()));
        }
        let gid = graph.id();
        let Some(gs) = self.graphs.get(&gid) else {
            return Err(Error::UnknownGraph(gid));
        };
        let sid = gs.stream;
        if self
            .streams
            .get(sid)
            .is_some_and(|s| s.capture.is_recording())
        {
            return Err(Error::NotWhileCapturing { op: "replay" });
        }
        let op = Operation::Launch(gs.name.clone());
        if let Decision::Skipped(f) = self.taint.begin(&op, &gs.operands) {
            self.stats.skipped += 1;
            return Ok(super::Launched::Skipped(f));
        }
        self.scratch_marks.clear();
        let n = gs.uses.len();
        for i in 0..n {
            let (id, access) = {
                let u = &self.graphs[&gid].uses[i];
                (u.buffer.id(), u.access)
            };
            self.push_marks(id, access)?;
        }
        self.wait_for_marks(sid)?;
        let Self {
            platform,
            streams,
            graphs,
            ..
        } = self;
        let st = streams
            .get_mut(sid)
            .ok_or(Error::InvalidArgument("stream not created"))?;
        let gs = graphs.get(&gid).ok_or(Error::UnknownGraph(gid))?;
        let Some(g) = gs.graph.as_ref() else {
            return Err(Error::UnknownGraph(gid));
        };
        match capture_of(platform, "replay")?.launch_graph(&mut st.stream, g) {
            Ok(()) => {
                self.stats.graph_replays += 1;
                let cursor = self.sync.submit(sid)?;
                let gs = &self.graphs[&gid];
                self.taint.succeeded(&gs.operands);
                for i in 0..n {
                    let (id, access) = {
                        let u = &self.graphs[&gid].uses[i];
                        (u.buffer.id(), u.access)
                    };
                    self.mark_use(id, sid, cursor, access)?;
                }
                Ok(super::Launched::Queued)
            }
            Err(e) => {
                self.scratch_ops.clear();
                let ops = self.graphs[&gid].operands.clone();
                self.scratch_ops.extend(ops);
                Err(self.work_failed(sid, "launch_graph", op, e))
            }
        }
    }

    /// Destroys a platform graph (one exists only on a platform with capture).
    fn destroy_platform_graph(&self, g: GraphOf<P>) -> Res<(), P> {
        capture_of(&self.platform, "destroy_graph")?
            .destroy_graph(g)
            .map_err(|e| Error::platform("destroy_graph", e))
    }

    /// The last handle of a graph is gone: destroy it and release its pins.
    pub(crate) fn release_graph(&mut self, gid: GraphId) -> Res<(), P> {
        let Some(mut gs) = self.graphs.remove(&gid) else {
            return Ok(());
        };
        let sid = gs.stream;
        let destroyed = match gs.graph.take() {
            Some(g) => self.destroy_platform_graph(g),
            None => Ok(()),
        };
        self.with_stream(sid, |_, st, evicted| {
            let _ = st.info.graph_release(CacheGraphId(gid.0), |(h, _)| {
                evicted.push(Deferred::Device(h))
            });
            // The graph's replays may still be queued: its pins on device
            // slices and its staging bytes go through the drop queue like
            // any other retired slice.
            evicted.extend(gs.pinned.drain(..).map(Deferred::Unpin));
            evicted.extend(gs.host.drain(..).map(Deferred::Host));
        })?;
        self.stats.graphs_released += 1;
        // Dropping `gs.uses` drops buffer handles: their ids land in the
        // release queue, which the caller's loop processes next.
        drop(gs);
        destroyed
    }
}
