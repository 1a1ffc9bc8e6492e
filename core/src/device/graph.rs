//! Graph capture through the device: warm-up, capture, seal, replay,
//! release. The stream's capture state, memory manager, info cache and drop
//! queue move together.

use alloc::vec::Vec;

use super::handle::{Graph, GraphId};
use super::launch::taint_region;
use super::lock::RawLock;
use super::state::{Deferred, Env, GraphState, Inner, Res, WindowUse};
use crate::error::Error;
use crate::failure::{Cause, Decision, Operand, Operation};
use crate::info_cache::{CacheMode, GraphId as CacheGraphId};
use crate::platform::{Access, Capabilities, GraphCapture, GraphOf, Platform};
use crate::stream::{CaptureError, DoomReason, StreamId};

/// The platform's graph capture, or [`Error::NotSupported`] when it declares
/// none ([`Capabilities::GRAPH_CAPTURE`] and [`Platform::capture`] must agree).
pub(crate) fn capture_of<'p, P: Platform>(
    platform: &'p P,
    op: &'static str,
) -> Res<&'p P::Capture, P> {
    let needs = Capabilities::GRAPH_CAPTURE;
    match platform.capture() {
        Some(c) if platform.capabilities().contains(needs) => Ok(c),
        _ => Err(Error::NotSupported { op, needs }),
    }
}

/// Why a window yields no graph, and the doom reason it had, if any.
type Refusal<P> = (Error<<P as Platform>::Error>, Option<DoomReason>);

impl<P: Platform> Inner<P> {
    /// `NoCapture → Prepare`: the warm-up. Pools retain what they hand out
    /// and the info cache records what the window uses.
    pub(crate) fn prepare<L: RawLock>(&mut self, env: &Env<P, L>, sid: StreamId) -> Res<(), P> {
        capture_of(&env.platform, "prepare")?;
        self.process_releases(env);
        self.with_stream(env, sid, |st, evicted| -> Res<(), P> {
            st.capture.prepare()?;
            if let Err(e) = st.memory.prepare() {
                let _ = st.capture.abort();
                return Err(e.into());
            }
            st.info_mut().set_mode(CacheMode::Capture, |(h, _)| {
                evicted.push(Deferred::Device(h))
            });
            Ok(())
        })?
    }

    /// Whether `begin_capture` on `sid` would be accepted now (checked
    /// before the settling sync, so an out-of-order call changes nothing),
    /// and whether that sync is allowed (no stream records).
    pub(crate) fn begin_check<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
    ) -> Res<bool, P> {
        capture_of(&env.platform, "begin_capture")?;
        self.process_releases(env);
        let mut probe = self.stream(env, sid)?.capture;
        probe.begin()?;
        Ok(self.recording == 0)
    }

    /// `Prepare → Capture`: the retained slices go back to the pools, due
    /// frees are flushed, and the platform starts recording. The caller
    /// settled the stream first (a host sync, without the lock) when no
    /// stream recorded: once recording, no fence can be recorded or waited
    /// on, so staging slices still behind a fence could not be reused inside
    /// the window (an upload there would then need fresh pinned memory,
    /// which invalidates a driver capture).
    pub(crate) fn begin_capture<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
    ) -> Res<(), P> {
        capture_of(&env.platform, "begin_capture")?;
        self.process_releases(env);
        // Out-of-order calls are rejected before anything changes.
        let mut probe = self.stream(env, sid)?.capture;
        probe.begin()?;
        self.flush(env, sid)?;
        let st = self.stream(env, sid)?;
        st.capture.begin()?;
        st.memory.begin_capture()?;
        let cursor = self.sync.cursor(sid)?;
        self.with_stream(env, sid, |st, evicted| -> Res<(), P> {
            // What other streams wait on for this stream's earlier writes
            // while it records (an event recorded inside the capture would
            // be a graph node they cannot wait on).
            st.before_capture = match env.record(sid) {
                Ok(event) => Some(super::state::Fence { cursor, event }),
                Err(_) => None,
            };
            let _ = st.drops.set_recording(true);
            let begun = capture_of(&env.platform, "begin_capture").and_then(|c| {
                env.on_stream(sid, |_, s| c.begin_capture(s))?
                    .map_err(|e| Error::platform("begin_capture", e))
            });
            if let Err(e) = begun {
                let _ = st.drops.set_recording(false);
                let _ = st.capture.abort();
                let _ = st.memory.abort_capture();
                let _ = st
                    .info_mut()
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
    pub(crate) fn end_capture<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
    ) -> Res<Graph, P> {
        capture_of(&env.platform, "end_capture")?;
        self.process_releases(env);
        // Out-of-order calls are rejected before anything changes.
        if let Err(e @ CaptureError::NotCapturing { .. }) =
            self.stream(env, sid)?.capture.check_end()
        {
            return Err(e.into());
        }
        let mut pinned = Vec::new();
        self.recording = self.recording.saturating_sub(1);
        let platform = &env.platform;
        let (sealed, graph, owed, memory, window, window_host) =
            self.with_stream(env, sid, |st, _| {
                let doomed = st.capture.doomed();
                let sealed = st.capture.end().map_err(|e| (e, doomed));
                let graph = capture_of(platform, "end_capture").and_then(|c| {
                    env.on_stream(sid, |_, s| c.end_capture(s))?
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

        // Why the window is refused, and the failure that doomed it if any.
        let outcome: Result<GraphOf<P>, Refusal<P>> = match (sealed, graph) {
            (Ok(()), Ok(g)) => match memory {
                Ok(()) => Ok(g),
                Err(e) => {
                    let _ = destroy_platform_graph(platform, g);
                    Err((e.into(), None))
                }
            },
            (Err((doomed, reason)), Ok(g)) => {
                let _ = destroy_platform_graph(platform, g);
                Err((doomed.into(), reason))
            }
            (Err((doomed, reason)), Err(_)) => Err((doomed.into(), reason)),
            (Ok(()), Err(e)) => Err((e, None)),
        };
        let gid = GraphId(self.next_graph);
        self.next_graph += 1;
        let result = match outcome {
            Ok(g) => {
                self.with_stream(env, sid, |st, evicted| {
                    let _ = st.info_mut().capture_commit(CacheGraphId(gid.0), |(h, _)| {
                        evicted.push(Deferred::Device(h))
                    });
                })?;
                let (uses, operands) = self.net_uses(window)?;
                self.graphs.insert(
                    gid,
                    GraphState {
                        graph: Some(g),
                        stream: sid,
                        uses,
                        operands,
                        pinned,
                        host: window_host,
                    },
                );
                self.stats.graphs_sealed += 1;
                Ok(Graph::new(gid, sid, self.id, self.releases))
            }
            Err((e, reason)) => {
                self.with_stream(env, sid, |st, evicted| {
                    for h in pinned {
                        let _ = st.memory.unpin(h);
                    }
                    let _ = st
                        .info_mut()
                        .capture_discard(|(h, _)| evicted.push(Deferred::Device(h)));
                    evicted.extend(window_host.into_iter().map(Deferred::Host));
                })?;
                self.claim_refused_window(sid, &window, reason, &e)?;
                // Buffers only the window kept alive are freed now (their
                // claims with them).
                drop(window);
                self.process_releases(env);
                Err(e)
            }
        };
        if owed {
            if let Err(e) = self.flush(env, sid) {
                self.release_failed(e);
            }
        }
        resumed?;
        result
    }

    /// Closes an open window without a graph.
    pub(crate) fn abort_capture<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
    ) -> Res<(), P> {
        capture_of(&env.platform, "abort_capture")?;
        self.process_releases(env);
        let was_recording = self.stream(env, sid)?.capture.is_recording();
        let (owed, window) = self.with_stream(env, sid, |st, evicted| -> Res<_, P> {
            let recording = st.capture.is_recording();
            st.capture.abort()?;
            if recording {
                if let Ok(c) = capture_of(&env.platform, "abort_capture") {
                    if let Ok(Ok(g)) = env.on_stream(sid, |_, s| c.end_capture(s)) {
                        let _ = c.destroy_graph(g);
                    }
                }
            }
            let owed = st.drops.set_recording(false);
            let _ = st.memory.abort_capture();
            st.before_capture = None;
            let window = core::mem::take(&mut st.window);
            let _ = st
                .info_mut()
                .capture_discard(|(h, _)| evicted.push(Deferred::Device(h)));
            evicted.extend(st.window_host.drain(..).map(Deferred::Host));
            Ok((owed, window))
        })??;
        if was_recording {
            self.recording = self.recording.saturating_sub(1);
            self.hold_flushes_while_recording()?;
        }
        drop(window);
        self.process_releases(env);
        if owed {
            if let Err(e) = self.flush(env, sid) {
                self.release_failed(e);
            }
        }
        Ok(())
    }

    /// A window that yields no graph never ran what it recorded: every
    /// buffer its launches and copies would have written is claimed, by the
    /// failure that doomed it when there is one (and it is still live),
    /// otherwise by a new failure whose cause is the refusal.
    fn claim_refused_window(
        &mut self,
        sid: StreamId,
        window: &[WindowUse],
        reason: Option<DoomReason>,
        refusal: &Error<P::Error>,
    ) -> Res<(), P> {
        self.scratch_ops.clear();
        for w in window.iter().filter(|w| w.access.writes()) {
            let Ok(slot) = self.buffers.get(w.buffer.id()) else {
                continue;
            };
            self.scratch_ops.push(Operand {
                region: taint_region(w.buffer.id(), slot.size),
                access: Access::Write,
            });
        }
        if self.scratch_ops.is_empty() {
            return Ok(());
        }
        let op = Operation::Capture(sid);
        if let Some(DoomReason::Failure(raw)) = reason {
            let f = crate::failure::FailureId::from_raw(raw);
            if let Some(node) = self.taint.get(f) {
                // Link the window to the failure as a skip over bytes it
                // still claims, so a read's report walks back to the root.
                let input = node
                    .stopped()
                    .iter()
                    .copied()
                    .find(|r| self.taint.failure(*r) == Some(f));
                if let Some(input) = input {
                    self.scratch_ops.insert(0, Operand::read(input));
                    if self.taint.begin(&op, &self.scratch_ops) == Decision::Skipped(f) {
                        return Ok(());
                    }
                    self.scratch_ops.remove(0);
                }
                if self.taint.get(f).is_some() {
                    for o in &self.scratch_ops {
                        let _ = self.taint.taint(o.region, f);
                    }
                    return Ok(());
                }
            }
        }
        let message = alloc::format!("{refusal}");
        self.taint
            .failed(Cause::new(op, message), &self.scratch_ops);
        self.stats.failures += 1;
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
                region: taint_region(u.buffer.id(), size),
                access: u.access,
            });
        }
        Ok((uses, operands))
    }

    /// Queues one replay of `graph` on the stream it was captured on.
    pub(crate) fn replay<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        graph: &Graph,
    ) -> Res<super::Launched, P> {
        let capture = capture_of(&env.platform, "replay")?;
        self.process_releases(env);
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
        let op = Operation::Replay { graph: gid.0 };
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
        if let Err(e) = self.wait_for_marks(env, sid) {
            // Refused before it was queued: its outputs are claimed.
            self.scratch_ops.clear();
            if let Some(gs) = self.graphs.get(&gid) {
                self.scratch_ops.extend_from_slice(&gs.operands);
            }
            self.claim_refused(op, &e);
            return Err(e);
        }
        let gs = self
            .graphs
            .get(&gid)
            .ok_or_else(|| Error::UnknownGraph(gid))?;
        let Some(g) = gs.graph.as_ref() else {
            return Err(Error::UnknownGraph(gid));
        };
        match env.on_stream(sid, |_, s| capture.launch_graph(s, g))? {
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

    /// The last handle of a graph is gone: destroy it and release its pins.
    pub(crate) fn release_graph<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        gid: GraphId,
    ) -> Res<(), P> {
        let Some(mut gs) = self.graphs.remove(&gid) else {
            return Ok(());
        };
        let sid = gs.stream;
        let destroyed = match gs.graph.take() {
            Some(g) => destroy_platform_graph(&env.platform, g),
            None => Ok(()),
        };
        self.with_stream(env, sid, |st, evicted| {
            let _ = st.info_mut().graph_release(CacheGraphId(gid.0), |(h, _)| {
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

/// Destroys a platform graph (one exists only on a platform with capture).
pub(crate) fn destroy_platform_graph<P: Platform>(platform: &P, g: GraphOf<P>) -> Res<(), P> {
    capture_of(platform, "destroy_graph")?
        .destroy_graph(g)
        .map_err(|e| Error::platform("destroy_graph", e))
}
