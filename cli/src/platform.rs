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

/// Whether this build can run `--platform hip` (the `hip` feature, on by
/// default).
pub const HIP_BUILT: bool = cfg!(feature = "hip");

/// The one line a command prints for `--platform hip` in a build without
/// the `hip` feature.
pub const HIP_NOT_BUILT: &str = "this streamcore was built without HIP support \
     (`--no-default-features`); rebuild it with `--features hip` for `--platform hip`";
