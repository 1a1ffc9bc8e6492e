//! Allocation-trace replay: load a trace (gzip or plain JSON lines), feed
//! it through one memory manager per stream over storages that count bytes
//! without holding memory, and report peak reserved, peak live, their
//! ratio, storage calls and time per operation.
//!
//! ```no_run
//! use streamcore::memory::MemoryLayout;
//! use streamcore::platform::DeviceProperties;
//! use streamcore_mock::replay::{replay, ReplayOptions, StreamcoreTarget, Trace};
//!
//! let trace = Trace::load("tests/traces/gpt2_train.jsonl.gz")?;
//! let props = DeviceProperties {
//!     total_memory: 141 << 30,
//!     max_page_size: 1 << 30,
//!     alignment: 256,
//!     integrated: false,
//! };
//! let mut target = StreamcoreTarget::new(MemoryLayout::for_device(&props), 256);
//! let report = replay(&trace, &mut target, ReplayOptions::default())?;
//! println!("{report}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod counting;
mod driver;
mod driver_model;
pub mod json;
pub mod synthetic;
mod trace;
mod write;

pub use counting::{Accounting, CountingError, CountingStorage, StorageStats};
pub use driver::{
    ReplayError, ReplayOptions, ReplayReport, ReplayTarget, Sample, StreamcoreTarget, replay,
};
pub use driver_model::{DriverModel, DriverTable, H200, H200_PROPERTIES};
pub use trace::{
    MAX_LINE_BYTES, MAX_TRACE_SIZE, MAX_TRACE_STREAMS, Trace, TraceError, TraceEvent, TraceHeader,
};

#[cfg(test)]
mod tests;
