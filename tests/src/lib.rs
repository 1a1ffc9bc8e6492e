//! The streamcore scenario suite, written once against the platform traits.
//!
//! Each scenario is a generic function over a [`Harness`], which provides a
//! fresh [`Device`](streamcore::device::Device) on one platform and checks
//! what that platform can check afterwards (the mock: its hazard checker).
//! [`scenario_suite!`] instantiates every scenario as a `#[test]` for one
//! harness. Expected differences between platforms are declared in one
//! place: [`Harness::supports`].

pub mod harness;
pub mod hip;
pub mod mock;
pub mod paced;
pub mod scenarios;

/// The suite's kernels (the `streamcore-kernels` crate).
pub use streamcore_kernels as kernels;

pub use harness::{Capability, Harness, Setup, Skip};
