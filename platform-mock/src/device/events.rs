//! Events: record, wait, query, host synchronize, drop.

use streamcore::platform::ErrorKind;

use super::command::Command;
use super::{EventState, State};
use crate::check::{OpKind, VectorClock};
use crate::counters::Call;
use crate::error::MockError;

impl State {
    fn new_event(&mut self, captured: Option<u64>) -> u64 {
        let id = self.next_event;
        self.next_event += 1;
        self.events.insert(
            id,
            EventState {
                clock: VectorClock::default(),
                passed: false,
                captured,
                waiters: 0,
                handle: true,
            },
        );
        id
    }

    /// Records an event on stream `s` (captured if `s` is capturing).
    pub(crate) fn record(&mut self, s: usize) -> Result<u64, MockError> {
        let capture = match &self.streams[s].capture {
            Some(c) => {
                if let Some(r) = &c.invalidated {
                    return Err(capture_invalidated(s, r));
                }
                Some(c.id)
            }
            None => None,
        };
        let event = self.new_event(capture);
        if capture.is_none() {
            self.tick();
            self.enqueue(s, Command::Record { event }, None);
        }
        self.counters.records += 1;
        self.calls.push(Call::Record {
            stream: s as u32,
            event,
        });
        Ok(event)
    }

    /// Makes stream `s` wait for `event`.
    pub(crate) fn wait(&mut self, s: usize, event: u64) -> Result<(), MockError> {
        let Some(e) = self.events.get(&event) else {
            return Err(MockError::invalid(std::format!("unknown event {event}")));
        };
        let captured = e.captured;
        match (&self.streams[s].capture, captured) {
            (Some(c), _) if c.invalidated.is_some() => {
                let r = c.invalidated.clone().unwrap_or_default();
                return Err(capture_invalidated(s, &r));
            }
            // Ordering inside one stream's capture is already program order.
            (Some(c), Some(cap)) if c.id == cap => {}
            (Some(_), _) => {
                let reason = std::format!(
                    "stream {s} waited, while capturing, on an event that is not part of its capture"
                );
                if let Some(c) = &mut self.streams[s].capture {
                    c.invalidated = Some(reason.clone());
                    self.counters.captures_invalidated += 1;
                }
                return Err(MockError::new(ErrorKind::CaptureUnsupported, reason));
            }
            (None, Some(cap)) => return Err(self.captured_event_used(cap, "wait")),
            (None, None) => {
                self.tick();
                self.enqueue(s, Command::Wait { event }, None);
            }
        }
        self.counters.waits += 1;
        self.calls.push(Call::Wait {
            stream: s as u32,
            event,
        });
        Ok(())
    }

    /// The error for using an event recorded during capture `cap` outside of
    /// it; invalidates the capture if it is still open.
    fn captured_event_used(&mut self, cap: u64, what: &str) -> MockError {
        let open = self
            .streams
            .iter_mut()
            .filter_map(|s| s.capture.as_mut())
            .find(|c| c.id == cap);
        match open {
            Some(c) => {
                let reason = std::format!("{what} on an event recorded inside an open capture");
                if c.invalidated.is_none() {
                    c.invalidated = Some(reason.clone());
                    self.counters.captures_invalidated += 1;
                }
                MockError::new(ErrorKind::CaptureUnsupported, reason)
            }
            None => MockError::invalid(std::format!(
                "{what} on an event recorded inside a capture (it never passes outside a graph)"
            )),
        }
    }

    /// Whether `event` has passed (after an opportunistic choice point).
    pub(crate) fn query(&mut self, event: u64) -> Result<bool, MockError> {
        let Some(e) = self.events.get(&event) else {
            return Err(MockError::invalid(std::format!("unknown event {event}")));
        };
        let captured = e.captured;
        if self.any_capture_open() && (captured.is_some() || !self.allow_query_during_capture) {
            return Err(self.sync_during_capture(OpKind::Query, "event query"));
        }
        if let Some(cap) = captured {
            return Err(self.captured_event_used(cap, "query"));
        }
        self.tick();
        let passed = self.events.get(&event).is_some_and(|e| e.passed);
        if passed {
            if let Some(e) = self.events.get(&event) {
                self.host_clock.join(&e.clock);
            }
        }
        self.counters.queries += 1;
        self.calls.push(Call::Query { event, passed });
        Ok(passed)
    }

    /// Runs the device until `event` has passed.
    pub(crate) fn synchronize(&mut self, event: u64) -> Result<(), MockError> {
        let Some(e) = self.events.get(&event) else {
            return Err(MockError::invalid(std::format!("unknown event {event}")));
        };
        let captured = e.captured;
        if self.any_capture_open() {
            return Err(self.sync_during_capture(OpKind::Synchronize, "host synchronization"));
        }
        if let Some(cap) = captured {
            return Err(self.captured_event_used(cap, "synchronize"));
        }
        self.run_until(|st| st.events.get(&event).is_none_or(|e| e.passed))?;
        if let Some(e) = self.events.get(&event) {
            self.host_clock.join(&e.clock);
        }
        self.counters.syncs += 1;
        self.calls.push(Call::Synchronize { event });
        Ok(())
    }

    /// The event's handle was dropped.
    pub(crate) fn event_dropped(&mut self, event: u64) {
        if let Some(e) = self.events.get_mut(&event) {
            e.handle = false;
            self.counters.events_dropped += 1;
        }
        self.maybe_forget(event);
    }

    /// Forgets an event nobody can observe any more: handle dropped, no
    /// queued wait, and passed (or captured, so it never will).
    pub(crate) fn maybe_forget(&mut self, event: u64) {
        if self
            .events
            .get(&event)
            .is_some_and(|e| !e.handle && e.waiters == 0 && (e.passed || e.captured.is_some()))
        {
            self.events.remove(&event);
        }
    }
}

fn capture_invalidated(s: usize, reason: &str) -> MockError {
    MockError::new(
        ErrorKind::CaptureInvalidated,
        std::format!("the capture on stream {s} was invalidated: {reason}"),
    )
}
