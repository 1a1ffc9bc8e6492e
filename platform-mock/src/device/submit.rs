//! Submitting commands: validation, vector clocks, hazard checks, queueing
//! (or recording into an open capture).

use std::vec::Vec;

use streamcore::platform::{ErrorKind, PageId};

use super::State;
use super::command::{Command, Queued, Touch};
use crate::check::shadow::{self, Access, AccessRec, Place};
use crate::check::{Agent, ByteRange, Hazard, HazardKind, OpKind, OpRef, VectorClock};
use crate::error::MockError;
use crate::memory::{MemoryKind, PageState};

impl State {
    /// Checks every range of `cmd` names an existing page of the right kind
    /// and lies inside it, and the command's own rules (copy lengths match,
    /// a device copy's ranges do not overlap, the kernel is ours).
    pub(crate) fn validate(&self, cmd: &Command) -> Result<(), MockError> {
        for t in cmd.touches() {
            self.validate_touch(&t)?;
        }
        match cmd {
            Command::CopyToDevice { src, dst } if src.len != dst.len => {
                Err(MockError::invalid(std::format!(
                    "copy_to_device: source has {} bytes, destination {}",
                    src.len,
                    dst.len
                )))
            }
            Command::CopyToHost { src, dst } if src.len != dst.len => {
                Err(MockError::invalid(std::format!(
                    "copy_to_host: source has {} bytes, destination {}",
                    src.len,
                    dst.len
                )))
            }
            Command::CopyDevice { src, dst } if src.len != dst.len => {
                Err(MockError::invalid(std::format!(
                    "copy_device: source has {} bytes, destination {}",
                    src.len,
                    dst.len
                )))
            }
            Command::CopyDevice { src, dst }
                if src.page == dst.page
                    && src.len > 0
                    && src.offset < dst.offset + dst.len
                    && dst.offset < src.offset + src.len =>
            {
                Err(MockError::invalid(
                    "copy_device: source and destination overlap",
                ))
            }
            Command::Launch { kernel, .. } => self.check_instance(kernel.instance, "kernel"),
            _ => Ok(()),
        }
    }

    /// Checks one range: known page, right kind, inside the page.
    pub(crate) fn validate_touch(&self, t: &Touch) -> Result<(), MockError> {
        let Some(p) = self.memory.page(t.page) else {
            return Err(MockError::invalid(std::format!(
                "unknown page {}",
                t.page.0
            )));
        };
        if p.kind != t.memory {
            return Err(MockError::invalid(std::format!(
                "page {} is {:?} memory, used as {:?} memory",
                t.page.0,
                p.kind,
                t.memory
            )));
        }
        if !p.contains(t.offset, t.len) {
            return Err(MockError::invalid(std::format!(
                "bytes {}..+{} are outside page {} of {} bytes",
                t.offset,
                t.len,
                t.page.0,
                p.size
            )));
        }
        Ok(())
    }

    /// Queues a validated copy or launch on stream `s`, or records it into
    /// the stream's open capture.
    pub(crate) fn submit(&mut self, s: usize, cmd: Command) -> Result<(), MockError> {
        self.validate(&cmd)?;
        if let Some(cap) = &mut self.streams[s].capture {
            if let Some(r) = &cap.invalidated {
                return Err(MockError::new(
                    ErrorKind::CaptureInvalidated,
                    std::format!("the capture on stream {s} was invalidated: {r}"),
                ));
            }
            cap.commands.push(cmd);
            return Ok(());
        }
        self.tick();
        self.enqueue(s, cmd, None);
        Ok(())
    }

    /// Queues a validated command on a stream that is not capturing:
    /// advances the stream's clock, checks and records its accesses.
    /// Returns its op index.
    pub(crate) fn enqueue(&mut self, s: usize, cmd: Command, graph: Option<u64>) -> u64 {
        let op = self.next_op();
        let agent = Agent::Stream(s as u32);
        let st = &mut self.streams[s];
        st.clock.join(&self.host_clock);
        if let Command::Wait { event } = &cmd {
            if let Some(e) = self.events.get_mut(event) {
                st.clock.join(&e.clock);
                e.waiters += 1;
            }
        }
        let epoch = st.clock.tick(agent);
        if let Command::Record { event } = &cmd {
            if let Some(e) = self.events.get_mut(event) {
                e.clock = st.clock.clone();
            }
        }
        if let Some(kind) = cmd.op_kind() {
            let clock = st.clock.clone();
            let rec = AccessRec {
                agent,
                epoch,
                op,
                kind,
            };
            for t in cmd.touches() {
                self.check_touch(&t, &rec, &clock);
            }
        }
        self.streams[s].queue.push_back(Queued { op, cmd, graph });
        op
    }

    /// Checks one access against the page's life and shadow, and records it.
    pub(crate) fn check_touch(&mut self, t: &Touch, rec: &AccessRec, clock: &VectorClock) {
        let report_uninitialized = self.report_uninitialized;
        let Some(page) = self.memory.page_mut(t.page) else {
            return;
        };
        if let PageState::Deallocated { op } | PageState::Released { op } = page.state {
            self.hazards
                .push(use_after_free(t.memory, t.page, t.offset, t.len, rec, op));
        }
        if matches!(page.state, PageState::Released { .. }) {
            return;
        }
        let access = Access {
            rec: rec.clone(),
            clock,
            reads: t.reads,
            writes: t.writes,
        };
        let place = Place {
            memory: t.memory,
            page: t.page,
        };
        let mut found = Vec::new();
        shadow::check_and_record(
            &mut page.shadow,
            t.offset,
            t.offset + t.len,
            place,
            &access,
            report_uninitialized,
            &mut found,
        );
        self.hazards.append(&mut found);
    }
}

/// The report of an access to a page that op `dealloc_op` deallocated.
pub(crate) fn use_after_free(
    memory: MemoryKind,
    page: PageId,
    offset: u64,
    len: u64,
    rec: &AccessRec,
    dealloc_op: u64,
) -> Hazard {
    Hazard {
        kind: HazardKind::UseAfterFree,
        current: OpRef {
            op: rec.op,
            agent: rec.agent,
            kind: rec.kind.clone(),
        },
        previous: Some(OpRef {
            op: dealloc_op,
            agent: Agent::Host,
            kind: OpKind::Dealloc,
        }),
        bytes: Some(ByteRange {
            memory,
            page,
            offset,
            len,
        }),
    }
}
