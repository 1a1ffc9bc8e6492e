//! Capture transitions, replays and pool installs, checked against the
//! model's phases, dooms and graphs.

use std::collections::BTreeSet;
use std::string::ToString;

use streamcore::device::Launched;
use streamcore::error::Error;
use streamcore::memory::{LayoutError, MemoryError, MemoryLayout};
use streamcore::platform::ErrorKind;
use streamcore::stream::{CaptureError, DoomReason, Phase};

use super::{Driver, Outcome, platform_kind};
use crate::fuzzing::model::{Doom, MGraph, MOp, Model};
use crate::fuzzing::program::MAX_GRAPHS;
use crate::fuzzing::setup::pick_layout;

impl Driver {
    pub(super) fn prepare(&mut self, s: usize) -> Result<Outcome, String> {
        let phase = self.model.streams[s].phase;
        let r = self.device.prepare(self.sid(s));
        match (phase, r) {
            (Phase::NoCapture, Ok(())) => {
                let st = &mut self.model.streams[s];
                st.phase = Phase::Prepare;
                st.doom = None;
                st.info.clear();
                Ok(Outcome::Done)
            }
            (p, Err(Error::Capture(CaptureError::AlreadyOpen { phase })))
                if p != Phase::NoCapture && p == phase =>
            {
                Ok(Outcome::Refused)
            }
            (p, other) => Err(format!("prepare in phase {p:?} answered {other:?}")),
        }
    }

    pub(super) fn begin(&mut self, s: usize) -> Result<Outcome, String> {
        let phase = self.model.streams[s].phase;
        let r = self.device.begin_capture(self.sid(s));
        match (phase, r) {
            (Phase::Prepare, Ok(())) => {
                self.model.streams[s].phase = Phase::Capture;
                Ok(Outcome::Done)
            }
            (Phase::NoCapture, Err(Error::Capture(CaptureError::NotPrepared)))
            | (Phase::Capture, Err(Error::Capture(CaptureError::AlreadyCapturing))) => {
                Ok(Outcome::Refused)
            }
            (p, other) => Err(format!("begin_capture in phase {p:?} answered {other:?}")),
        }
    }

    fn close_window(&mut self, s: usize) {
        let st = &mut self.model.streams[s];
        st.phase = Phase::NoCapture;
        st.doom = None;
        st.invalidated = false;
        st.missing_work = false;
        st.window.clear();
        st.info.clear();
        self.collect();
    }

    pub(super) fn end(&mut self, s: usize) -> Result<Outcome, String> {
        let st = self.model.streams[s].clone();
        let r = self.device.end_capture(self.sid(s));
        let fired = self.new_faults();
        if st.phase != Phase::Capture {
            return match r {
                Err(Error::Capture(CaptureError::NotCapturing { phase })) if phase == st.phase => {
                    Ok(Outcome::Refused)
                }
                other => Err(format!(
                    "end_capture in phase {:?} must be refused; got {other:?}",
                    st.phase
                )),
            };
        }
        let outcome = match (st.doom, st.invalidated || fired.end, r) {
            (Some(d), _, Err(Error::Capture(CaptureError::Doomed(reason)))) => {
                if !d.names(&reason) {
                    return Err(format!(
                        "end_capture refused for {reason:?}; the window's first doom is {d:?}"
                    ));
                }
                self.claim_refused_window(s, d.failure_for(&reason))?;
                Outcome::Refused
            }
            (None, true, Err(e))
                if platform_kind(&e) == Some(ErrorKind::CaptureInvalidated)
                    || (fired.end && matches!(e, Error::Platform { .. })) =>
            {
                let _ = e.to_string();
                self.claim_refused_window(s, None)?;
                Outcome::Refused
            }
            (None, false, Ok(g)) if !st.missing_work => {
                let uses = Model::net_uses(&st.window);
                let pins = st.info.len();
                let got = self.device.graph_info_pins(&g);
                if got != Some(pins) {
                    return Err(format!(
                        "the sealed graph pins {got:?} info entries; its window used {pins}"
                    ));
                }
                if self.graphs.len() < MAX_GRAPHS {
                    self.model.graphs.push(Some(MGraph {
                        stream: s,
                        ops: st.window.clone(),
                        uses,
                        info_pins: pins,
                        info_words: st.info.clone(),
                        handle: true,
                    }));
                    self.graphs.push((self.model.graphs.len() - 1, g));
                } else {
                    drop(g);
                }
                Outcome::Done
            }
            (doom, invalid, r) => {
                return Err(format!(
                    "end_capture answered {:?}; the model expects {}",
                    r.map(|g| g.id()),
                    match (doom, invalid, st.missing_work) {
                        (Some(d), _, _) => format!("a refusal naming {d:?}"),
                        (None, true, _) if fired.end =>
                            "a refusal: the platform's end_capture failed".into(),
                        (None, true, _) => "a refusal: the platform invalidated the capture".into(),
                        (None, false, true) => "a refusal: work asked for inside the window failed and the graph would miss it".into(),
                        (None, false, false) => "a sealed graph".into(),
                    }
                ));
            }
        };
        self.close_window(s);
        Ok(outcome)
    }

    /// A refused window's recorded work never ran: every buffer it would
    /// have written still holds its bytes from before the window, so a
    /// failure claims it — the failure that doomed the window while a live
    /// buffer still carries it (`failure`), otherwise one failure the device
    /// records for the refusal (learnt from the device, the same for every
    /// such buffer).
    fn claim_refused_window(
        &mut self,
        s: usize,
        failure: Option<streamcore::failure::FailureId>,
    ) -> Result<(), String> {
        let outputs: BTreeSet<usize> = Model::net_uses(&self.model.streams[s].window)
            .into_iter()
            .filter(|(b, a)| a.writes() && !self.model.buf(*b).unplaced)
            .map(|(b, _)| b)
            .collect();
        if outputs.is_empty() {
            return Ok(());
        }
        let live = |f| self.model.live_bufs().any(|(_, m)| m.claim == Some(f));
        let expected = failure.filter(|f| live(*f));
        for &b in &outputs {
            let h = self
                .handle_of(b)
                .ok_or("the harness lost the handle of a window's buffer")?;
            let got = self.device.failure_of(h);
            match (expected, got) {
                (_, None) => {
                    return Err(format!(
                        "a buffer the refused window would have written is not claimed: its bytes are stale (the window's doom: {failure:?})"
                    ));
                }
                (Some(f), Some(g)) if f != g => {
                    return Err(format!(
                        "a buffer the refused window would have written is claimed by {g}; the failure that doomed the window, {f}, is live"
                    ));
                }
                _ => {}
            }
        }
        // Every output carries the same failure.
        let mut claims = outputs
            .iter()
            .map(|b| self.handle_of(*b).and_then(|h| self.device.failure_of(h)));
        let first = claims.next().flatten();
        if claims.any(|c| c != first) {
            return Err("the refused window's outputs carry different failures".into());
        }
        let f = first.ok_or("no claim")?;
        for b in outputs {
            self.model.buf_mut(b).claim = Some(f);
        }
        Ok(())
    }

    pub(super) fn abort(&mut self, s: usize) -> Result<Outcome, String> {
        let phase = self.model.streams[s].phase;
        let r = self.device.abort_capture(self.sid(s));
        match (phase, r) {
            (Phase::NoCapture, Err(Error::Capture(CaptureError::NothingToAbort))) => {
                Ok(Outcome::Refused)
            }
            (Phase::Prepare | Phase::Capture, Ok(())) => {
                self.close_window(s);
                Ok(Outcome::Done)
            }
            (p, other) => Err(format!("abort_capture in phase {p:?} answered {other:?}")),
        }
    }

    pub(super) fn replay(&mut self, graph: u8) -> Result<Outcome, String> {
        if self.graphs.is_empty() {
            return Ok(Outcome::Nothing);
        }
        let (g, h) = {
            let (g, h) = &self.graphs[usize::from(graph) % self.graphs.len()];
            (*g, h.clone())
        };
        let mg = self.model.graphs[g].clone().ok_or("model graph released")?;
        let s = mg.stream;
        let r = self.device.replay(&h);
        let fired = self.new_faults();
        if self.model.streams[s].phase == Phase::Capture {
            return match r {
                Err(Error::NotWhileCapturing { .. }) => Ok(Outcome::Refused),
                other => Err(format!(
                    "a replay on a recording stream must be refused; got {other:?}"
                )),
            };
        }
        if let Some(f) = self.model.blocking(&mg.uses) {
            return match r {
                Ok(Launched::Skipped(x)) if x == f => {
                    self.model.claim_outputs(&mg.uses, f);
                    Ok(Outcome::Skipped)
                }
                other => Err(format!(
                    "an input of the graph is claimed by {f}: the replay must be skipped with it; got {other:?}"
                )),
            };
        }
        match r {
            Ok(Launched::Queued) if !fired.graph => {
                for op in &mg.ops {
                    match op {
                        MOp::Launch { kernel, args, k } => self.model.run_launch(*kernel, args, *k),
                        MOp::Write { buf, data } => self.model.run_write(*buf, data),
                    }
                }
                Ok(Outcome::Done)
            }
            Err(Error::Failed {
                op: "launch_graph",
                failure,
                ..
            }) if fired.graph => {
                self.model.claim_outputs(&mg.uses, failure);
                self.doom(s, Doom::Failure(failure));
                Ok(Outcome::Failed)
            }
            other => Err(format!(
                "replay answered {other:?}; the model expects {}",
                if fired.graph {
                    "a failure (injected)"
                } else {
                    "it queued"
                }
            )),
        }
    }

    pub(super) fn install(&mut self, preset: u8) -> Result<Outcome, String> {
        let props = self.setup.properties;
        // Sane layouts only over virtual memory (see `Setup::virtual_memory`).
        let preset = if self.setup.virtual_memory.is_some() {
            preset % 6
        } else {
            preset
        };
        let (layout, sane) = match pick_layout(preset, self.seed, &props) {
            Ok((Some(l), sane)) => (l, sane),
            Ok((None, sane)) => (MemoryLayout::for_device(&props), sane),
            // `MemoryLayout::new` refused it: a typed error, nothing to install.
            Err(e) => {
                let _ = e.to_string();
                return Ok(Outcome::Refused);
            }
        };
        let open = self
            .model
            .streams
            .iter()
            .any(|s| s.phase != Phase::NoCapture);
        let placed = self.model.live_bufs().any(|(_, b)| !b.unplaced);
        // A layout whose pages exceed the device is refused before
        // anything changes, capture or not.
        if layout.fits(props.total_memory).is_err() {
            return match self.device.install_pools(layout) {
                Err(Error::Memory(MemoryError::Layout(LayoutError::PageLargerThanDevice {
                    ..
                }))) => Ok(Outcome::Refused),
                other => Err(format!(
                    "install_pools of a layout larger than the device answered {other:?}"
                )),
            };
        }
        if !open && !placed {
            // The device drops every info entry no live graph pins.
            for s in 0..self.model.streams.len() {
                let pinned: BTreeSet<u8> = self
                    .model
                    .graphs
                    .iter()
                    .flatten()
                    .filter(|g| g.stream == s)
                    .flat_map(|g| g.info_words.iter().copied())
                    .collect();
                self.model.streams[s].cached = pinned;
            }
        }
        let r = self.device.install_pools(layout);
        let sane = sane && self.setup.sane_properties;
        match r {
            Ok(()) if !open && !placed => {
                if !sane {
                    self.strict = false;
                }
                Ok(Outcome::Done)
            }
            Err(Error::Memory(MemoryError::InUse { bytes })) if bytes > 0 => Ok(Outcome::Refused),
            Err(Error::NotWhileCapturing { .. }) if open => Ok(Outcome::Refused),
            // A layout the pools cannot take: a typed refusal (some streams
            // may have taken it).
            Err(Error::Memory(e)) if !sane && !open && !placed => {
                let _ = e.to_string();
                self.strict = false;
                Ok(Outcome::Refused)
            }
            other => Err(format!(
                "install_pools answered {other:?} (capture window open: {open}, live buffers: {placed})"
            )),
        }
    }
}

impl Doom {
    /// Whether the device's `reason` is this doom.
    pub(crate) fn names(self, reason: &DoomReason) -> bool {
        match (self, reason) {
            (Doom::Failure(f), DoomReason::Failure(raw)) => f.get() == *raw,
            (Doom::Allocation, DoomReason::AllocationInCapture { .. }) => true,
            (Doom::Platform, DoomReason::Platform { .. }) => true,
            (Doom::Reservation(_), DoomReason::AllocationInCapture { .. }) => true,
            (Doom::Reservation(f), DoomReason::Failure(raw)) => f.get() == *raw,
            _ => false,
        }
    }

    /// The failure behind the doom the device named as `reason`, if one is.
    pub(crate) fn failure_for(self, reason: &DoomReason) -> Option<streamcore::failure::FailureId> {
        match (self, reason) {
            (Doom::Failure(f), _) => Some(f),
            (Doom::Reservation(f), DoomReason::Failure(_)) => Some(f),
            _ => None,
        }
    }
}
