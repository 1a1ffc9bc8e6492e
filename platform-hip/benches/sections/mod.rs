//! The sections of `device_vs_hip`, one concept each.

pub(crate) mod allocations;
pub(crate) mod chain;
pub(crate) mod launches;
pub(crate) mod pipeline;
pub(crate) mod primitives;
pub(crate) mod threads;

pub(crate) use allocations::allocations;
pub(crate) use chain::chain;
pub(crate) use launches::launches;
pub(crate) use pipeline::pipeline;
pub(crate) use primitives::primitives;
pub(crate) use threads::threads;
