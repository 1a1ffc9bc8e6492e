//! The driver: applies a [`Program`] to a [`Device`] on the mock and, after
//! every step, asks the oracle (the model's expectations for that step, then
//! the invariants of [`check`](super::check)).
//!
//! One file per concept: setup and dispatch here, buffers and transfers in
//! `data.rs`, launches in `launch.rs`, capture and replay in `capture.rs`,
//! another device's handles in `foreign.rs`.

mod capture;
mod data;
mod foreign;
mod launch;

use std::boxed::Box;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::string::{String, ToString};
use std::vec::Vec;

use streamcore::device::{Buffer, Device, DeviceConfig, Graph, KernelId};
use streamcore::error::Error;
use streamcore::memory::{MemoryError, OomCause};
use streamcore::platform::{Access, ErrorKind, PlatformError, StorageCosts};
use streamcore::stream::{Phase, StreamId};

use super::kernels;
use super::model::{BufId, Doom, GraphIx, Model};
use super::program::{FaultSite, Kernel, Op, Program};
use super::setup::Setup;
use crate::fault::{Effect, FaultError, FaultInjector, FaultPlan, Rule, Site, Trigger};
use crate::schedule::Scheduler;
use crate::{MockConfig, MockError, MockPlatform};

pub use foreign::ForeignDevice;

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
            _ => write!(f, "setup or teardown: {}", self.message),
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
    /// allocation inside a capture, an injected out-of-memory, a
    /// reservation an adversarial layout cannot serve).
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

/// Feature ids for facts about the setup (beside the `(op, outcome)`
/// pairs): `SETUP_FACT` alone, the device refused the config; `| 1`, the
/// layout was refused; `| 2`, a stream could not get even 4 bytes; `| 3`,
/// the run is not strict (adversarial properties or layout); `| 4`, the
/// device has more streams than the ops use; `| 5`, the device storages
/// offer resizable pages; `| 6`, a stream's trimming settled on a round
/// trip (a chunk trimmed by choice came back twice); `| 7`, the device
/// storages declare the driver's call costs (the churn budget binds);
/// `| 8`, a stream gave back idle chunks past its churn budget (the idle
/// cap).
pub const SETUP_FACT: u32 = 0xfe << 8;

/// One harness run over one device.
pub struct Driver {
    pub(crate) device: Device<FuzzPlatform>,
    pub(crate) mock: MockPlatform,
    faults: FuzzPlatform,
    kernels: Vec<KernelId>,
    pub(crate) model: Model,
    /// Buffer handles the harness holds, oldest first.
    pub(crate) bufs: Vec<(BufId, Buffer)>,
    /// Graph handles the harness holds, oldest first.
    pub(crate) graphs: Vec<(GraphIx, Graph)>,
    /// Handles of buffers the program freed that an open window or a live
    /// graph still holds: dropped when the model forgets the buffer (the
    /// device lets go of it then too), kept to ask the device about them.
    pub(crate) shadow: BTreeMap<BufId, Buffer>,
    /// Streams the ops use.
    pub(crate) streams: usize,
    /// The stream id of each (active index → id).
    pub(crate) ids: Vec<StreamId>,
    /// Sane properties and layouts only: every reservation must succeed
    /// unless a fault was injected.
    pub(crate) strict: bool,
    pub(crate) setup: Setup,
    seed: u8,
    foreign: Option<ForeignDevice>,
    faults_seen: usize,
    pub(crate) features: BTreeSet<u32>,
    /// What the last op came to.
    pub(crate) last_outcome: Option<Outcome>,
    last_kind: Option<u32>,
}

/// Injected faults that fired during one op.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Fired {
    pub(crate) launch: bool,
    pub(crate) copy: bool,
    pub(crate) graph: bool,
    pub(crate) alloc: bool,
    pub(crate) end: bool,
    /// A fault inside a read: synchronize, record, copy back or wait.
    pub(crate) read: bool,
    /// A fault that leaves a read nothing to return: its host
    /// synchronization or its copy back failed.
    pub(crate) read_lost: bool,
}

impl Fired {
    /// Whether any fault fired.
    pub(crate) fn any(self) -> bool {
        self.launch || self.copy || self.graph || self.alloc || self.end || self.read
    }
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

/// A storage allocation refused because a capture is open (drivers in
/// global capture mode refuse allocations): unavoidable for work that needs
/// new memory on any stream while another stream records. The core refuses
/// it itself, before the storage is asked (`CaptureElsewhere`); a storage
/// that refused anyway is still accepted here.
pub(crate) fn storage_refused_in_capture(e: &DevError) -> bool {
    matches!(
        e,
        Error::Memory(streamcore::memory::MemoryError::CaptureElsewhere { .. })
    ) || (matches!(e, Error::Memory(_)) && platform_kind(e) == Some(ErrorKind::CaptureUnsupported))
}

pub(crate) fn capture_kind(e: &DevError) -> bool {
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
    /// the ops use is created up front, in order, so mock stream `i` is the
    /// `i`-th of them.
    ///
    /// `Ok(None)`: the device refused the config with a typed error, as the
    /// oracle permits (a stream count past the bound, odd properties or an
    /// adversarial layout); the run is over.
    pub fn new(
        program: &Program,
        scheduler: Option<Box<dyn Scheduler>>,
    ) -> Result<Option<Self>, Violation> {
        let c = program.config;
        let setup = Setup::of(&c);
        let mut features = BTreeSet::new();
        // Small pages: the mock zero-fills a page on its first write, and
        // every run starts from nothing.
        let mut mock_config = MockConfig::default()
            .total_memory(setup.mock_memory)
            .max_page_size(1 << 20)
            .seed(u64::from(c.seed))
            .report_uninitialized(false);
        if let Some(s) = scheduler {
            mock_config = mock_config.scheduler(s);
        }
        if let Some(g) = setup.virtual_memory {
            mock_config = mock_config.virtual_memory(g);
            features.insert(SETUP_FACT | 5);
        }
        if setup.driver_costs {
            features.insert(SETUP_FACT | 7);
        } else {
            mock_config = mock_config.storage_costs(StorageCosts::UNKNOWN);
        }
        let mock = MockPlatform::with_config(mock_config).map_err(|e| teardown(e.to_string()))?;
        kernels::register(&mock);
        let faults = FaultInjector::new(mock.clone(), FaultPlan::new());
        faults.report_properties(Some(setup.properties));
        let mut config = DeviceConfig::with_streams(setup.declared);
        // A layout `MemoryLayout::new` refuses (a typed error) leaves the
        // run on the harness layout of its seed.
        let (layout, sane_layout) = match setup.layout() {
            Ok(l) => (l, setup.sane_layout()),
            Err(e) => {
                let _ = e.to_string();
                features.insert(SETUP_FACT | 1);
                (Some(super::setup::harness_layout(c.seed)), true)
            }
        };
        // A layout whose pages exceed the device is refused by the device.
        let fits = layout
            .as_ref()
            .is_none_or(|l| l.fits(setup.properties.total_memory).is_ok());
        if let Some(l) = layout {
            config = config.layout(l);
        }
        if let Some(f) = setup.flush {
            config = config.flush_policy(f);
        }
        let strict = setup.sane_properties && sane_layout;
        let device = match Device::new(faults.clone(), config) {
            Ok(d) => {
                if !setup.valid_streams() {
                    return Err(teardown(format!(
                        "Device::new accepted {} streams (the bound is {})",
                        setup.declared,
                        super::setup::STREAM_BOUND
                    )));
                }
                d
            }
            Err(e) => {
                if setup.valid_streams() && strict && fits {
                    return Err(teardown(format!(
                        "Device::new refused a sane config ({} streams): {e}",
                        setup.declared
                    )));
                }
                // A typed refusal (its Display must not panic either).
                let _ = e.to_string();
                return Ok(None);
            }
        };
        let mut ks = Vec::new();
        for k in Kernel::ALL {
            ks.push(
                device
                    .load_kernel(&kernels::source(k))
                    .map_err(|e| teardown(e.to_string()))?,
            );
        }
        let streams = setup.ids.len();
        // Create every stream now, in order, so mock stream `i` is the
        // `i`-th stream the ops use.
        for s in 0..streams {
            let id = setup.ids[s];
            match device.alloc(id, 4) {
                Ok(b) => drop(b),
                Err(e) if !strict => {
                    let _ = e.to_string();
                    features.insert(SETUP_FACT | 2);
                    // No page for even 4 bytes: create the stream through a
                    // warm-up window that is dropped at once.
                    device
                        .prepare(id)
                        .and_then(|()| device.abort_capture(id))
                        .map_err(|e| teardown(format!("creating {id}: {e}")))?;
                }
                Err(e) => return Err(teardown(format!("creating {id}: {e}"))),
            }
        }
        device.sync_all().map_err(|e| teardown(e.to_string()))?;
        if !strict {
            features.insert(SETUP_FACT | 3);
        }
        if setup.declared as usize > streams {
            features.insert(SETUP_FACT | 4);
        }
        Ok(Some(Self {
            device,
            mock,
            faults,
            kernels: ks,
            model: Model::new(streams),
            bufs: Vec::new(),
            graphs: Vec::new(),
            shadow: BTreeMap::new(),
            streams,
            ids: setup.ids.clone(),
            strict,
            setup,
            seed: c.seed,
            foreign: None,
            faults_seen: 0,
            features,
            last_outcome: None,
            last_kind: None,
        }))
    }

    /// The device under test.
    pub fn device(&self) -> &Device<FuzzPlatform> {
        &self.device
    }

    /// The mock under the device.
    pub fn mock(&self) -> &MockPlatform {
        &self.mock
    }

    /// The stream id of the `s`-th stream the ops use.
    pub(crate) fn sid(&self, s: usize) -> StreamId {
        self.ids[s]
    }

    /// Applies every op of `program`, checking after each, then tears down
    /// and checks nothing is left.
    pub fn run(mut self, program: &Program) -> Result<RunReport, Violation> {
        for (i, op) in program.ops.iter().enumerate() {
            self.step(i, *op)?;
        }
        let steps = program.ops.len();
        let reports: Vec<_> = self
            .ids
            .iter()
            .filter_map(|&id| self.device.memory_report(id))
            .collect();
        if reports.iter().any(|r| r.trimming.round_trip_settles > 0) {
            self.features.insert(SETUP_FACT | 6);
        }
        if reports.iter().any(|r| r.trimming.capped_decommits > 0) {
            self.features.insert(SETUP_FACT | 8);
        }
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

    pub(crate) fn new_faults(&mut self) -> Fired {
        let all = self.faults.injected();
        let mut f = Fired::default();
        for x in &all[self.faults_seen.min(all.len())..] {
            match x.site {
                Site::Launch => f.launch = true,
                Site::CopyToDevice => f.copy = true,
                Site::LaunchGraph => f.graph = true,
                Site::DeviceAlloc => f.alloc = true,
                Site::EndCapture => f.end = true,
                Site::Synchronize | Site::CopyToHost => {
                    f.read = true;
                    f.read_lost = true;
                }
                Site::Record | Site::Wait => f.read = true,
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

    /// Work refused before it was queued (its staging, its info words, its
    /// wait) claims what it would have written: one new failure over every
    /// output in `outputs`, none of the model's claims before. Books it in
    /// the model and returns it.
    pub(crate) fn claim_refused(
        &mut self,
        outputs: &[(BufId, Access)],
    ) -> Result<streamcore::failure::FailureId, String> {
        let mut claim = None;
        for (b, access) in outputs {
            if !access.writes() || self.model.buf(*b).unplaced {
                continue;
            }
            let h = self.handle_of(*b).ok_or("no handle of a live buffer")?;
            let Some(f) = self.device.failure_of(h) else {
                return Err(format!(
                    "work refused before it was queued left its output {b:?} unclaimed: a read would return bytes it never replaced"
                ));
            };
            if claim.is_some_and(|c| c != f) {
                return Err("one refusal claims its outputs with two failures".into());
            }
            claim = Some(f);
        }
        let f = claim.ok_or("a refused work item with no output")?;
        if self.model.live_bufs().any(|(_, m)| m.claim == Some(f)) {
            return Err(format!(
                "a refusal's outputs are claimed by {f}, an earlier failure: the refusal needs one of its own"
            ));
        }
        self.model.claim_outputs(outputs, f);
        Ok(f)
    }

    pub(crate) fn doom(&mut self, s: usize, d: Doom) {
        let st = &mut self.model.streams[s];
        if st.phase != Phase::NoCapture && st.doom.is_none() {
            st.doom = Some(d);
        }
    }

    /// Forgets every buffer the device no longer holds, and drops the
    /// shadow handles of those.
    pub(crate) fn collect(&mut self) {
        self.model.collect();
        let model = &self.model;
        self.shadow.retain(|b, _| model.bufs[*b].is_some());
    }

    /// A handle of model buffer `b`: the program's, or a shadow.
    pub(crate) fn handle_of(&self, b: BufId) -> Option<&Buffer> {
        self.bufs
            .iter()
            .find(|(x, _)| *x == b)
            .map(|(_, h)| h)
            .or_else(|| self.shadow.get(&b))
    }

    pub(crate) fn pick_buf(&self, i: u8) -> Option<(BufId, Buffer)> {
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
                self.model.buf_mut(b).handle = false;
                self.shadow.insert(b, h);
                self.collect();
                Ok(Outcome::Done)
            }
            Op::Write { stream, buf, fill } => self.write(usize::from(stream) % n, buf, fill),
            Op::Read { stream, buf } => self.read(usize::from(stream) % n, buf, None),
            Op::ReadFault { stream, buf, site } => {
                self.read(usize::from(stream) % n, buf, Some(site))
            }
            Op::Launch {
                stream,
                kernel,
                a,
                b,
                out,
                k,
            } => self.launch_op(usize::from(stream) % n, kernel, a, b, out, k),
            Op::CrossUse { stream, buf, k } => {
                let Some(x) = self.pick_buf(buf) else {
                    return Ok(Outcome::Nothing);
                };
                let owner = self.model.buf(x.0).owner;
                let s = (owner + 1 + usize::from(stream)) % n;
                self.launch(
                    s,
                    Kernel::Incr,
                    vec![(x, streamcore::platform::Access::ReadWrite)],
                    k % 4,
                )
            }
            Op::Sync { stream } => {
                let r = self.device.sync(self.sid(usize::from(stream) % n));
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
                self.collect();
                Ok(Outcome::Done)
            }
            Op::InstallPools { preset } => self.install(preset),
            Op::Fault { site } => {
                let (site, kind) = match site {
                    FaultSite::Launch => (Site::Launch, ErrorKind::Kernel),
                    FaultSite::CopyToDevice => (Site::CopyToDevice, ErrorKind::Other),
                    FaultSite::LaunchGraph => (Site::LaunchGraph, ErrorKind::Other),
                    FaultSite::DeviceAlloc => (Site::DeviceAlloc, ErrorKind::OutOfMemory),
                    FaultSite::EndCapture => (Site::EndCapture, ErrorKind::Other),
                };
                self.faults.add_rule(Rule {
                    site,
                    trigger: Trigger::Nth(1),
                    effect: Effect::Fail(kind),
                });
                Ok(Outcome::Done)
            }
            Op::Foreign { what, stream, buf } => {
                self.foreign_op(what, usize::from(stream) % n, buf)
            }
        };
        self.sync_invalidations();
        // Ops that read the faults they fired did so above; `abort`
        // swallows a failing `end_capture` by design; no other op makes a
        // call an armed fault can strike.
        let stray = self.new_faults();
        match op {
            Op::Abort { .. } if !(stray.launch || stray.copy || stray.graph || stray.alloc) => {}
            _ if stray.any() => {
                return Err(format!(
                    "an armed fault fired during an op that makes no such call: {stray:?}"
                ));
            }
            _ => {}
        }
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
}

pub(crate) fn teardown(message: String) -> Violation {
    Violation {
        step: None,
        op: None,
        message,
    }
}
