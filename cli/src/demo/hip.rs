//! The demo on a real GPU through HIP: the same pipeline, the kernels
//! compiled from their HIP source, the failure injected by the same
//! wrapper. No scheduler to seed and no hazard checker: the device runs the
//! work its own way.

use std::io::Write;

use streamcore::device::{Device, DeviceConfig};
use streamcore::memory::HumanBytes;
use streamcore::platform::{ErrorKind, Platform, PlatformError};
use streamcore_hip::HipPlatform;
use streamcore_hip::{HipError, Origin};
use streamcore_kernels as kernels;
use streamcore_mock::fault::{FaultInjector, FaultPlan};

use super::DemoError;
use super::pipeline::{self, Stage};

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

/// The one line for a platform that could not be set up: no runtime (the
/// libraries were not found), or a runtime without a usable GPU (no driver,
/// no device).
pub fn unavailable(e: &HipError) -> String {
    match (e.kind(), e.origin()) {
        (ErrorKind::NotAvailable, Origin::Loader) => format!(
            "--platform hip: no HIP runtime found: {e} (install ROCm, or on NVIDIA build the \
             HIP-on-CUDA shim: platform-hip/nvidia/README.md)"
        ),
        (ErrorKind::NotAvailable, _) => {
            format!("--platform hip: the HIP runtime loaded, but no GPU is usable: {e}")
        }
        _ => format!("--platform hip: the GPU could not be set up: {e}"),
    }
}

/// Runs the demo on HIP device 0.
pub fn run(out: &mut impl Write) -> Result<(), DemoError> {
    let hip = HipPlatform::new().map_err(|e| DemoError::Unavailable(unavailable(&e)))?;
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
