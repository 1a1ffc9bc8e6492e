//! What to break, and when: sites, triggers, effects, plans.

use std::string::String;
use std::vec::Vec;

use streamcore::platform::ErrorKind;

/// A kind of call a fault can hit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Site {
    /// Every call below (the n-th call of any kind).
    Any,
    /// `Storage::alloc` of a device storage.
    DeviceAlloc,
    /// `Storage::alloc` of a pinned host storage.
    HostAlloc,
    /// `Storage::flush` (device or host).
    Flush,
    /// `HostStorage::write`.
    HostWrite,
    /// `HostStorage::read`.
    HostRead,
    /// `Platform::create_stream`.
    CreateStream,
    /// `Platform::device_storage` and `Platform::host_storage`.
    CreateStorage,
    /// `Platform::record`.
    Record,
    /// `Platform::wait`.
    Wait,
    /// `Platform::query`.
    Query,
    /// `Platform::synchronize`.
    Synchronize,
    /// `Platform::copy_to_device`.
    CopyToDevice,
    /// `Platform::copy_to_host`.
    CopyToHost,
    /// `Platform::copy_device`.
    CopyDevice,
    /// `Platform::load_kernel`.
    LoadKernel,
    /// Every `Platform::launch`.
    Launch,
    /// `Platform::launch` of the kernel with this name.
    Kernel(String),
    /// `Platform::begin_capture`.
    BeginCapture,
    /// `Platform::end_capture`.
    EndCapture,
    /// `Platform::launch_graph`.
    LaunchGraph,
    /// `Platform::destroy_graph`.
    DestroyGraph,
}

impl Site {
    /// Whether a rule for `self` applies to a call at `site` (launching
    /// `kernel`, for launches).
    pub(crate) fn matches(&self, site: &Site, kernel: Option<&str>) -> bool {
        match self {
            Site::Any => true,
            Site::Kernel(name) => kernel == Some(name.as_str()),
            s => s == site,
        }
    }
}

/// When a rule fires, counting only the calls its site matches (1-based).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// On the n-th matching call only.
    Nth(u64),
    /// On the n-th matching call and every later one.
    From(u64),
    /// On every matching call.
    Always,
    /// On each matching call with this probability (per million), drawn
    /// from the plan's seeded generator.
    Chance {
        /// Probability in millionths.
        per_million: u32,
    },
}

/// What a firing rule does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// The call fails with this kind and does nothing (it is not forwarded
    /// to the wrapped platform).
    Fail(ErrorKind),
    /// The device is lost: this call and every later one fails with
    /// [`ErrorKind::DeviceLost`].
    LoseDevice,
}

/// One rule: where, when, what.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The calls it watches.
    pub site: Site,
    /// When it fires.
    pub trigger: Trigger,
    /// What it does.
    pub effect: Effect,
}

/// Names a rule of an injector: the plan's rules are `0..n` in order, each
/// rule added later gets the next id.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(pub usize);

/// A script of faults plus the seed for the random ones. Rules are checked in
/// order; the first that fires on a call decides its fate.
///
/// ```
/// use streamcore::platform::ErrorKind;
/// use streamcore_mock::fault::{FaultPlan, Site};
/// let plan = FaultPlan::seeded(42)
///     .fail_nth_alloc(3)                       // the 3rd device allocation: out of memory
///     .fail_kernel("reduce")                   // every launch of `reduce` fails
///     .fail_nth(Site::Synchronize, 2, ErrorKind::Other)
///     .random(Site::CopyToHost, 10_000, ErrorKind::Other) // 1% of copies back
///     .lose_device_at(500);                    // the 500th call loses the device
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    pub(crate) rules: Vec<Rule>,
    pub(crate) seed: u64,
}

impl FaultPlan {
    /// An empty plan (nothing fails), seed 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty plan whose random rules draw from `seed`.
    pub fn seeded(seed: u64) -> Self {
        Self {
            rules: Vec::new(),
            seed,
        }
    }

    /// Adds a rule.
    pub fn rule(mut self, site: Site, trigger: Trigger, effect: Effect) -> Self {
        self.rules.push(Rule {
            site,
            trigger,
            effect,
        });
        self
    }

    /// The n-th (1-based) device allocation fails with `OutOfMemory`.
    pub fn fail_nth_alloc(self, n: u64) -> Self {
        self.rule(
            Site::DeviceAlloc,
            Trigger::Nth(n),
            Effect::Fail(ErrorKind::OutOfMemory),
        )
    }

    /// Every launch of kernel `name` fails with `Kernel` and writes nothing.
    pub fn fail_kernel(self, name: &str) -> Self {
        self.rule(
            Site::Kernel(String::from(name)),
            Trigger::Always,
            Effect::Fail(ErrorKind::Kernel),
        )
    }

    /// The n-th (1-based) call at `site` fails with `kind`.
    pub fn fail_nth(self, site: Site, n: u64, kind: ErrorKind) -> Self {
        self.rule(site, Trigger::Nth(n), Effect::Fail(kind))
    }

    /// Each call at `site` fails with `kind` with probability
    /// `per_million / 1_000_000`.
    pub fn random(self, site: Site, per_million: u32, kind: ErrorKind) -> Self {
        self.rule(site, Trigger::Chance { per_million }, Effect::Fail(kind))
    }

    /// The n-th (1-based) call of any kind loses the device.
    pub fn lose_device_at(self, n: u64) -> Self {
        self.rule(Site::Any, Trigger::Nth(n), Effect::LoseDevice)
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }
}
