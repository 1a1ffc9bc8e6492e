//! Fault injection as a wrapper around any [`Platform`], in the manner of
//! smoltcp's `phy::FaultInjector`.
//!
//! [`FaultInjector<P>`] implements [`Platform`] by forwarding to `P`, except
//! where its [`FaultPlan`] says a call fails. Faults come from a script
//! (the n-th call at a site, every call from the n-th on, every call) or
//! from a seeded generator of our own (each call at a site with some
//! probability), and are:
//!
//! - **failing allocations** (`Fail(OutOfMemory)` at [`Site::DeviceAlloc`] /
//!   [`Site::HostAlloc`]): the storage is unchanged;
//! - **failing kernels** ([`Site::Kernel`] by name, or every [`Site::Launch`]):
//!   the launch reports the error *at the call* and is never queued, so it
//!   writes none of its outputs (the alternative, a launch that "runs"
//!   without writing, is not modelled);
//! - **failing events and copies** (record, wait, query, synchronize, the
//!   three copies): the call reports the error and does nothing;
//! - **device loss** ([`Effect::LoseDevice`]): that call and every later one
//!   fails with [`ErrorKind::DeviceLost`](streamcore::platform::ErrorKind::DeviceLost) (`dealloc`, which cannot fail, is
//!   dropped); [`FaultInjector::lose_device`] does it by hand;
//! - **a failing `end_capture`**: the call is forwarded (the wrapped
//!   platform stops capturing, as a driver does whatever it answers), the
//!   graph it made is destroyed, and the error is reported;
//! - **odd properties** ([`FaultInjector::report_properties`]): the device
//!   properties a badly behaved driver might report (zero memory, pages of
//!   `u64::MAX` bytes, an alignment that is not a power of two), whatever the
//!   wrapped platform really has.
//!
//! A call counts once for every rule whose site it matches (a launch of
//! `add` matches [`Site::Launch`], [`Site::Kernel`]`("add")` and
//! [`Site::Any`]). Every injected fault is logged
//! ([`FaultInjector::injected`]).

mod error;
mod plan;
mod storage;

pub use error::FaultError;
pub use plan::{Effect, FaultPlan, Rule, Site, Trigger};
pub use storage::FaultStorage;

use std::sync::{Arc, Mutex, MutexGuard};
use std::vec::Vec;

use streamcore::platform::{
    Binding, Capabilities, DeviceProperties, DeviceRange, GraphCapture, GraphOf, HostRange,
    KernelSource, LaunchDims, Platform,
};

pub use plan::RuleId;

use crate::rng::SplitMix64;
use streamcore::stream::StreamId;

/// One fault the injector caused.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InjectedFault {
    /// Index of the call among all calls through the injector (1-based).
    pub call: u64,
    /// What the call was.
    pub site: Site,
    /// The kernel, for launches.
    pub kernel: Option<std::string::String>,
    /// What happened.
    pub effect: Effect,
}

/// Shared between the injector and its storages.
#[derive(Debug)]
pub(crate) struct FaultState {
    /// Each rule, its count of matching calls, and whether it is armed.
    rules: Vec<(Rule, u64, bool)>,
    properties: Option<DeviceProperties>,
    rng: SplitMix64,
    calls: u64,
    lost: bool,
    injected: Vec<InjectedFault>,
}

fn lock(state: &Mutex<FaultState>) -> MutexGuard<'_, FaultState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn lost(state: &Mutex<FaultState>) -> bool {
    lock(state).lost
}

/// Counts a call at `site` and decides whether it fails.
pub(crate) fn check<E>(
    state: &Mutex<FaultState>,
    site: Site,
    kernel: Option<&str>,
) -> Result<(), FaultError<E>> {
    let mut st = lock(state);
    st.calls += 1;
    let call = st.calls;
    if st.lost {
        return Err(FaultError::DeviceLost { site, call });
    }
    let mut fired: Option<Effect> = None;
    let FaultState { rules, rng, .. } = &mut *st;
    for (rule, count, _) in rules.iter_mut().filter(|r| r.2) {
        if !rule.site.matches(&site, kernel) {
            continue;
        }
        *count += 1;
        let fires = match rule.trigger {
            Trigger::Nth(n) => *count == n,
            Trigger::From(n) => *count >= n,
            Trigger::Always => true,
            Trigger::Chance { per_million } => rng.chance_per_million(per_million),
        };
        if fires && fired.is_none() {
            fired = Some(rule.effect);
        }
    }
    let Some(effect) = fired else {
        return Ok(());
    };
    st.injected.push(InjectedFault {
        call,
        site: site.clone(),
        kernel: kernel.map(std::string::String::from),
        effect,
    });
    match effect {
        Effect::Fail(kind) => Err(FaultError::Injected { site, call, kind }),
        Effect::LoseDevice => {
            st.lost = true;
            Err(FaultError::DeviceLost { site, call })
        }
    }
}

/// A kernel loaded through the injector: the inner kernel and its name.
#[derive(Clone, Debug)]
pub struct FaultKernel<K> {
    inner: K,
    name: std::string::String,
}

impl<K> FaultKernel<K> {
    /// The wrapped kernel.
    pub fn inner(&self) -> &K {
        &self.inner
    }

    /// The kernel's name (what [`Site::Kernel`] matches).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A platform whose calls fail as a [`FaultPlan`] says.
#[derive(Debug)]
pub struct FaultInjector<P> {
    inner: P,
    state: Arc<Mutex<FaultState>>,
}

impl<P: Clone> Clone for FaultInjector<P> {
    /// Another handle sharing the same plan, counters and device-lost flag.
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            state: self.state.clone(),
        }
    }
}

impl<P> FaultInjector<P> {
    /// Wraps `inner` with `plan`.
    pub fn new(inner: P, plan: FaultPlan) -> Self {
        let FaultPlan { rules, seed } = plan;
        Self {
            inner,
            state: Arc::new(Mutex::new(FaultState {
                rules: rules.into_iter().map(|r| (r, 0, true)).collect(),
                properties: None,
                rng: SplitMix64::new(seed),
                calls: 0,
                lost: false,
                injected: Vec::new(),
            })),
        }
    }

    /// The wrapped platform.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Every fault injected so far.
    pub fn injected(&self) -> Vec<InjectedFault> {
        lock(&self.state).injected.clone()
    }

    /// Calls made through the injector (and its storages) so far.
    pub fn calls(&self) -> u64 {
        lock(&self.state).calls
    }

    /// Whether the device is lost.
    pub fn is_lost(&self) -> bool {
        lost(&self.state)
    }

    /// Adds `rule` to the plan from now on; its trigger counts only the calls
    /// made after this one (so `Trigger::Nth(1)` fails the next matching call).
    /// The id disarms it ([`FaultInjector::remove_rule`]).
    pub fn add_rule(&self, rule: Rule) -> RuleId {
        let mut st = lock(&self.state);
        st.rules.push((rule, 0, true));
        RuleId(st.rules.len() - 1)
    }

    /// Disarms a rule added by [`FaultInjector::add_rule`] (or the plan's
    /// `n`-th rule, `RuleId(n)`): it fires no more. Returns whether it was
    /// armed.
    pub fn remove_rule(&self, id: RuleId) -> bool {
        let mut st = lock(&self.state);
        match st.rules.get_mut(id.0) {
            Some(r) => core::mem::replace(&mut r.2, false),
            None => false,
        }
    }

    /// From now on [`Platform::properties`] answers `properties` (`None`:
    /// the wrapped platform's own), as a driver reporting odd figures would.
    /// Nothing else changes: storages keep the wrapped platform's real
    /// limits.
    pub fn report_properties(&self, properties: Option<DeviceProperties>) {
        lock(&self.state).properties = properties;
    }

    /// Loses the device now: every later call fails with `DeviceLost`.
    pub fn lose_device(&self) {
        lock(&self.state).lost = true;
    }

    fn check<E>(&self, site: Site) -> Result<(), FaultError<E>> {
        check(&self.state, site, None)
    }
}

impl<P: Platform> Platform for FaultInjector<P> {
    type Stream = P::Stream;
    type Event = P::Event;
    type Storage = FaultStorage<P::Storage>;
    type HostStorage = FaultStorage<P::HostStorage>;
    type Capture = Self;
    type Kernel = FaultKernel<P::Kernel>;
    type Error = FaultError<P::Error>;

    fn properties(&self) -> DeviceProperties {
        lock(&self.state)
            .properties
            .unwrap_or_else(|| self.inner.properties())
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    /// Graph capture exactly when the wrapped platform has it.
    fn capture(&self) -> Option<&Self> {
        self.inner.capture().map(|_| self)
    }

    fn create_stream(&self) -> Result<Self::Stream, Self::Error> {
        self.check(Site::CreateStream)?;
        self.inner.create_stream().map_err(FaultError::Platform)
    }

    fn create_stream_for(&self, id: StreamId) -> Result<Self::Stream, Self::Error> {
        self.check(Site::CreateStream)?;
        self.inner
            .create_stream_for(id)
            .map_err(FaultError::Platform)
    }

    fn device_storage(&self) -> Result<Self::Storage, Self::Error> {
        self.check(Site::CreateStorage)?;
        Ok(FaultStorage {
            inner: self.inner.device_storage().map_err(FaultError::Platform)?,
            state: self.state.clone(),
            alloc_site: Site::DeviceAlloc,
        })
    }

    fn host_storage(&self) -> Result<Self::HostStorage, Self::Error> {
        self.check(Site::CreateStorage)?;
        Ok(FaultStorage {
            inner: self.inner.host_storage().map_err(FaultError::Platform)?,
            state: self.state.clone(),
            alloc_site: Site::HostAlloc,
        })
    }

    fn record(&self, stream: &mut Self::Stream) -> Result<Self::Event, Self::Error> {
        self.check(Site::Record)?;
        self.inner.record(stream).map_err(FaultError::Platform)
    }

    fn wait(&self, stream: &mut Self::Stream, event: &Self::Event) -> Result<(), Self::Error> {
        self.check(Site::Wait)?;
        self.inner.wait(stream, event).map_err(FaultError::Platform)
    }

    fn query(&self, event: &Self::Event) -> Result<bool, Self::Error> {
        self.check(Site::Query)?;
        self.inner.query(event).map_err(FaultError::Platform)
    }

    fn synchronize(&self, event: &Self::Event) -> Result<(), Self::Error> {
        self.check(Site::Synchronize)?;
        self.inner.synchronize(event).map_err(FaultError::Platform)
    }

    fn copy_to_device(
        &self,
        stream: &mut Self::Stream,
        src: HostRange,
        dst: DeviceRange,
    ) -> Result<(), Self::Error> {
        self.check(Site::CopyToDevice)?;
        self.inner
            .copy_to_device(stream, src, dst)
            .map_err(FaultError::Platform)
    }

    fn copy_to_host(
        &self,
        stream: &mut Self::Stream,
        src: DeviceRange,
        dst: HostRange,
    ) -> Result<(), Self::Error> {
        self.check(Site::CopyToHost)?;
        self.inner
            .copy_to_host(stream, src, dst)
            .map_err(FaultError::Platform)
    }

    fn copy_device(
        &self,
        stream: &mut Self::Stream,
        src: DeviceRange,
        dst: DeviceRange,
    ) -> Result<(), Self::Error> {
        self.check(Site::CopyDevice)?;
        self.inner
            .copy_device(stream, src, dst)
            .map_err(FaultError::Platform)
    }

    fn load_kernel(&self, source: &KernelSource<'_>) -> Result<Self::Kernel, Self::Error> {
        self.check(Site::LoadKernel)?;
        let inner = self
            .inner
            .load_kernel(source)
            .map_err(FaultError::Platform)?;
        Ok(FaultKernel {
            inner,
            name: std::string::String::from(source.name),
        })
    }

    /// An injected failure is reported here and the launch is never queued:
    /// it writes none of its outputs.
    fn launch(
        &self,
        stream: &mut Self::Stream,
        kernel: &Self::Kernel,
        dims: LaunchDims,
        bindings: &[Binding],
    ) -> Result<(), Self::Error> {
        check(&self.state, Site::Launch, Some(&kernel.name))?;
        self.inner
            .launch(stream, &kernel.inner, dims, bindings)
            .map_err(FaultError::Platform)
    }
}

/// Capture goes through the injector like every other call; it exists
/// exactly when the wrapped platform's does.
impl<P: Platform> GraphCapture<FaultInjector<P>> for FaultInjector<P> {
    type Graph = GraphOf<P>;

    fn begin_capture(&self, stream: &mut P::Stream) -> Result<(), FaultError<P::Error>> {
        self.check(Site::BeginCapture)?;
        self.inner_capture(Site::BeginCapture)?
            .begin_capture(stream)
            .map_err(FaultError::Platform)
    }

    /// Forwarded even when a fault strikes: the wrapped platform stops
    /// capturing (a driver's `end_capture` ends the capture whatever it
    /// answers), the graph it made is destroyed, and the fault is reported.
    fn end_capture(&self, stream: &mut P::Stream) -> Result<GraphOf<P>, FaultError<P::Error>> {
        let verdict = self.check(Site::EndCapture);
        let capture = self.inner_capture(Site::EndCapture)?;
        let graph = capture.end_capture(stream);
        match verdict {
            Ok(()) => graph.map_err(FaultError::Platform),
            Err(e) => {
                if let Ok(g) = graph {
                    let _ = capture.destroy_graph(g);
                }
                Err(e)
            }
        }
    }

    fn launch_graph(
        &self,
        stream: &mut P::Stream,
        graph: &GraphOf<P>,
    ) -> Result<(), FaultError<P::Error>> {
        self.check(Site::LaunchGraph)?;
        self.inner_capture(Site::LaunchGraph)?
            .launch_graph(stream, graph)
            .map_err(FaultError::Platform)
    }

    fn destroy_graph(&self, graph: GraphOf<P>) -> Result<(), FaultError<P::Error>> {
        self.check(Site::DestroyGraph)?;
        self.inner_capture(Site::DestroyGraph)?
            .destroy_graph(graph)
            .map_err(FaultError::Platform)
    }
}

impl<P: Platform> FaultInjector<P> {
    /// The wrapped platform's capture. The device only calls the capture
    /// methods when [`Platform::capture`] answered `Some`, which it does
    /// exactly when the wrapped platform's does; a wrapped platform that
    /// changed its answer gets a typed error, not a panic.
    fn inner_capture(&self, site: Site) -> Result<&P::Capture, FaultError<P::Error>> {
        self.inner
            .capture()
            .ok_or(FaultError::NotSupported { site })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MockConfig, MockPlatform};
    use streamcore::platform::ErrorKind;

    fn wrapped() -> FaultInjector<MockPlatform> {
        let mock = MockPlatform::with_config(MockConfig::default().seed(1)).unwrap();
        FaultInjector::new(mock, FaultPlan::new())
    }

    #[test]
    fn a_failing_end_capture_still_ends_the_wrapped_capture() {
        let f = wrapped();
        let mut s = f.create_stream().unwrap();
        f.add_rule(Rule {
            site: Site::EndCapture,
            trigger: Trigger::Nth(1),
            effect: Effect::Fail(ErrorKind::Other),
        });
        f.begin_capture(&mut s).unwrap();
        assert!(f.inner().is_capturing(&s));
        assert!(f.end_capture(&mut s).is_err());
        assert!(
            !f.inner().is_capturing(&s),
            "the mock must not be left capturing"
        );
        assert_eq!(f.injected().len(), 1);
        // The stream captures again, and the next end succeeds.
        f.begin_capture(&mut s).unwrap();
        let g = f.end_capture(&mut s).unwrap();
        f.destroy_graph(g).unwrap();
        assert!(f.inner().hazards().is_empty());
    }

    #[test]
    fn a_removed_rule_fires_no_more() {
        let f = wrapped();
        let mut s = f.create_stream().unwrap();
        let id = f.add_rule(Rule {
            site: Site::Record,
            trigger: Trigger::Always,
            effect: Effect::Fail(ErrorKind::Other),
        });
        assert!(f.record(&mut s).is_err());
        assert!(f.remove_rule(id));
        assert!(!f.remove_rule(id), "already disarmed");
        assert!(!f.remove_rule(RuleId(99)));
        assert!(f.record(&mut s).is_ok());
        assert_eq!(f.injected().len(), 1);
    }

    #[test]
    fn reported_properties_override_the_wrapped_ones() {
        let f = wrapped();
        let real = f.inner().properties();
        assert_eq!(f.properties(), real);
        let odd = DeviceProperties {
            total_memory: 0,
            max_page_size: u64::MAX,
            alignment: 3,
            integrated: true,
        };
        f.report_properties(Some(odd));
        assert_eq!(f.properties(), odd);
        assert_eq!(f.inner().properties(), real);
        f.report_properties(None);
        assert_eq!(f.properties(), real);
    }
}
