//! # streamcore-hip
//!
//! The streamcore [`Platform`](streamcore::platform::Platform) over the real
//! HIP runtime, through `cubecl-hip-sys` (which resolves every HIP symbol at
//! run time from `libamdhip64.so` / `libhiprtc.so`, so this crate builds
//! without ROCm installed).
//!
//! - [`HipPlatform`]: one device; [`HipPlatform::new`] fails with
//!   [`ErrorKind::NotAvailable`](streamcore::platform::ErrorKind::NotAvailable)
//!   when there is no runtime or no device.
//! - [`HipStream`]: a non-blocking stream. [`HipEvent`]: an event with timing
//!   disabled, destroyed exactly once on drop.
//! - [`HipDeviceStorage`], the device storage, chosen at run time:
//!   [`HipVmmStorage`] (the driver's virtual memory: address ranges
//!   reserved once, chunks mapped and unmapped in place) where the device
//!   supports it, else [`HipStorage`] (`hipMalloc`/`hipFree`).
//!   [`HipHostStorage`] (`hipHostMalloc`/`hipHostFree`) for staging. Page
//!   ids are addresses; releases are deferred to `flush`.
//! - [`PoolBlock`]: the driver's own stream-ordered pool
//!   ([`HipPlatform::pool_alloc`], `hipMallocAsync`), the baseline the
//!   pools are measured against; [`HipPlatform::memory_info`] and
//!   [`HipPlatform::fill`] for replays on the device.
//! - [`HipKernel`]: compiled with hiprtc, launched with
//!   `hipModuleLaunchKernel`; the launch ABI (one device pointer per
//!   binding, in order) is documented in [`kernel`].
//! - [`HipGraph`]: stream capture, instantiated and replayed.
//! - [`HipError`]: every HIP status is checked and becomes a typed error
//!   carrying the call's name, the status and its `hipGetErrorName` text.
//! - [`faults`]: driver faults on demand where the runtime offers them (the
//!   HIP-on-CUDA shim), for tests of failure paths on a real device.
//!
//! Every `unsafe` block of the project lives in this crate and carries a
//! `SAFETY:` note.
//!
//! ## Capture rule
//! While any stream of a platform is capturing, a host synchronization
//! through [`Platform::synchronize`](streamcore::platform::Platform::synchronize)
//! fails with `CaptureUnsupported` and dooms every open capture, whose
//! `end_capture` then fails with `CaptureInvalidated` — the driver's rule,
//! applied deterministically whatever the event. Storage `flush` during a
//! capture keeps its queue for the next flush.

mod ballast;
mod copy;
mod device_storage;
mod driver_pool;
mod error;
mod event;
pub mod faults;
mod graph;
mod host_storage;
mod idle_events;
pub mod kernel;
mod pages;
mod platform;
mod properties;
mod runtime;
mod shared;
mod storage;
mod stream;
mod vmm;
mod vmm_storage;

pub use device_storage::{HipDeviceStorage, StoragePreference};
pub use driver_pool::{MemoryInfo, PoolBlock};
pub use error::{HipError, Origin, kind_of_hip_code};
pub use event::HipEvent;
pub use graph::HipGraph;
pub use host_storage::{HOST_ALIGNMENT, HipHostStorage};
pub use kernel::{HipKernel, MAX_BINDINGS};
pub use platform::HipPlatform;
pub use storage::{
    DEVICE_ALIGNMENT, HipStorage, MALLOC_COSTS, MALLOC_GRANULARITY, MALLOC_PACK_LIMIT,
};
pub use stream::HipStream;
pub use vmm_storage::{HipVmmStorage, VMM_COSTS, VmmCalls};

/// Whether the HIP runtime libraries can be loaded in this process and
/// export every entry point the platform needs.
pub fn runtime_available() -> bool {
    runtime::entry_points().is_ok() && cubecl_hip_sys::is_available()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}

    #[test]
    fn handles_can_cross_threads() {
        send_sync::<HipPlatform>();
        send_sync::<HipEvent>();
        send_sync::<HipKernel>();
        send_sync::<HipGraph>();
        send_sync::<HipError>();
        send::<HipStream>();
        send_sync::<HipStorage>();
        send_sync::<HipVmmStorage>();
        send_sync::<HipDeviceStorage>();
        send_sync::<HipHostStorage>();
    }
}
