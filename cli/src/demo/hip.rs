//! The demo on a real GPU through HIP: the same pipeline, the kernels
//! compiled from their HIP source, the failure injected by the same
//! wrapper. No scheduler to seed and no hazard checker: the device runs the
//! work its own way.

use std::io::Write;

use streamcore::device::{Device, DeviceConfig};
use streamcore::memory::HumanBytes;
use streamcore::platform::Platform;
use streamcore_hip::HipPlatform;
use streamcore_kernels as kernels;
use streamcore_mock::fault::{FaultInjector, FaultPlan};

use super::DemoError;
use super::pipeline::{self, Stage};
use crate::platform::hip_unavailable;

/// A HIP device, described once.
pub struct HipStage {
    description: String,
}

impl Stage for HipStage {
    type P = HipPlatform;

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn completed(&self) -> Option<String> {
        None
    }

    fn allocations(&self) -> Option<u64> {
        None
    }

    fn hazards(&self) -> Option<Vec<String>> {
        None
    }
}

/// Runs the demo on HIP device 0.
pub fn run(out: &mut impl Write) -> Result<(), DemoError> {
    let hip = HipPlatform::new().map_err(|e| DemoError::Unavailable(hip_unavailable(&e)))?;
    let props = hip.properties();
    let stage = HipStage {
        description: format!(
            "HIP device {}: {} ({})",
            hip.device_ordinal(),
            hip.device_name(),
            HumanBytes(props.total_memory)
        ),
    };
    let platform = FaultInjector::new(hip, FaultPlan::new().fail_kernel(kernels::FLAKY.name));
    let device = Device::new(platform, DeviceConfig::with_streams(2))
        .map_err(|e| DemoError::Unexpected(format!("device: {e}")))?;
    pipeline::run(&stage, &device, out)
}
