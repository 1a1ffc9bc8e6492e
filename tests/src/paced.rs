//! A platform wrapper that makes calls cost what a driver's do — a launch
//! burns a few microseconds of CPU, part of it under a driver-wide lock, a
//! host synchronization sleeps — and can run a hook while the host is
//! blocked in `synchronize`. The concurrency tests and the concurrency bench
//! use it over the mock and the null platform.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use streamcore::platform::{
    Binding, Capabilities, DeviceProperties, DeviceRange, GraphCapture, GraphOf, HostRange,
    KernelSource, LaunchDims, Platform,
};
use streamcore::stream::StreamId;

/// What runs inside `synchronize`, before its sleep.
pub type SyncHook = Box<dyn FnMut() + Send>;

#[derive(Default)]
struct Pacing {
    launch_ns: AtomicU64,
    /// The part of `launch_ns` burnt under `driver`, in millionths.
    serial_ppm: AtomicU64,
    /// The driver's own lock, shared by every clone (one context).
    driver: AtomicBool,
    sync_ns: AtomicU64,
    syncs: AtomicU64,
    hook: Mutex<Option<SyncHook>>,
}

/// `inner` with driver-like call costs. Clones share their pacing, so a
/// test can change it while a device owns another clone.
pub struct Paced<P> {
    inner: P,
    pacing: Arc<Pacing>,
}

impl<P: Clone> Clone for Paced<P> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            pacing: self.pacing.clone(),
        }
    }
}

impl<P> Paced<P> {
    /// `inner`, every call at its own cost.
    pub fn new(inner: P) -> Self {
        Self {
            inner,
            pacing: Arc::default(),
        }
    }

    /// The wrapped platform.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Each launch burns `cost` of CPU before it is forwarded (a driver's
    /// submission is CPU work, not a sleep).
    pub fn set_launch_cost(&self, cost: Duration) {
        self.pacing
            .launch_ns
            .store(cost.as_nanos() as u64, Ordering::Relaxed);
    }

    /// The share (0 to 1) of each launch's cost burnt under one lock that
    /// every clone shares, as a driver serializes part of every submission
    /// to one context whatever the stream: two threads launching together
    /// then reach at most `1 / share` times one thread's rate. 0 (the
    /// default): launches on different threads overlap completely. On
    /// H200 hosts through the HIP-on-CUDA shim, bare `hipModuleLaunchKernel`
    /// from two threads on two streams reached 1.51-1.65x one thread's
    /// rate: a share of about 0.6 (BENCHMARKS.md section 1).
    pub fn set_launch_serial_share(&self, share: f64) {
        let ppm = (share.clamp(0.0, 1.0) * 1e6) as u64;
        self.pacing.serial_ppm.store(ppm, Ordering::Relaxed);
    }

    /// Burns one launch's cost as [`launch`](Platform::launch) does, without
    /// launching anything: what a machine allows threads that only submit.
    pub fn burn_launch_cost(&self) {
        burn_launch(&self.pacing, self.pacing.launch_ns.load(Ordering::Relaxed));
    }

    /// Each host synchronization sleeps `cost` after it is forwarded.
    pub fn set_sync_cost(&self, cost: Duration) {
        self.pacing
            .sync_ns
            .store(cost.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Runs `hook` inside every later `synchronize` (replacing any earlier
    /// one; `None` removes it).
    pub fn set_sync_hook(&self, hook: Option<SyncHook>) {
        *self
            .pacing
            .hook
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = hook;
    }

    /// Host synchronizations so far.
    pub fn syncs(&self) -> u64 {
        self.pacing.syncs.load(Ordering::Relaxed)
    }
}

/// Burns a launch's cost of `ns`: the parallel part first, then the
/// serial share (`serial_ppm`) holding `driver`.
fn burn_launch(pacing: &Pacing, ns: u64) {
    let ppm = u128::from(pacing.serial_ppm.load(Ordering::Relaxed).min(1_000_000));
    // At most `ns`: the share is at most one.
    let serial = (u128::from(ns) * ppm / 1_000_000) as u64;
    spin_for(ns - serial);
    if serial == 0 {
        return;
    }
    while pacing
        .driver
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    spin_for(serial);
    pacing.driver.store(false, Ordering::Release);
}

fn spin_for(ns: u64) {
    if ns == 0 {
        return;
    }
    let until = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

impl<P: Platform> Platform for Paced<P> {
    type Stream = P::Stream;
    type Event = P::Event;
    type Storage = P::Storage;
    type HostStorage = P::HostStorage;
    type Capture = Self;
    type Kernel = P::Kernel;
    type Error = P::Error;

    fn properties(&self) -> DeviceProperties {
        self.inner.properties()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    /// Graph capture exactly when the wrapped platform has it.
    fn capture(&self) -> Option<&Self> {
        self.inner.capture().map(|_| self)
    }
    fn create_stream(&self) -> Result<P::Stream, P::Error> {
        self.inner.create_stream()
    }
    fn create_stream_for(&self, id: StreamId) -> Result<P::Stream, P::Error> {
        self.inner.create_stream_for(id)
    }
    fn device_storage(&self) -> Result<P::Storage, P::Error> {
        self.inner.device_storage()
    }
    fn host_storage(&self) -> Result<P::HostStorage, P::Error> {
        self.inner.host_storage()
    }
    fn record(&self, s: &mut P::Stream) -> Result<P::Event, P::Error> {
        self.inner.record(s)
    }
    fn wait(&self, s: &mut P::Stream, e: &P::Event) -> Result<(), P::Error> {
        self.inner.wait(s, e)
    }
    fn query(&self, e: &P::Event) -> Result<bool, P::Error> {
        self.inner.query(e)
    }
    fn synchronize(&self, e: &P::Event) -> Result<(), P::Error> {
        self.pacing.syncs.fetch_add(1, Ordering::Relaxed);
        if let Some(hook) = self
            .pacing
            .hook
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_mut()
        {
            hook();
        }
        let r = self.inner.synchronize(e);
        let ns = self.pacing.sync_ns.load(Ordering::Relaxed);
        if ns > 0 {
            std::thread::sleep(Duration::from_nanos(ns));
        }
        r
    }
    fn copy_to_device(
        &self,
        s: &mut P::Stream,
        src: HostRange,
        dst: DeviceRange,
    ) -> Result<(), P::Error> {
        self.inner.copy_to_device(s, src, dst)
    }
    fn copy_to_host(
        &self,
        s: &mut P::Stream,
        src: DeviceRange,
        dst: HostRange,
    ) -> Result<(), P::Error> {
        self.inner.copy_to_host(s, src, dst)
    }
    fn copy_device(
        &self,
        s: &mut P::Stream,
        src: DeviceRange,
        dst: DeviceRange,
    ) -> Result<(), P::Error> {
        self.inner.copy_device(s, src, dst)
    }
    fn load_kernel(&self, source: &KernelSource<'_>) -> Result<P::Kernel, P::Error> {
        self.inner.load_kernel(source)
    }
    fn launch(
        &self,
        s: &mut P::Stream,
        k: &P::Kernel,
        dims: LaunchDims,
        bindings: &[Binding],
    ) -> Result<(), P::Error> {
        burn_launch(&self.pacing, self.pacing.launch_ns.load(Ordering::Relaxed));
        self.inner.launch(s, k, dims, bindings)
    }
}

impl<P: Platform> Paced<P> {
    /// The wrapped capture (this wrapper's capture exists only when it does).
    fn inner_capture(&self) -> &P::Capture {
        self.inner
            .capture()
            .expect("the core captures only through Platform::capture")
    }
}

impl<P: Platform> GraphCapture<Paced<P>> for Paced<P> {
    type Graph = GraphOf<P>;

    fn begin_capture(&self, s: &mut P::Stream) -> Result<(), P::Error> {
        self.inner_capture().begin_capture(s)
    }
    fn end_capture(&self, s: &mut P::Stream) -> Result<GraphOf<P>, P::Error> {
        self.inner_capture().end_capture(s)
    }
    fn launch_graph(&self, s: &mut P::Stream, g: &GraphOf<P>) -> Result<(), P::Error> {
        self.inner_capture().launch_graph(s, g)
    }
    fn destroy_graph(&self, g: GraphOf<P>) -> Result<(), P::Error> {
        self.inner_capture().destroy_graph(g)
    }
}
