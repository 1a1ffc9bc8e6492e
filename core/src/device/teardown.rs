//! Teardown: when the last clone of a device drops, queued work is waited
//! for and everything the platform made is destroyed in the order the
//! platform needs — graphs (which launch kernels on streams over storage),
//! then kernels, then the events and streams, then the storages (the
//! streams' pools, then the staging pool: each given every page, chunk and
//! reservation back first, whatever is still allocated, so a storage that
//! frees nothing on drop loses nothing), and the platform last. The
//! release queue is closed: handles that outlive the device give their
//! allocations back to it when dropped.

use alloc::vec::Vec;

use super::Shared;
use super::lock::{LockFamilyMutex, RawLock};
use super::state::{Env, Inner};
use crate::platform::{GraphCapture, Platform};
use crate::stream::StreamPool;

impl<P: Platform, L: RawLock> Drop for Shared<P, L> {
    fn drop(&mut self) {
        let Shared { state, env } = self;
        let inner = state.get_mut();
        inner.teardown(env);
        // Last: buffers dropped above were queued. Handles dropped from now
        // on give their allocations back to the closed queue.
        let (shares, live) = inner.buffers.shares();
        inner.releases.close(shares, live);
        // `state` (what is left of it: the staging pool) drops next, then
        // `env` (the platform).
    }
}

impl<P: Platform> Inner<P> {
    /// Waits for queued work and destroys what the platform made, in order.
    /// Errors cannot be reported from a drop: each step is best effort.
    fn teardown<L: RawLock>(&mut self, env: &mut Env<P, L>) {
        let platform = &env.platform;
        // Open captures first: a recording stream cannot be synchronized.
        for (sid, st) in self.streams.iter_mut() {
            if st.capture.is_recording() {
                let lane = env.lanes.get_mut(sid.index()).map(|l| l.0.get_mut());
                let capture = platform.capture();
                if let (Some(s), Some(c)) = (lane.and_then(|l| l.stream.as_mut()), capture) {
                    if let Ok(g) = c.end_capture(s) {
                        let _ = c.destroy_graph(g);
                    }
                }
            }
            let _ = st.capture.abort();
        }
        self.recording = 0;
        // Let everything queued finish: replays of graphs, launches, copies.
        for lane in env.lanes.iter_mut() {
            if let Some(s) = lane.0.get_mut().stream.as_mut() {
                if let Ok(event) = platform.record(s) {
                    let _ = platform.synchronize(&event);
                }
            }
        }
        // Graphs, in the order they were sealed.
        let mut graphs: Vec<_> = self.graphs.drain().collect();
        graphs.sort_unstable_by_key(|(gid, _)| *gid);
        for (_, mut gs) in graphs {
            if let Some(g) = gs.graph.take() {
                let _ = super::graph::destroy_platform_graph(platform, g);
            }
        }
        // Kernels (the lanes keep the last one each launched).
        for lane in env.lanes.iter_mut() {
            lane.0.get_mut().kernel = None;
        }
        self.kernels.clear();
        // Events (fences of the drop queues), then streams.
        for (_, st) in self.streams.iter_mut() {
            st.progress = None;
            st.before_capture = None;
            let _ = st.drops.set_recording(false);
            let _ = st
                .drops
                .drain(|_| Ok::<(), core::convert::Infallible>(()), |_| {});
        }
        for lane in env.lanes.iter_mut() {
            lane.0.get_mut().stream = None;
        }
        // Every page, chunk and reservation back to its storage (the work
        // that could touch them completed above; handles that outlive the
        // device cannot reach their bytes), then the streams' storages go.
        // The staging pool's storage goes with `self`, emptied here too.
        for (_, st) in self.streams.iter_mut() {
            let _ = st.memory.close();
        }
        let _ = self.host.close();
        self.streams = StreamPool::new(0, 0);
    }
}
