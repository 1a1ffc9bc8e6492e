//! `--platform`: where a command runs its device work.

use std::fmt;

use clap::ValueEnum;

/// The platform a command runs on.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum PlatformArg {
    /// The deterministic mock (`streamcore-mock`): no GPU needed, a seeded
    /// scheduler and a hazard checker.
    #[default]
    Mock,
    /// A real GPU through HIP (`streamcore-hip`; on NVIDIA through the
    /// HIP-on-CUDA shim). The runtime is loaded when the command starts.
    Hip,
}

impl fmt::Display for PlatformArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PlatformArg::Mock => "mock",
            PlatformArg::Hip => "hip",
        })
    }
}

/// Which device storage streamcore's pools use with `replay --platform hip`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum StorageArg {
    /// Virtual memory where the device supports it, else `hipMalloc`.
    #[default]
    Auto,
    /// `hipMalloc` / `hipFree`.
    Malloc,
}

/// How frees reach streamcore's pools with `replay --platform hip --touch`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum FreesArg {
    /// At once, in stream order (`MemoryManager::free_ordered`): a freed
    /// slice serves later work of its stream without a fence; the manager
    /// waits for the stream only before it gives memory back.
    #[default]
    Ordered,
    /// Through a drop queue per stream: a slice goes back to its pool once
    /// a fence recorded after its last use has passed.
    Fenced,
}

/// Whether this build can run `--platform hip` (the `hip` feature, on by
/// default).
pub const HIP_BUILT: bool = cfg!(feature = "hip");

/// The one line a command prints for `--platform hip` in a build without
/// the `hip` feature.
pub const HIP_NOT_BUILT: &str = "this streamcore was built without HIP support \
     (`--no-default-features`); rebuild it with `--features hip` for `--platform hip`";

/// The one line for a HIP platform that could not be set up: no runtime
/// (the libraries were not found, would not load, or lack entry points the
/// platform calls), a runtime without a usable GPU (no
/// driver, no device), or another setup error.
#[cfg(feature = "hip")]
pub fn hip_unavailable(e: &streamcore_hip::HipError) -> String {
    use streamcore::platform::{ErrorKind, PlatformError};
    use streamcore_hip::Origin;
    match (e.kind(), e.origin()) {
        (ErrorKind::NotAvailable, Origin::Loader) => format!(
            "--platform hip: no usable HIP runtime: {e} (install ROCm, or on NVIDIA build the \
             HIP-on-CUDA shim: platform-hip/nvidia/README.md)"
        ),
        (ErrorKind::NotAvailable, _) => {
            format!("--platform hip: the HIP runtime loaded, but no GPU is usable: {e}")
        }
        _ => format!("--platform hip: the GPU could not be set up: {e}"),
    }
}
