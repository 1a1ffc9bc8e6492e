//! # streamcore
//!
//! A `no_std + alloc` GPU stream runtime core: everything that must move in
//! step with the work queued on a device stream, kept apart from any driver.
//!
//! - [`platform`]: the contract a driver binding implements.
//! - [`stream`]: capture lifecycle, stream pool, multi-stream sync.
//! - [`drop_queue`]: fence-gated deferred frees.
//! - [`info_cache`]: the LRU-bounded metadata buffer cache with graph pins.
//! - [`memory`]: per-stream memory pools.
//! - [`failure`]: the error-taint graph.
//!
//! The core makes no driver call, reads no clock, spawns no thread and does
//! no I/O: time and fence progress are inputs.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

mod arena;
pub mod device;
pub mod drop_queue;
pub mod error;
pub mod failure;
pub mod hash;
pub mod info_cache;
pub mod memory;
pub mod null;
pub mod platform;
pub mod stream;

pub use error::Error;
