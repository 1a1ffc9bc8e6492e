//! Buffers and transfers: `alloc`, `empty`, `write`, `read` (with a fault
//! inside it), each checked against the model.

use std::string::ToString;
use std::vec::Vec;

use streamcore::error::Error;
use streamcore::memory::MemoryError;
use streamcore::platform::{Access, ErrorKind};
use streamcore::stream::Phase;

use super::{Driver, Outcome, capture_kind, pattern, platform_kind, storage_refused_in_capture};
use crate::fault::{Effect, Rule, Site, Trigger};
use crate::fuzzing::model::{Doom, MOp};
use crate::fuzzing::program::{MAX_BUFFERS, MAX_MODELED, ReadSite, SIZES};

impl Driver {
    /// Whether no device of this run can hold `bytes` in one reservation
    /// (zero bytes, or more than the mock's memory).
    fn unservable(&self, bytes: u64) -> bool {
        bytes == 0 || bytes > self.setup.mock_memory
    }

    pub(super) fn alloc(&mut self, s: usize, size: u8, empty: bool) -> Result<Outcome, String> {
        if self.bufs.len() >= MAX_BUFFERS {
            return Ok(Outcome::Nothing);
        }
        let bytes = SIZES[usize::from(size) % SIZES.len()];
        let unservable = self.unservable(bytes);
        let recording = self.model.streams[s].phase == Phase::Capture;
        let any_recording = self.model.any_recording();
        let sid = self.sid(s);
        let r = if empty {
            self.device.empty(sid, bytes)
        } else {
            self.device.alloc(sid, bytes)
        };
        let fired = self.new_faults();
        match r {
            Ok(buf) => {
                let placed = self.device.range_of(&buf).is_some();
                if placed || !empty {
                    if unservable {
                        return Err(format!(
                            "a reservation of {bytes} bytes succeeded (placed: {placed}); no device of this run can hold it"
                        ));
                    }
                    let id = self.model.add_buf(s, bytes);
                    self.bufs.push((id, buf));
                    return Ok(Outcome::Done);
                }
                // `empty` came back without memory.
                if !(fired.alloc || any_recording || unservable || !self.strict) {
                    return Err(format!(
                        "empty({bytes}) came back without memory, yet no allocation fault fired, no capture was open and the size is servable"
                    ));
                }
                let Some(f) = self.device.failure_of(&buf) else {
                    return Err(format!(
                        "a buffer of {bytes} bytes without memory carries no failure (the reservation failure must claim it)"
                    ));
                };
                let id = self.model.add_buf(s, bytes);
                let m = self.model.buf_mut(id);
                m.unplaced = true;
                m.claim = Some(f);
                if recording {
                    // A reservation inside the window dooms it: for lack
                    // of storage, or for its own failure when the size (or
                    // an adversarial layout) is the reason.
                    let d = if unservable || !self.strict {
                        Doom::Reservation(f)
                    } else {
                        Doom::Allocation
                    };
                    self.doom(s, d);
                }
                self.doom(s, Doom::Failure(f));
                self.bufs.push((id, buf));
                Ok(Outcome::Failed)
            }
            Err(e) => {
                let _ = e.to_string();
                let ok = match &e {
                    Error::Memory(MemoryError::AllocationInCapture { .. }) => recording,
                    Error::Memory(MemoryError::OutOfMemory { .. }) if fired.alloc => true,
                    Error::Memory(_) | Error::InvalidArgument(_) if unservable => true,
                    Error::Memory(_) if !self.strict => true,
                    _ => any_recording && storage_refused_in_capture(&e),
                };
                if !ok || empty {
                    return Err(format!(
                        "{} of {bytes} bytes failed: {e}",
                        if empty { "empty" } else { "alloc" }
                    ));
                }
                if matches!(e, Error::Memory(MemoryError::AllocationInCapture { .. })) {
                    self.doom(s, Doom::Allocation);
                }
                Ok(Outcome::Permitted)
            }
        }
    }

    pub(super) fn write(&mut self, s: usize, buf: u8, fill: u8) -> Result<Outcome, String> {
        let Some((b, h)) = self.pick_buf(buf) else {
            return Ok(Outcome::Nothing);
        };
        let size = self.model.buf(b).size;
        if size > MAX_MODELED {
            return Ok(Outcome::Nothing);
        }
        let data = pattern(fill, size as usize);
        let recording = self.model.streams[s].phase == Phase::Capture;
        let invalid = self.model.streams[s].invalidated;
        let any_recording = self.model.any_recording();
        let r = self.device.write(self.sid(s), &h, &data);
        let fired = self.new_faults();
        let m = self.model.buf(b);
        if m.unplaced {
            return match r {
                Err(Error::Tainted(rep)) if Some(rep.failure) == m.claim => Ok(Outcome::Tainted),
                Err(Error::InvalidArgument(_)) if size == 0 => Ok(Outcome::Refused),
                other => Err(format!(
                    "a write to a buffer without memory must fail with its claim {:?}; got {other:?}",
                    m.claim
                )),
            };
        }
        match r {
            Ok(()) => {
                if fired.copy {
                    return Err(
                        "the copy failed on the platform, yet write reported success".into(),
                    );
                }
                if recording {
                    self.model.streams[s]
                        .window
                        .push(MOp::Write { buf: b, data });
                } else {
                    self.model.run_write(b, &data);
                }
                Ok(Outcome::Done)
            }
            Err(Error::Failed {
                op: "copy_to_device",
                failure,
                kind,
                ..
            }) => {
                let cause = fired.copy
                    || (recording
                        && kind == ErrorKind::CaptureInvalidated
                        && (invalid || self.model.streams[s].invalidated));
                if !cause {
                    return Err(format!("write failed ({kind:?}) without an injected fault"));
                }
                self.model.buf_mut(b).claim = Some(failure);
                self.doom(s, Doom::Failure(failure));
                Ok(Outcome::Failed)
            }
            Err(e) => {
                let ok = (recording && capture_kind(&e))
                    || (any_recording && storage_refused_in_capture(&e))
                    || (!self.strict && matches!(e, Error::Memory(_)));
                if !ok {
                    return Err(format!("a legal write failed: {e}"));
                }
                self.claim_refused(&[(b, Access::Write)])?;
                self.doom(s, Doom::Platform);
                if recording {
                    self.model.streams[s].missing_work = true;
                }
                Ok(Outcome::Permitted)
            }
        }
    }

    /// A read, with a one-shot fault at `fault` armed for its duration.
    /// Whatever fails inside it, no later read may return stale bytes or
    /// another buffer's (the model's bytes do not change).
    pub(super) fn read(
        &mut self,
        s: usize,
        buf: u8,
        fault: Option<ReadSite>,
    ) -> Result<Outcome, String> {
        let Some((b, h)) = self.pick_buf(buf) else {
            return Ok(Outcome::Nothing);
        };
        let rule = fault.map(|site| {
            let site = match site {
                ReadSite::Synchronize => Site::Synchronize,
                ReadSite::Record => Site::Record,
                ReadSite::CopyToHost => Site::CopyToHost,
                ReadSite::Wait => Site::Wait,
            };
            self.faults.add_rule(Rule {
                site,
                trigger: Trigger::Nth(1),
                effect: Effect::Fail(ErrorKind::Other),
            })
        });
        let r = self.device.read(self.sid(s), &h);
        if let Some(id) = rule {
            self.faults.remove_rule(id);
        }
        let fired = self.new_faults();
        let m = self.model.buf(b);
        if self.model.any_recording() {
            return match r {
                Err(Error::NotWhileCapturing { .. }) => Ok(Outcome::Refused),
                other => Err(format!(
                    "a read while a capture records must be refused; got {:?}",
                    other.map(|b| b.len())
                )),
            };
        }
        match (m.claim, r) {
            (Some(f), Err(Error::Tainted(rep))) => {
                if rep.failure != f {
                    return Err(format!(
                        "the read names {} but the model's claim is {f}",
                        rep.failure
                    ));
                }
                Ok(Outcome::Tainted)
            }
            (None, Ok(bytes)) => {
                // A failed record or wait the device recovers from (a
                // drop-queue fence, a host sync instead of a wait) may
                // leave the read whole; a failed synchronization or copy
                // back may not.
                if fired.read_lost {
                    return Err(
                        "the read's host synchronization or copy back failed, yet it returned bytes"
                            .into(),
                    );
                }
                if m.defined && bytes != m.data {
                    let first = bytes.iter().zip(&m.data).position(|(x, y)| x != y);
                    let show = |b: &[u8]| b.iter().take(8).copied().collect::<Vec<u8>>();
                    return Err(format!(
                        "read returned other bytes than the sequential model (first difference at byte {first:?} of {}): got {:?}.., want {:?}..",
                        bytes.len(),
                        show(&bytes),
                        show(&m.data)
                    ));
                }
                if bytes.len() as u64 != m.size {
                    return Err(format!(
                        "read returned {} bytes of a {}-byte buffer",
                        bytes.len(),
                        m.size
                    ));
                }
                Ok(Outcome::Done)
            }
            (None, Err(e)) if fired.read && matches!(e, Error::Platform { .. }) => {
                if platform_kind(&e) != Some(ErrorKind::Other) {
                    return Err(format!(
                        "the read failed with another error than the injected one: {e}"
                    ));
                }
                Ok(Outcome::Failed)
            }
            (None, Err(Error::Memory(e))) if !self.strict => {
                let _ = e.to_string();
                Ok(Outcome::Permitted)
            }
            (claim, other) => Err(format!(
                "read answered {:?}; the model's claim is {claim:?}{}",
                other.map(|b| b.len()),
                if fired.read {
                    " (an injected fault fired inside it)"
                } else {
                    ""
                }
            )),
        }
    }
}
