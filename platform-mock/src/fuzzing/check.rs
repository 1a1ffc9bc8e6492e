//! The invariants checked after every step, and the leak check at the end.

use std::format;
use std::string::String;
use std::vec::Vec;

use streamcore::stream::Phase;

use super::driver::Driver;
use crate::MemoryKind;

/// Feature ids for state facts (beside the `(op, outcome)` pairs).
const FACT: u32 = 0xff << 8;

impl Driver {
    /// Every invariant of the oracle that does not depend on the op.
    pub(crate) fn check(&mut self) -> Result<(), String> {
        self.check_hazards()?;
        self.collect();
        let census = self.device.census();
        let live = self.model.live_bufs().count();
        if census.buffers != live {
            return Err(format!(
                "the device holds {} buffer(s); the model {live} (a leak or an early free)",
                census.buffers
            ));
        }
        let graphs = self.model.graphs.iter().flatten().count();
        if census.graphs != graphs {
            return Err(format!(
                "the device holds {} graph(s); the model {graphs}",
                census.graphs
            ));
        }
        let failures = self.model.live_failures();
        if census.failures != failures {
            return Err(format!(
                "the taint graph holds {} failure(s); the live buffers carry {failures}",
                census.failures
            ));
        }
        if census.cross_pins > 0 {
            self.features.insert(FACT | 1);
        }
        if census.deferred > 0 {
            self.features.insert(FACT | 2);
        }
        for s in 0..self.streams {
            let got = self.device.capture_phase(self.sid(s));
            let want = self.model.streams[s].phase;
            if got != want {
                return Err(format!("stream {s} is in {got:?}; the model says {want:?}"));
            }
            if want != Phase::NoCapture {
                self.features.insert(FACT | 8 | s as u32);
            }
        }
        self.check_memory()?;
        self.check_overlap()?;
        self.check_info()
    }

    fn check_hazards(&self) -> Result<(), String> {
        let h = self.mock.hazards();
        if h.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = h.iter().map(|h| format!("  {h}")).collect();
        Err(format!(
            "the mock reported {} hazard(s):\n{}",
            h.len(),
            lines.join("\n")
        ))
    }

    /// Pages the pools hold (reserved, plus released but not flushed) are
    /// exactly the device pages the mock has not released (without virtual
    /// memory: with it, pages are carved from reservations and the mock
    /// counts committed chunks); each pool's figures add up (its live
    /// slices' bytes, their padding and its idle pages fit in its pages);
    /// bytes in use cover every live buffer.
    fn check_memory(&self) -> Result<(), String> {
        let mut held: u64 = 0;
        let mut in_use: u64 = 0;
        let overflow = |what: &str| format!("the pools' {what} overflow u64: corrupt accounting");
        for s in 0..self.streams {
            if let Some(r) = self.device.memory_report(self.sid(s)) {
                for p in &r.pools {
                    let parts = p
                        .in_use
                        .checked_add(p.padding)
                        .and_then(|x| x.checked_add(p.idle_bytes));
                    if parts.is_none_or(|x| x > p.reserved) || p.idle_pages > p.pages {
                        return Err(format!(
                            "stream {s}'s {} pool does not add up: {p:?}",
                            p.kind
                        ));
                    }
                    held = held
                        .checked_add(p.reserved)
                        .ok_or_else(|| overflow("pages"))?;
                    in_use = in_use
                        .checked_add(p.in_use)
                        .ok_or_else(|| overflow("bytes in use"))?;
                }
                held = held
                    .checked_add(r.pending_release)
                    .ok_or_else(|| overflow("pages"))?;
            }
        }
        let mock = self.mock.memory_used(MemoryKind::Device);
        if held != mock && self.setup.virtual_memory.is_none() {
            return Err(format!(
                "the pools account for {held} bytes of pages; the mock holds {mock}"
            ));
        }
        let need: u64 = self
            .model
            .live_bufs()
            .filter(|(_, b)| !b.unplaced)
            .map(|(_, b)| b.size)
            .sum();
        if in_use < need {
            return Err(format!(
                "the pools report {in_use} bytes in use, less than the {need} bytes of live buffers"
            ));
        }
        Ok(())
    }

    /// No two buffers the harness holds share a byte, and each lies where
    /// its size says.
    fn check_overlap(&self) -> Result<(), String> {
        let mut ranges = Vec::new();
        for (b, h) in &self.bufs {
            let m = self.model.buf(*b);
            match (self.device.range_of(h), m.unplaced) {
                (None, true) => {}
                (Some(r), false) => {
                    if r.len != m.size {
                        return Err(format!(
                            "buffer of {} bytes sits on a range of {}",
                            m.size, r.len
                        ));
                    }
                    // Its first and last bytes are device memory the
                    // platform holds (inside a live page; in a reservation,
                    // inside committed chunks).
                    for at in [r.offset, r.offset + r.len - 1] {
                        let byte = streamcore::platform::DeviceRange {
                            page: r.page,
                            offset: at,
                            len: 1,
                        };
                        if let Err(e) = self.mock.peek(byte) {
                            return Err(format!(
                                "a live buffer's byte {at} of {r:?} is not memory the platform holds: {e}"
                            ));
                        }
                    }
                    ranges.push(r);
                }
                (r, unplaced) => {
                    return Err(format!(
                        "buffer range {r:?}, but the model says unplaced = {unplaced}"
                    ));
                }
            }
        }
        for (i, a) in ranges.iter().enumerate() {
            for b in &ranges[i + 1..] {
                if a.page == b.page && a.offset < b.offset + b.len && b.offset < a.offset + a.len {
                    return Err(format!("two live buffers overlap: {a:?} and {b:?}"));
                }
            }
        }
        Ok(())
    }

    /// The info cache pins exactly what the live graphs recorded, and the
    /// open windows record exactly the info words they used.
    fn check_info(&self) -> Result<(), String> {
        for s in 0..self.streams {
            let c = self.device.info_census(self.sid(s)).unwrap_or_default();
            let graphs = self
                .model
                .graphs
                .iter()
                .flatten()
                .filter(|g| g.stream == s)
                .count();
            if c.graphs != graphs {
                return Err(format!(
                    "stream {s}'s info cache is pinned by {} graph(s); {graphs} are live",
                    c.graphs
                ));
            }
            let st = &self.model.streams[s];
            let window = if st.phase == Phase::NoCapture {
                0
            } else {
                st.info.len()
            };
            if c.entries != st.cached.len() {
                return Err(format!(
                    "stream {s}'s info cache holds {} entr(ies); eager launches uploaded {}",
                    c.entries,
                    st.cached.len()
                ));
            }
            if c.window != window {
                return Err(format!(
                    "stream {s}'s info cache window holds {} entr(ies); the window used {window}",
                    c.window
                ));
            }
        }
        for (g, h) in &self.graphs {
            let want = self.model.graphs[*g].as_ref().map(|m| m.info_pins);
            let got = self.device.graph_info_pins(h);
            if got != want {
                return Err(format!(
                    "graph {:?} pins {got:?} info entries; it recorded {want:?}",
                    h.id()
                ));
            }
        }
        Ok(())
    }

    /// Closes every window, drops every handle, syncs, and checks that
    /// nothing is left but the info caches' unpinned entries.
    pub(crate) fn teardown(&mut self) -> Result<(), String> {
        for s in 0..self.streams {
            if self.model.streams[s].phase != Phase::NoCapture {
                self.device
                    .abort_capture(self.sid(s))
                    .map_err(|e| format!("abort_capture of stream {s} at teardown: {e}"))?;
                let cached = core::mem::take(&mut self.model.streams[s].cached);
                self.model.streams[s] = Default::default();
                self.model.streams[s].cached = cached;
            }
        }
        self.graphs.clear();
        self.bufs.clear();
        self.shadow.clear();
        for g in &mut self.model.graphs {
            *g = None;
        }
        for b in self.model.bufs.iter_mut().flatten() {
            b.handle = false;
        }
        self.collect();
        self.device
            .sync_all()
            .map_err(|e| format!("final sync_all: {e}"))?;
        self.check()?;
        let c = self.device.census();
        let mut entries = 0;
        for s in 0..self.streams {
            let i = self.device.info_census(self.sid(s)).unwrap_or_default();
            entries += i.entries as u64;
        }
        let leaks = (
            c.buffers,
            c.failures,
            c.graphs,
            c.deferred,
            c.cross_pins,
            c.live_bytes,
        );
        if leaks != (0, 0, 0, 0, 0, 8 * entries) {
            return Err(format!(
                "after dropping everything and a final sync something is live: {c:?} ({entries} info entries cached)"
            ));
        }
        // Every graph the platform sealed was destroyed (refused windows'
        // included).
        let k = self.mock.counters();
        if k.graphs_captured != k.graphs_destroyed {
            return Err(format!(
                "the platform sealed {} graph(s) and destroyed {}",
                k.graphs_captured, k.graphs_destroyed
            ));
        }
        self.device
            .cleanup()
            .map_err(|e| format!("final cleanup: {e}"))?;
        self.check()
    }
}
