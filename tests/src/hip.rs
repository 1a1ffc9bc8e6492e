//! The suite's instance for real HIP (on NVIDIA through the shim in
//! `platform-hip/nvidia/`). Without a runtime or device every scenario
//! reports itself skipped; the two-device scenario is skipped with fewer
//! than two devices. Kernel failures are real: the failing kernel is
//! launched with more threads per block than any device allows, which the
//! driver refuses without harming the context. A small memory is made by
//! filling the device with ballast first. Faults on demand come from the
//! shim's fault switch (`streamcore_hip::faults`; over a runtime without
//! one the fault scenarios skip). Every scenario must give back the device
//! memory it took (`run_all`). HIP cannot count storage allocations;
//! hazards are the mock's job.

use streamcore::device::{Device, DeviceConfig};
use streamcore::platform::{ErrorKind, PlatformError};
use streamcore_hip::{HipPlatform, faults};

use crate::harness::{Capability, FaultCall, Harness, Setup, Skip};

/// Runs the suite on HIP device 0 (and device 1 where a scenario needs two).
#[derive(Clone, Copy, Debug, Default)]
pub struct HipHarness;

impl Harness for HipHarness {
    type P = HipPlatform;

    fn name(&self) -> &'static str {
        "hip"
    }

    fn supports(&self, capability: Capability) -> bool {
        match capability {
            Capability::FailKernel | Capability::TwoDevices | Capability::SmallMemory => true,
            Capability::InjectFaults => faults::available(),
            Capability::CountAllocations => false,
        }
    }

    fn device(&self, setup: &Setup) -> Result<Device<HipPlatform>, Skip> {
        self.device_on(0, setup)
    }

    fn device_on(&self, ordinal: u32, setup: &Setup) -> Result<Device<HipPlatform>, Skip> {
        let ordinal = i32::try_from(ordinal).map_err(|_| Skip(format!("no device {ordinal}")))?;
        let platform = match HipPlatform::with_device(ordinal) {
            Ok(p) => p,
            Err(e) if e.kind() == ErrorKind::NotAvailable => {
                return Err(Skip(format!(
                    "no HIP runtime or no device {ordinal} ({}: {})",
                    e.call(),
                    e.name()
                )));
            }
            Err(e) => panic!("HipPlatform::with_device({ordinal}) failed unexpectedly: {e}"),
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

    fn fail_next(
        &self,
        device: &Device<HipPlatform>,
        call: FaultCall,
        kind: ErrorKind,
    ) -> Result<(), Skip> {
        let entry = match call {
            FaultCall::Record => "hipEventRecord",
            FaultCall::Wait => "hipStreamWaitEvent",
            FaultCall::Synchronize => "hipEventSynchronize",
            FaultCall::CopyToDevice | FaultCall::CopyToHost => "hipMemcpyAsync",
            FaultCall::Launch => "hipModuleLaunchKernel",
            FaultCall::LoadKernel => "hipModuleLoadData",
            FaultCall::BeginCapture => "hipStreamBeginCapture",
            FaultCall::EndCapture => "hipStreamEndCapture",
            FaultCall::LaunchGraph => "hipGraphLaunch",
            FaultCall::DeviceAlloc if device.with_platform(|p| p.uses_virtual_memory()) => {
                "hipMemCreate"
            }
            FaultCall::DeviceAlloc => "hipMalloc",
            FaultCall::HostAlloc => "hipHostMalloc",
            FaultCall::CreateStream => "hipStreamCreateWithFlags",
        };
        let Some(status) = faults::status_of(kind) else {
            panic!("no HIP status injects {kind:?} and leaves the device usable");
        };
        match faults::fail_next(entry, status) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotSupported => Err(Skip(e.to_string())),
            Err(e) => panic!("the shim refused a fault for {entry}: {e}"),
        }
    }

    fn device_memory_in_use(&self) -> Option<u64> {
        let platform = HipPlatform::with_device(0).ok()?;
        Some(platform.memory_info().ok()?.used())
    }

    fn faults_taken(&self, _: &Device<HipPlatform>) -> u64 {
        faults::taken().unwrap_or(0)
    }

    fn finish(&self, device: &Device<HipPlatform>) {
        // Hazards are checked on the mock; here, every queued operation must
        // have completed without a device error.
        device.sync_all().expect("final sync");
    }
}
