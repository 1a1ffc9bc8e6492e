//! What a platform instance of the suite provides.

use std::fmt;

use streamcore::device::Device;
use streamcore::platform::Platform;

/// Why a scenario did not run on a platform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skip(pub String);

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SKIPPED: {}", self.0)
    }
}

/// Platform abilities some scenarios need; the one place where expected
/// differences between platforms are declared.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    /// A named kernel can be made to fail on demand.
    FailKernel,
    /// Device memory can be limited so out-of-memory is reachable quickly.
    SmallMemory,
    /// Storage allocations can be counted (to prove none happen in a capture).
    CountAllocations,
}

/// How a scenario wants its device.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Streams of the device.
    pub streams: u16,
    /// Scheduler seed (platforms without a scheduler ignore it).
    pub seed: u64,
    /// A kernel (by name) every launch of which fails.
    pub fail_kernel: Option<&'static str>,
    /// Device memory limit in bytes.
    pub memory: Option<u64>,
}

impl Setup {
    /// `streams` streams, seed 0, no faults.
    pub fn streams(streams: u16) -> Self {
        Self {
            streams,
            seed: 0,
            fail_kernel: None,
            memory: None,
        }
    }
}

/// One platform instance of the suite.
pub trait Harness {
    /// The platform.
    type P: Platform;

    /// A short name for messages.
    fn name(&self) -> &'static str;

    /// Whether the platform has `capability`.
    fn supports(&self, capability: Capability) -> bool;

    /// A fresh device with the suite's kernels available, or why not.
    fn device(&self, setup: &Setup) -> Result<Device<Self::P>, Skip>;

    /// Storage allocations made so far (0 when not counted).
    fn storage_allocations(&self, device: &Device<Self::P>) -> u64;

    /// Checks after a scenario (the mock: no hazard was reported).
    fn finish(&self, device: &Device<Self::P>);
}

/// Runs `scenario` under `harness`, printing a visible line when it is skipped.
pub fn run<H: Harness>(harness: &H, scenario: &str, f: impl FnOnce(&H) -> Result<(), Skip>) {
    match f(harness) {
        Ok(()) => {}
        Err(skip) => println!("{} / {scenario}: {skip}", harness.name()),
    }
}

/// Instantiates every scenario of the suite as a `#[test]` for the harness
/// built by `$make`.
#[macro_export]
macro_rules! scenario_suite {
    ($make:expr) => {
        $crate::scenario_suite!(@tests $make;
            upload_launch_chain_download,
            producer_consumer_waits_once,
            free_while_in_flight_is_not_reused,
            capture_replay_with_fresh_inputs,
            capture_doomed_by_failure,
            taint_chain_and_recovery,
            out_of_memory_then_recovery,
            install_pools_refused_while_in_use,
            info_cache_serves_repeated_launches,
        );
    };
    (@tests $make:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let harness = $make;
                $crate::harness::run(&harness, stringify!($name), |h| {
                    $crate::scenarios::$name(h)
                });
            }
        )*
    };
}
