//! The suite's instance for real HIP (on NVIDIA through the shim in
//! `platform-hip/nvidia/`). Without a runtime or device every scenario
//! reports itself skipped. HIP cannot inject faults, so the scenarios that
//! need them are skipped (declared in `supports`); a small memory is made
//! by filling the device with ballast first. Hazards are the mock's job.

use streamcore::device::{Device, DeviceConfig};
use streamcore::platform::{ErrorKind, PlatformError};
use streamcore_hip::HipPlatform;

use crate::harness::{Capability, Harness, Setup, Skip};

/// Runs the suite on HIP device 0.
#[derive(Clone, Copy, Debug, Default)]
pub struct HipHarness;

impl Harness for HipHarness {
    type P = HipPlatform;

    fn name(&self) -> &'static str {
        "hip"
    }

    fn supports(&self, capability: Capability) -> bool {
        match capability {
            Capability::SmallMemory => true,
            Capability::FailKernel | Capability::CountAllocations => false,
        }
    }

    fn device(&self, setup: &Setup) -> Result<Device<HipPlatform>, Skip> {
        let platform = match HipPlatform::new() {
            Ok(p) => p,
            Err(e) if e.kind() == ErrorKind::NotAvailable => {
                return Err(Skip(format!("no HIP runtime or device ({e})")));
            }
            Err(e) => panic!("HipPlatform::new failed unexpectedly: {e}"),
        };
        let platform = match setup.memory {
            // Fill the device so only the scenario's memory stays free.
            Some(bytes) => platform
                .leave_free(bytes)
                .unwrap_or_else(|e| panic!("filling the device to leave {bytes} B: {e}")),
            None => platform,
        };
        Device::new(platform, DeviceConfig::with_streams(setup.streams))
            .map_err(|e| Skip(format!("device: {e}")))
    }

    fn storage_allocations(&self, _: &Device<HipPlatform>) -> u64 {
        0
    }

    fn finish(&self, device: &Device<HipPlatform>) {
        // Hazards are checked on the mock; here, every queued operation must
        // have completed without a device error.
        device.sync_all().expect("final sync");
    }
}
