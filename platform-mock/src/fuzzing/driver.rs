//! The driver: applies a [`Program`] to a [`Device`] on the mock and, after
//! every step, asks the oracle (the model's expectations for that step, then
//! the invariants of [`check`](super::check)).

use std::boxed::Box;
use std::collections::BTreeSet;
use std::fmt;
use std::string::{String, ToString};
use std::vec::Vec;

use streamcore::device::{Arg, Buffer, Device, DeviceConfig, Graph, KernelId, Launched};
use streamcore::drop_queue::FlushPolicy;
use streamcore::error::Error;
use streamcore::failure::FailureId;
use streamcore::memory::{MemoryError, MemoryLayout, MemoryPolicy, OomCause, PoolSpec};
use streamcore::platform::{Access, ErrorKind, PlatformError};
use streamcore::stream::{CaptureError, DoomReason, Phase, StreamId};

use super::kernels;
use super::model::{BufId, Doom, GraphIx, MGraph, MOp, Model};
use super::program::{FaultSite, Kernel, MAX_BUFFERS, MAX_GRAPHS, Op, Program, SIZES};
use crate::fault::{Effect, FaultError, FaultInjector, FaultPlan, Rule, Site, Trigger};
use crate::schedule::Scheduler;
use crate::{MockConfig, MockError, MockPlatform};

/// The platform the harness drives: the mock behind the fault injector.
pub type FuzzPlatform = FaultInjector<MockPlatform>;
/// The device error of the harness.
pub type DevError = Error<FaultError<MockError>>;

/// The oracle disagreed with the device: what, where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Index of the op in the program (`None`: setup or teardown).
    pub step: Option<usize>,
    /// The op.
    pub op: Option<Op>,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.step, &self.op) {
            (Some(i), Some(op)) => write!(f, "step {i} ({op:?}): {}", self.message),
            _ => write!(f, "teardown: {}", self.message),
        }
    }
}

impl std::error::Error for Violation {}

/// What one op came to, for coverage signatures.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// Nothing to do (no buffer, no graph, a cap reached, a fault armed).
    Nothing,
    /// Accepted.
    Done,
    /// A launch or replay skipped over a claim.
    Skipped,
    /// Work failed on the platform (a new failure).
    Failed,
    /// A transition or call the model says must be refused, refused.
    Refused,
    /// A read refused with a taint report.
    Tainted,
    /// A platform-side error the model permits (capture invalidation,
    /// allocation inside a capture, an injected out-of-memory).
    Permitted,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Ops applied.
    pub steps: usize,
    /// Coverage features: `(op kind, outcome)` pairs and state facts seen.
    pub features: BTreeSet<u32>,
    /// Choice points the mock's scheduler answered.
    pub choices: usize,
}

/// One harness run over one device.
pub struct Driver {
    pub(crate) device: Device<FuzzPlatform>,
    pub(crate) mock: MockPlatform,
    faults: FuzzPlatform,
    kernels: [KernelId; 4],
    pub(crate) model: Model,
    /// Buffer handles the harness holds, oldest first.
    pub(crate) bufs: Vec<(BufId, Buffer)>,
    /// Graph handles the harness holds, oldest first.
    pub(crate) graphs: Vec<(GraphIx, Graph)>,
    pub(crate) streams: usize,
    faults_seen: usize,
    pub(crate) features: BTreeSet<u32>,
    /// What the last op came to.
    pub(crate) last_outcome: Option<Outcome>,
    last_kind: Option<u32>,
}

/// Injected faults that fired during one op.
#[derive(Copy, Clone, Debug, Default)]
struct Fired {
    launch: bool,
    copy: bool,
    graph: bool,
    alloc: bool,
}

fn sid(s: usize) -> StreamId {
    StreamId(s as u16)
}

/// The platform classification inside a device error, if it carries one.
pub fn platform_kind(e: &DevError) -> Option<ErrorKind> {
    match e {
        Error::Platform { source, .. } => Some(source.kind()),
        Error::Memory(MemoryError::Storage { source, .. }) => Some(source.kind()),
        Error::Memory(MemoryError::OutOfMemory {
            cause: OomCause::Storage(source),
            ..
        }) => Some(source.kind()),
        Error::Failed { kind, .. } => Some(*kind),
        _ => None,
    }
}

/// A storage call refused because a capture is open (drivers in global
/// capture mode refuse allocations): unavoidable for work that needs new
/// memory on any stream while another stream records.
fn storage_refused_in_capture(e: &DevError) -> bool {
    matches!(e, Error::Memory(_)) && platform_kind(e) == Some(ErrorKind::CaptureUnsupported)
}

fn capture_kind(e: &DevError) -> bool {
    matches!(
        platform_kind(e),
        Some(ErrorKind::CaptureUnsupported | ErrorKind::CaptureInvalidated)
    )
}

/// The bytes a `Write` with `fill` puts in a buffer of `len` bytes.
pub fn pattern(fill: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| fill.wrapping_add((i as u8).wrapping_mul(31)))
        .collect()
}

impl Driver {
    /// A device for `program`'s config on a fresh mock, scheduled by
    /// `scheduler` (the config's seeded scheduler when `None`). Every stream
    /// is created up front, in order.
    pub fn new(
        program: &Program,
        scheduler: Option<Box<dyn Scheduler>>,
    ) -> Result<Self, Violation> {
        let c = program.config;
        let streams = usize::from(c.streams.clamp(0, 3)) + 1;
        // Small pages: the mock zero-fills a page on its first write, and
        // every run starts from nothing.
        let mut mock_config = MockConfig::default()
            .total_memory(1 << 30)
            .max_page_size(1 << 20)
            .seed(u64::from(c.seed))
            .report_uninitialized(false);
        if let Some(s) = scheduler {
            mock_config = mock_config.scheduler(s);
        }
        let mock = MockPlatform::with_config(mock_config).map_err(|e| teardown(e.to_string()))?;
        kernels::register(&mock);
        let faults = FaultInjector::new(mock.clone(), FaultPlan::new());
        let mut config = DeviceConfig::with_streams(streams as u16).layout(layout(c.seed));
        if c.flush != 0 {
            config = config.flush_policy(FlushPolicy {
                max_items: usize::from(c.flush % 4) + 1,
                max_bytes: 1 << 12,
            });
        }
        let device = Device::new(faults.clone(), config).map_err(|e| teardown(e.to_string()))?;
        let mut ks = Vec::with_capacity(4);
        for k in [Kernel::Fill, Kernel::Scale, Kernel::Add, Kernel::Incr] {
            ks.push(
                device
                    .load_kernel(&kernels::source(k))
                    .map_err(|e| teardown(e.to_string()))?,
            );
        }
        let ks: [KernelId; 4] = [ks[0], ks[1], ks[2], ks[3]];
        // Create every stream now, in id order, so mock stream `i` is core
        // stream `i`.
        for s in 0..streams {
            let b = device
                .alloc(sid(s), 4)
                .map_err(|e| teardown(e.to_string()))?;
            drop(b);
        }
        device.sync_all().map_err(|e| teardown(e.to_string()))?;
        Ok(Self {
            device,
            mock,
            faults,
            kernels: ks,
            model: Model::new(streams),
            bufs: Vec::new(),
            graphs: Vec::new(),
            streams,
            faults_seen: 0,
            features: BTreeSet::new(),
            last_outcome: None,
            last_kind: None,
        })
    }

    /// The device under test.
    pub fn device(&self) -> &Device<FuzzPlatform> {
        &self.device
    }

    /// The mock under the device.
    pub fn mock(&self) -> &MockPlatform {
        &self.mock
    }

    /// Applies every op of `program`, checking after each, then tears down
    /// and checks nothing is left.
    pub fn run(mut self, program: &Program) -> Result<RunReport, Violation> {
        for (i, op) in program.ops.iter().enumerate() {
            self.step(i, *op)?;
        }
        let steps = program.ops.len();
        self.finish()?;
        Ok(RunReport {
            steps,
            features: self.features,
            choices: self.mock.choice_trace().len(),
        })
    }

    /// What the last op came to (`None` before the first).
    pub fn last(&self) -> Option<Outcome> {
        self.last_outcome
    }

    /// Applies one op and checks the invariants.
    pub fn step(&mut self, i: usize, op: Op) -> Result<(), Violation> {
        let at = |message: String| Violation {
            step: Some(i),
            op: Some(op),
            message,
        };
        let outcome = self.apply(op).map_err(at)?;
        let prev = self.last_kind.replace(op.kind_index()).unwrap_or(31);
        self.last_outcome = Some(outcome);
        self.features.insert(op.kind_index() << 8 | outcome as u32);
        // Op pairs, for seed selection.
        self.features
            .insert(1 << 16 | (prev << 5 | op.kind_index()) << 8 | outcome as u32);
        self.check().map_err(at)
    }

    /// Tears down: aborts open windows, drops every handle, syncs, and
    /// checks that nothing is live.
    pub fn finish(&mut self) -> Result<(), Violation> {
        self.teardown().map_err(teardown)
    }

    fn new_faults(&mut self) -> Fired {
        let all = self.faults.injected();
        let mut f = Fired::default();
        for x in &all[self.faults_seen.min(all.len())..] {
            match x.site {
                Site::Launch => f.launch = true,
                Site::CopyToDevice => f.copy = true,
                Site::LaunchGraph => f.graph = true,
                Site::DeviceAlloc => f.alloc = true,
                _ => {}
            }
        }
        self.faults_seen = all.len();
        f
    }

    /// Copies the mock's capture invalidations into the model.
    fn sync_invalidations(&mut self) {
        let inv = self.mock.invalidated_captures();
        for (s, st) in self.model.streams.iter_mut().enumerate() {
            if inv.contains(&(s as u32)) {
                st.invalidated = true;
            }
        }
    }

    fn doom(&mut self, s: usize, d: Doom) {
        let st = &mut self.model.streams[s];
        if st.phase != Phase::NoCapture && st.doom.is_none() {
            st.doom = Some(d);
        }
    }

    fn pick_buf(&self, i: u8) -> Option<(BufId, Buffer)> {
        if self.bufs.is_empty() {
            return None;
        }
        let (b, h) = &self.bufs[usize::from(i) % self.bufs.len()];
        Some((*b, h.clone()))
    }

    fn apply(&mut self, op: Op) -> Result<Outcome, String> {
        let n = self.streams;
        let r = match op {
            Op::Alloc { stream, size } => self.alloc(usize::from(stream) % n, size, false),
            Op::Empty { stream, size } => self.alloc(usize::from(stream) % n, size, true),
            Op::Free { buf } => {
                if self.bufs.is_empty() {
                    return Ok(Outcome::Nothing);
                }
                let (b, h) = self.bufs.remove(usize::from(buf) % self.bufs.len());
                drop(h);
                self.model.buf_mut(b).handle = false;
                self.model.collect();
                Ok(Outcome::Done)
            }
            Op::Write { stream, buf, fill } => self.write(usize::from(stream) % n, buf, fill),
            Op::Read { stream, buf } => self.read(usize::from(stream) % n, buf),
            Op::Launch {
                stream,
                kernel,
                a,
                b,
                out,
                k,
            } => {
                let s = usize::from(stream) % n;
                let (Some(a), Some(b), Some(o)) =
                    (self.pick_buf(a), self.pick_buf(b), self.pick_buf(out))
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
            Op::CrossUse { stream, buf, k } => {
                let Some(x) = self.pick_buf(buf) else {
                    return Ok(Outcome::Nothing);
                };
                let owner = self.model.buf(x.0).owner;
                let s = (owner + 1 + usize::from(stream)) % n;
                self.launch(s, Kernel::Incr, vec![(x, Access::ReadWrite)], k % 4)
            }
            Op::Sync { stream } => {
                let r = self.device.sync(sid(usize::from(stream) % n));
                self.expect_sync(r)
            }
            Op::SyncAll => {
                let r = self.device.sync_all();
                let o = self.expect_sync(r)?;
                if o == Outcome::Done {
                    let c = self.device.census();
                    if c.deferred != 0 || c.cross_pins != 0 {
                        return Err(format!(
                            "after sync_all every fence has passed, yet the drop queues hold {} item(s) and {} cross-stream pin(s) remain",
                            c.deferred, c.cross_pins
                        ));
                    }
                }
                Ok(o)
            }
            Op::Poll => match self.device.poll() {
                Ok(_) => Ok(Outcome::Done),
                Err(e) => Err(format!("poll failed: {e}")),
            },
            Op::Cleanup => match self.device.cleanup() {
                Ok(()) => Ok(Outcome::Done),
                Err(e) => Err(format!("cleanup failed: {e}")),
            },
            Op::Prepare { stream } => self.prepare(usize::from(stream) % n),
            Op::Begin { stream } => self.begin(usize::from(stream) % n),
            Op::End { stream } => self.end(usize::from(stream) % n),
            Op::Abort { stream } => self.abort(usize::from(stream) % n),
            Op::Replay { graph } => self.replay(graph),
            Op::DropGraph { graph } => {
                if self.graphs.is_empty() {
                    return Ok(Outcome::Nothing);
                }
                let (g, h) = self.graphs.remove(usize::from(graph) % self.graphs.len());
                drop(h);
                self.model.graphs[g] = None;
                self.model.collect();
                Ok(Outcome::Done)
            }
            Op::InstallPools { preset } => self.install(preset),
            Op::Fault { site } => {
                let (site, kind) = match site {
                    FaultSite::Launch => (Site::Launch, ErrorKind::Kernel),
                    FaultSite::CopyToDevice => (Site::CopyToDevice, ErrorKind::Other),
                    FaultSite::LaunchGraph => (Site::LaunchGraph, ErrorKind::Other),
                    FaultSite::DeviceAlloc => (Site::DeviceAlloc, ErrorKind::OutOfMemory),
                };
                self.faults.add_rule(Rule {
                    site,
                    trigger: Trigger::Nth(1),
                    effect: Effect::Fail(kind),
                });
                Ok(Outcome::Done)
            }
        };
        self.sync_invalidations();
        r
    }

    fn expect_sync(&mut self, r: Result<(), DevError>) -> Result<Outcome, String> {
        let recording = self.model.any_recording();
        match r {
            Ok(()) if !recording => Ok(Outcome::Done),
            Err(Error::NotWhileCapturing { .. }) if recording => Ok(Outcome::Refused),
            other => Err(format!(
                "sync answered {other:?}; the model expects {}",
                if recording {
                    "a refusal (a capture is recording)"
                } else {
                    "success"
                }
            )),
        }
    }

    fn alloc(&mut self, s: usize, size: u8, empty: bool) -> Result<Outcome, String> {
        if self.bufs.len() >= MAX_BUFFERS {
            return Ok(Outcome::Nothing);
        }
        let bytes = SIZES[usize::from(size) % SIZES.len()];
        let recording = self.model.streams[s].phase == Phase::Capture;
        let any_recording = self.model.any_recording();
        let r = if empty {
            self.device.empty(sid(s), bytes as u64)
        } else {
            self.device.alloc(sid(s), bytes as u64)
        };
        let fired = self.new_faults();
        match r {
            Ok(buf) => {
                let id = self.model.add_buf(s, bytes);
                if empty && self.device.range_of(&buf).is_none() {
                    // Storage allocations fail while any capture is open
                    // (the driver's global capture mode).
                    if !(fired.alloc || recording || any_recording) {
                        return Err(
                            "empty() came back without memory, yet no allocation fault fired and no capture was open"
                                .into(),
                        );
                    }
                    let Some(f) = self.device.failure_of(&buf) else {
                        return Err("a buffer without memory carries no failure".into());
                    };
                    let m = self.model.buf_mut(id);
                    m.unplaced = true;
                    m.claim = Some(f);
                    if recording {
                        self.doom(s, Doom::Allocation);
                    }
                    self.doom(s, Doom::Failure(f));
                    self.bufs.push((id, buf));
                    return Ok(Outcome::Failed);
                }
                self.bufs.push((id, buf));
                Ok(Outcome::Done)
            }
            Err(e) => {
                let ok = match &e {
                    Error::Memory(MemoryError::AllocationInCapture { .. }) => recording,
                    Error::Memory(MemoryError::OutOfMemory { .. }) if fired.alloc => true,
                    _ => any_recording && storage_refused_in_capture(&e),
                };
                if !ok || empty {
                    return Err(format!("allocation of {bytes} bytes failed: {e}"));
                }
                if matches!(e, Error::Memory(MemoryError::AllocationInCapture { .. })) {
                    self.doom(s, Doom::Allocation);
                }
                Ok(Outcome::Permitted)
            }
        }
    }

    fn write(&mut self, s: usize, buf: u8, fill: u8) -> Result<Outcome, String> {
        let Some((b, h)) = self.pick_buf(buf) else {
            return Ok(Outcome::Nothing);
        };
        let data = pattern(fill, self.model.buf(b).data.len());
        let recording = self.model.streams[s].phase == Phase::Capture;
        let invalid = self.model.streams[s].invalidated;
        let any_recording = self.model.any_recording();
        let r = self.device.write(sid(s), &h, &data);
        let fired = self.new_faults();
        let m = self.model.buf(b);
        if m.unplaced {
            return match r {
                Err(Error::Tainted(rep)) if Some(rep.failure) == m.claim => Ok(Outcome::Tainted),
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
                    || (any_recording && storage_refused_in_capture(&e));
                if !ok {
                    return Err(format!("a legal write failed: {e}"));
                }
                self.doom(s, Doom::Platform);
                if recording {
                    self.model.streams[s].missing_work = true;
                }
                Ok(Outcome::Permitted)
            }
        }
    }

    fn read(&mut self, s: usize, buf: u8) -> Result<Outcome, String> {
        let Some((b, h)) = self.pick_buf(buf) else {
            return Ok(Outcome::Nothing);
        };
        let r = self.device.read(sid(s), &h);
        let m = self.model.buf(b);
        if self.model.any_recording() {
            return match r {
                Err(Error::NotWhileCapturing { .. }) => Ok(Outcome::Refused),
                other => Err(format!(
                    "a read while a capture records must be refused; got {other:?}"
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
                Ok(Outcome::Done)
            }
            (claim, other) => Err(format!(
                "read answered {:?}; the model's claim is {claim:?}",
                other.map(|b| b.len())
            )),
        }
    }

    fn launch(
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
            .launch(sid(s), kid, kernels::DIMS, &dargs, &[u64::from(k)]);
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
                    _ => recording && capture_kind(&e),
                };
                if !ok {
                    return Err(format!("a legal launch failed: {e}"));
                }
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

    fn prepare(&mut self, s: usize) -> Result<Outcome, String> {
        let phase = self.model.streams[s].phase;
        let r = self.device.prepare(sid(s));
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

    fn begin(&mut self, s: usize) -> Result<Outcome, String> {
        let phase = self.model.streams[s].phase;
        let r = self.device.begin_capture(sid(s));
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
        self.model.collect();
    }

    fn end(&mut self, s: usize) -> Result<Outcome, String> {
        let st = self.model.streams[s].clone();
        let r = self.device.end_capture(sid(s));
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
        let outcome = match (st.doom, st.invalidated, r) {
            (Some(d), _, Err(Error::Capture(CaptureError::Doomed(reason)))) => {
                let same = match (d, reason) {
                    (Doom::Failure(f), DoomReason::Failure(raw)) => f.get() == raw,
                    (Doom::Allocation, DoomReason::AllocationInCapture { .. }) => true,
                    (Doom::Platform, DoomReason::Platform { .. }) => true,
                    _ => false,
                };
                if !same {
                    return Err(format!(
                        "end_capture refused for {reason:?}; the window's first doom is {d:?}"
                    ));
                }
                Outcome::Refused
            }
            (None, true, Err(e)) if platform_kind(&e) == Some(ErrorKind::CaptureInvalidated) => {
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
                        (None, true, _) => "a refusal: the platform invalidated the capture".into(),
                        (None, false, true) => "a refusal: work asked for inside the window failed and the graph would miss it".into(),
                        (None, false, false) => "a sealed graph".into(),
                    }
                ));
            }
        };
        if outcome == Outcome::Refused {
            self.claim_refused_window(&st.window, st.doom)?;
        }
        self.close_window(s);
        Ok(outcome)
    }

    /// A refused window never ran what it recorded: the device claims every
    /// buffer its launches and writes would have written, with the failure
    /// that doomed it while that failure is live, otherwise with one new
    /// failure (learnt here from a buffer the harness holds).
    fn claim_refused_window(&mut self, window: &[MOp], doom: Option<Doom>) -> Result<(), String> {
        let mut outputs: Vec<BufId> = Vec::new();
        for op in window {
            match op {
                MOp::Launch { args, .. } => {
                    outputs.extend(args.iter().filter(|(_, a)| a.writes()).map(|(b, _)| *b))
                }
                MOp::Write { buf, .. } => outputs.push(*buf),
            }
        }
        outputs.sort_unstable();
        outputs.dedup();
        if outputs.is_empty() {
            return Ok(());
        }
        let live = |f: FailureId| self.model.live_bufs().any(|(_, m)| m.claim == Some(f));
        let expected = match doom {
            Some(Doom::Failure(f)) if live(f) => Some(f),
            _ => None,
        };
        let mut claim = expected;
        for &b in &outputs {
            let Some((_, h)) = self.bufs.iter().find(|(x, _)| *x == b) else {
                continue;
            };
            let got = self.device.failure_of(h);
            match (claim, got) {
                (_, None) => {
                    return Err(format!(
                        "buffer {b}, written by a refused window, is not claimed"
                    ));
                }
                (None, Some(g)) => claim = Some(g),
                (Some(c), Some(g)) if c != g => {
                    return Err(format!(
                        "buffer {b}, written by a refused window, is claimed by {g}; expected {c}"
                    ));
                }
                _ => {}
            }
        }
        let Some(claim) = claim else {
            return Err("no buffer the harness holds shows the failure of a refused window".into());
        };
        for b in outputs {
            if self.model.bufs[b].is_some() && !self.model.buf(b).unplaced {
                self.model.buf_mut(b).claim = Some(claim);
            }
        }
        Ok(())
    }

    fn abort(&mut self, s: usize) -> Result<Outcome, String> {
        let phase = self.model.streams[s].phase;
        let r = self.device.abort_capture(sid(s));
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

    fn replay(&mut self, graph: u8) -> Result<Outcome, String> {
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

    fn install(&mut self, preset: u8) -> Result<Outcome, String> {
        let layout = layout(preset);
        let open = self
            .model
            .streams
            .iter()
            .any(|s| s.phase != Phase::NoCapture);
        let placed = self.model.live_bufs().any(|(_, b)| !b.unplaced);
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
        match self.device.install_pools(layout) {
            Ok(()) if !open && !placed => Ok(Outcome::Done),
            Err(Error::Memory(MemoryError::InUse { bytes })) if bytes > 0 => Ok(Outcome::Refused),
            Err(Error::NotWhileCapturing { .. }) if open => Ok(Outcome::Refused),
            other => Err(format!(
                "install_pools answered {other:?} (capture window open: {open}, live buffers: {placed})"
            )),
        }
    }
}

/// The pool layouts a run starts with (`seed % 3`) and `InstallPools`
/// installs: small pages (the mock zero-fills a page on first write), a
/// balanced one, one of exclusive pages, and sliced pools with periodic
/// trimming whose largest size class goes to dedicated pages.
pub fn layout(index: u8) -> MemoryLayout {
    const KIB: u64 = 1 << 10;
    let (pools, policy) = match index % 3 {
        0 => (
            vec![
                PoolSpec::small(16 * KIB, KIB),
                PoolSpec::sliced(128 * KIB, 32 * KIB),
                PoolSpec::exclusive(1024 * KIB),
            ],
            MemoryPolicy::default(),
        ),
        1 => (
            vec![
                PoolSpec::small(16 * KIB, KIB),
                PoolSpec::exclusive(1024 * KIB),
            ],
            MemoryPolicy::default(),
        ),
        _ => (
            vec![
                PoolSpec::small(8 * KIB, 512),
                PoolSpec::sliced(64 * KIB, 16 * KIB),
                PoolSpec::sliced(512 * KIB, 256 * KIB),
            ],
            MemoryPolicy {
                release_idle_after: core::num::NonZeroU64::new(8),
                ..MemoryPolicy::default()
            },
        ),
    };
    // Valid by construction (growing slices, pages at least their slices).
    MemoryLayout::new(&pools, 256, policy).expect("the harness layouts are valid")
}

fn teardown(message: String) -> Violation {
    Violation {
        step: None,
        op: None,
        message,
    }
}
