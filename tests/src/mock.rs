//! The suite's instance for the mock platform: kernels registered as Rust
//! closures, faults injected by a wrapper, and the hazard checker asserted
//! silent after every scenario.

use streamcore::device::{Device, DeviceConfig};
use streamcore::platform::ErrorKind;
use streamcore_mock::fault::{Effect, FaultInjector, FaultPlan, Rule, Site, Trigger};
use streamcore_mock::{MockConfig, MockPlatform};

use crate::harness::{Capability, FaultCall, Harness, Setup, Skip};
use crate::kernels;

/// The mock platform behind the fault injector.
pub type MockP = FaultInjector<MockPlatform>;

/// Runs the suite on the mock with scheduler seed `seed` (the setup's seed
/// is added to it).
#[derive(Clone, Copy, Debug, Default)]
pub struct MockHarness {
    /// Base scheduler seed.
    pub seed: u64,
}

impl Harness for MockHarness {
    type P = MockP;

    fn name(&self) -> &'static str {
        "mock"
    }

    fn supports(&self, _: Capability) -> bool {
        true
    }

    fn device(&self, setup: &Setup) -> Result<Device<MockP>, Skip> {
        let mut config = MockConfig::default().seed(self.seed.wrapping_add(setup.seed));
        if let Some(bytes) = setup.memory {
            config = config
                .total_memory(bytes)
                .max_page_size(bytes.min(64 << 20));
        }
        let mock = MockPlatform::with_config(config).map_err(|e| Skip(e.to_string()))?;
        kernels::register_mock(&mock);
        let mut plan = FaultPlan::new();
        if let Some(k) = setup.fail_kernel {
            plan = plan.fail_kernel(k);
        }
        Device::new(
            FaultInjector::new(mock, plan),
            DeviceConfig::with_streams(setup.streams),
        )
        .map_err(|e| Skip(format!("device: {e}")))
    }

    fn device_on(&self, ordinal: u32, setup: &Setup) -> Result<Device<MockP>, Skip> {
        // Two simulated GPUs: independent mocks.
        match ordinal {
            0 | 1 => self.device(setup),
            _ => Err(Skip(format!(
                "the mock simulates two devices, not {ordinal}"
            ))),
        }
    }

    fn storage_allocations(&self, device: &Device<MockP>) -> u64 {
        device.with_platform(|p| {
            let c = p.inner().counters();
            c.allocs + c.host_allocs
        })
    }

    fn finish(&self, device: &Device<MockP>) {
        device.with_platform(|p| p.inner().assert_no_hazards());
    }

    fn fail_next(
        &self,
        device: &Device<MockP>,
        call: FaultCall,
        kind: ErrorKind,
    ) -> Result<(), Skip> {
        let site = match call {
            FaultCall::Record => Site::Record,
            FaultCall::Wait => Site::Wait,
            FaultCall::Synchronize => Site::Synchronize,
            FaultCall::CopyToDevice => Site::CopyToDevice,
            FaultCall::CopyToHost => Site::CopyToHost,
            FaultCall::Launch => Site::Launch,
            FaultCall::LoadKernel => Site::LoadKernel,
            FaultCall::BeginCapture => Site::BeginCapture,
            FaultCall::EndCapture => Site::EndCapture,
            FaultCall::LaunchGraph => Site::LaunchGraph,
            FaultCall::DeviceAlloc => Site::DeviceAlloc,
            FaultCall::HostAlloc => Site::HostAlloc,
            FaultCall::CreateStream => Site::CreateStream,
        };
        device.with_platform(|p| {
            p.add_rule(Rule {
                site,
                trigger: Trigger::Nth(1),
                effect: Effect::Fail(kind),
            })
        });
        Ok(())
    }

    fn faults_taken(&self, device: &Device<MockP>) -> u64 {
        device.with_platform(|p| p.injected().len() as u64)
    }
}
