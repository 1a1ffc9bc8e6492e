//! Launches: skipped over claims, failed with a new failure, or queued (run
//! on the model, or recorded into the open window).

use std::vec::Vec;

use streamcore::device::{Arg, Buffer, Launched};
use streamcore::error::Error;
use streamcore::memory::MemoryError;
use streamcore::platform::{Access, ErrorKind};
use streamcore::stream::Phase;

use super::{Driver, Outcome, capture_kind, storage_refused_in_capture};
use crate::fuzzing::kernels;
use crate::fuzzing::model::{BufId, Doom, MOp};
use crate::fuzzing::program::Kernel;

impl Driver {
    /// `Op::Launch`: picks the operands among the live buffers.
    pub(super) fn launch_op(
        &mut self,
        s: usize,
        kernel: Kernel,
        a: u8,
        b: u8,
        out: u8,
        k: u8,
    ) -> Result<Outcome, String> {
        let (Some(a), Some(b), Some(o)) = (self.pick_buf(a), self.pick_buf(b), self.pick_buf(out))
        else {
            return Ok(Outcome::Nothing);
        };
        let args = match kernel {
            Kernel::Fill => vec![(o, Access::Write)],
            Kernel::Scale => vec![(a, Access::Read), (o, Access::Write)],
            Kernel::Add => vec![(a, Access::Read), (b, Access::Read), (o, Access::Write)],
            Kernel::Incr => vec![(o, Access::ReadWrite)],
        };
        self.launch(s, kernel, args, k % 4)
    }

    pub(super) fn launch(
        &mut self,
        s: usize,
        kernel: Kernel,
        args: Vec<((BufId, Buffer), Access)>,
        k: u8,
    ) -> Result<Outcome, String> {
        let margs: Vec<(BufId, Access)> = args.iter().map(|((b, _), a)| (*b, *a)).collect();
        let dargs: Vec<Arg<'_>> = args
            .iter()
            .map(|((_, h), a)| Arg {
                buffer: h,
                access: *a,
            })
            .collect();
        let phase = self.model.streams[s].phase;
        let recording = phase == Phase::Capture;
        let any_recording = self.model.any_recording();
        let invalid = self.model.streams[s].invalidated;
        let kid = self.kernels[kernel as usize];
        let r = self
            .device
            .launch(self.sid(s), kid, kernels::DIMS, &dargs, &[u64::from(k)]);
        drop(dargs);
        let fired = self.new_faults();
        if let Some(f) = self.model.blocking(&margs) {
            return match r {
                Ok(Launched::Skipped(g)) if g == f => {
                    self.model.claim_outputs(&margs, f);
                    self.doom(s, Doom::Failure(f));
                    Ok(Outcome::Skipped)
                }
                other => Err(format!(
                    "an input is claimed by {f}: the launch must be skipped with it; got {other:?}"
                )),
            };
        }
        let note_info = |d: &mut Self| d.model.streams[s].info_used(k);
        match r {
            Ok(Launched::Skipped(g)) => Err(format!(
                "skipped over {g}, but the model says no operand is claimed"
            )),
            Ok(Launched::Queued) => {
                if fired.launch || fired.copy {
                    return Err(
                        "a platform call of the launch failed, yet it reported queued".into(),
                    );
                }
                if recording {
                    self.model.streams[s].window.push(MOp::Launch {
                        kernel,
                        args: margs,
                        k,
                    });
                } else {
                    self.model.run_launch(kernel, &margs, k);
                }
                note_info(self);
                Ok(Outcome::Done)
            }
            Err(Error::Failed {
                op: "launch",
                failure,
                kind,
                ..
            }) => {
                let now_invalid = self.model.streams[s].invalidated || invalid;
                let cause = fired.launch
                    || (recording && kind == ErrorKind::CaptureInvalidated && now_invalid);
                if !cause {
                    return Err(format!(
                        "launch failed ({kind:?}) without an injected fault"
                    ));
                }
                self.model.claim_outputs(&margs, failure);
                self.doom(s, Doom::Failure(failure));
                note_info(self);
                Ok(Outcome::Failed)
            }
            Err(e) => {
                let alloc_in_capture =
                    matches!(e, Error::Memory(MemoryError::AllocationInCapture { .. }));
                let ok = match &e {
                    Error::Platform {
                        op: "copy_to_device",
                        ..
                    } if fired.copy => true,
                    Error::Memory(MemoryError::OutOfMemory { .. }) if fired.alloc => true,
                    _ if alloc_in_capture => recording,
                    _ if storage_refused_in_capture(&e) => any_recording,
                    // The info words' reservation (device or staging) on
                    // odd properties or an adversarial layout.
                    Error::Memory(_) if !self.strict => true,
                    _ => recording && capture_kind(&e),
                };
                if !ok {
                    return Err(format!("a legal launch failed: {e}"));
                }
                self.claim_refused(&margs)?;
                if alloc_in_capture {
                    self.doom(s, Doom::Allocation);
                } else {
                    self.doom(s, Doom::Platform);
                    if recording {
                        self.model.streams[s].missing_work = true;
                    }
                }
                if matches!(
                    e,
                    Error::Platform {
                        op: "wait" | "record",
                        ..
                    }
                ) {
                    note_info(self);
                }
                Ok(Outcome::Permitted)
            }
        }
    }
}
