//! Handles of another device: a second device on its own mock, made on the
//! first `Op::Foreign`, whose kernel ids, buffers and graph are handed to
//! the device under test. Each use must be refused with a typed error and
//! change nothing (a kernel id is not a bare index, a buffer id of another
//! device names none of this one's buffers or failures).

use std::string::{String, ToString};
use std::vec::Vec;

use streamcore::device::{Arg, Buffer, Device, DeviceConfig, Graph, KernelId, Launched};
use streamcore::error::Error;
use streamcore::platform::Access;
use streamcore::stream::StreamId;

use super::{DevError, Driver, FuzzPlatform, Outcome};
use crate::fault::{FaultInjector, FaultPlan};
use crate::fuzzing::kernels;
use crate::fuzzing::program::{Foreign, Kernel};
use crate::{MockConfig, MockPlatform};

/// Buffers the other device holds: enough that its buffer ids cover every
/// id the device under test hands out in a run.
const FOREIGN_BUFFERS: usize = 24;

/// The other device and the handles it issued.
pub struct ForeignDevice {
    device: Device<FuzzPlatform>,
    mock: MockPlatform,
    /// Its kernels, loaded in the reverse order (the same index names
    /// another kernel there).
    kernels: Vec<KernelId>,
    /// Healthy buffers, written.
    bufs: Vec<Buffer>,
    /// A buffer a failed launch claims.
    claimed: Buffer,
    /// A sealed graph.
    graph: Graph,
}

fn setup_err(e: DevError) -> String {
    format!("setting up the other device: {e}")
}

impl ForeignDevice {
    fn new() -> Result<Self, String> {
        let mock = MockPlatform::with_config(
            MockConfig::default()
                .total_memory(1 << 30)
                .max_page_size(1 << 20)
                .eager()
                .report_uninitialized(false),
        )
        .map_err(|e| e.to_string())?;
        kernels::register(&mock);
        let faults = FaultInjector::new(mock.clone(), FaultPlan::new());
        let device =
            Device::new(faults.clone(), DeviceConfig::with_streams(2)).map_err(setup_err)?;
        let mut ks = Vec::new();
        for k in Kernel::ALL.iter().rev() {
            ks.push(
                device
                    .load_kernel(&kernels::source(*k))
                    .map_err(setup_err)?,
            );
        }
        let s = StreamId(0);
        let mut bufs = Vec::new();
        for i in 0..FOREIGN_BUFFERS {
            let b = device.alloc(s, 64).map_err(setup_err)?;
            device.write(s, &b, &[i as u8; 64]).map_err(setup_err)?;
            bufs.push(b);
        }
        // A claimed buffer: a launch that fails on the platform.
        let claimed = device.alloc(s, 64).map_err(setup_err)?;
        faults.add_rule(crate::fault::Rule {
            site: crate::fault::Site::Launch,
            trigger: crate::fault::Trigger::Nth(1),
            effect: crate::fault::Effect::Fail(streamcore::platform::ErrorKind::Kernel),
        });
        let fill = ks[Kernel::ALL.len() - 1 - Kernel::Fill as usize];
        let arg = |b| Arg {
            buffer: b,
            access: Access::Write,
        };
        match device.launch(s, fill, kernels::DIMS, &[arg(&claimed)], &[1]) {
            Err(Error::Failed { .. }) => {}
            other => {
                return Err(format!(
                    "the other device's failing launch answered {other:?}"
                ));
            }
        }
        device.prepare(s).map_err(setup_err)?;
        device.begin_capture(s).map_err(setup_err)?;
        let _ = device
            .launch(s, fill, kernels::DIMS, &[arg(&bufs[0])], &[2])
            .map_err(setup_err)?;
        let graph = device.end_capture(s).map_err(setup_err)?;
        device.sync_all().map_err(setup_err)?;
        Ok(Self {
            device,
            mock,
            kernels: ks,
            bufs,
            claimed,
            graph,
        })
    }
}

/// The answer to a foreign handle must be a refusal: an error that is not
/// a failure of work, a taint report or a skip.
fn refused<T: core::fmt::Debug>(what: &str, r: Result<T, DevError>) -> Result<(), String> {
    match r {
        Err(e @ (Error::Failed { .. } | Error::Tainted(_))) => Err(format!(
            "{what}: the device treated another device's handle as its own: {e}"
        )),
        Err(e) => {
            let _ = e.to_string();
            Ok(())
        }
        Ok(v) => Err(format!(
            "{what}: another device's handle was accepted: {v:?}"
        )),
    }
}

impl Driver {
    pub(super) fn foreign_op(
        &mut self,
        what: Foreign,
        s: usize,
        buf: u8,
    ) -> Result<Outcome, String> {
        if self.foreign.is_none() {
            self.foreign = Some(ForeignDevice::new()?);
        }
        let sid = self.sid(s);
        let own = self.pick_buf(buf);
        let f = self.foreign.as_ref().expect("made above");
        let theirs = f.bufs[usize::from(buf) % f.bufs.len()].clone();
        match what {
            Foreign::Kernel => {
                let Some((_, h)) = own else {
                    return Ok(Outcome::Nothing);
                };
                // Every index the device under test has is an index there.
                let k = f.kernels[usize::from(buf) % f.kernels.len()];
                let arg = [Arg {
                    buffer: &h,
                    access: Access::ReadWrite,
                }];
                refused(
                    "a launch of another device's kernel id",
                    self.device.launch(sid, k, kernels::DIMS, &arg, &[1]),
                )?;
            }
            Foreign::LaunchBuffer => {
                let incr = self.kernels[Kernel::Incr as usize];
                let arg = [Arg {
                    buffer: &theirs,
                    access: Access::ReadWrite,
                }];
                refused(
                    "a launch over another device's buffer",
                    self.device.launch(sid, incr, kernels::DIMS, &arg, &[1]),
                )?;
                if let Some((_, h)) = own {
                    let scale = self.kernels[Kernel::Scale as usize];
                    let args = [
                        Arg {
                            buffer: &theirs,
                            access: Access::Read,
                        },
                        Arg {
                            buffer: &h,
                            access: Access::Write,
                        },
                    ];
                    refused(
                        "a launch reading another device's buffer",
                        self.device.launch(sid, scale, kernels::DIMS, &args, &[1]),
                    )?;
                }
            }
            Foreign::Write => refused(
                "a write into another device's buffer",
                self.device.write(sid, &theirs, &[7; 64]),
            )?,
            Foreign::Read => refused(
                "a read of another device's buffer",
                self.device.read(sid, &theirs),
            )?,
            Foreign::Replay => refused(
                "a replay of another device's graph",
                self.device.replay(&f.graph).map(|l: Launched| l),
            )?,
            Foreign::Query => {
                for b in f.bufs.iter().chain([&f.claimed]) {
                    if let Some(x) = self.device.failure_of(b) {
                        return Err(format!(
                            "failure_of(another device's buffer {:?}) named {x}",
                            b.id()
                        ));
                    }
                    if let Some(r) = self.device.range_of(b) {
                        return Err(format!(
                            "range_of(another device's buffer {:?}) gave {r:?}",
                            b.id()
                        ));
                    }
                }
                if f.device.failure_of(&f.claimed).is_none() {
                    return Err("the other device lost its own claim".into());
                }
                // And the other way round: this device's buffers (claimed
                // or not) asked of the other device.
                for (_, h) in &self.bufs {
                    if let Some(x) = f.device.failure_of(h) {
                        return Err(format!(
                            "the other device's failure_of(this device's buffer {:?}) named {x}",
                            h.id()
                        ));
                    }
                }
                if let Some(p) = self.device.graph_info_pins(&f.graph) {
                    return Err(format!("graph_info_pins(another device's graph) gave {p}"));
                }
            }
        }
        let h = f.mock.hazards();
        if !h.is_empty() {
            return Err(format!("the other device's mock reported hazards: {h:?}"));
        }
        let fired = self.new_faults();
        if fired.any() {
            return Err(format!(
                "a call refused for another device's handle reached the platform (an armed fault fired: {fired:?})"
            ));
        }
        Ok(Outcome::Refused)
    }
}
