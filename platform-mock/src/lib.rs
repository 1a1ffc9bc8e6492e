//! # streamcore-mock
//!
//! A deterministic simulated GPU implementing
//! [`streamcore::platform::Platform`]: the checker the project is tested
//! against. It is not a stub:
//!
//! - **Streams and a virtual clock.** Each stream is a FIFO of commands.
//!   Work completes only at *choice points* where a [`schedule::Scheduler`]
//!   (seeded by default, or scripted, or any closure) picks which ready
//!   stream head completes next, so ordering bugs show up and the same seed
//!   gives a bit-identical [event log](MockPlatform::event_log).
//! - **Real bytes.** Device and pinned host pages are byte arrays; copies
//!   move bytes; kernels are Rust closures
//!   [registered by name](MockPlatform::register_kernel).
//! - **Events.** Record, wait (cross-stream dependency), query, and host
//!   synchronize (runs the simulation until the event passes).
//! - **Graph capture** as HIP/CUDA do it in global mode (see
//!   [Capture](#capture) below): commands on a capturing stream are
//!   recorded; a host synchronization or a storage allocation during capture
//!   fails with [`ErrorKind::CaptureUnsupported`](streamcore::platform::ErrorKind::CaptureUnsupported)
//!   and `end_capture` then fails with
//!   [`ErrorKind::CaptureInvalidated`](streamcore::platform::ErrorKind::CaptureInvalidated);
//!   replays run against the same addresses.
//! - **A hazard checker** (vector clocks, byte-range shadow memory): see
//!   [`Hazard`] and [`HazardKind`]; [`MockPlatform::hazards`],
//!   [`MockPlatform::assert_no_hazards`].
//! - **Fault injection** as a wrapper around any platform:
//!   [`fault::FaultInjector`].
//!
//! - **A fuzzing harness** behind the `fuzzing` feature (off by default):
//!   `fuzzing::{Program, Op, Driver}`, a model-based oracle checked after
//!   every step, seed corpora and exhaustive small-scope exploration (see
//!   `FUZZING.md` at the repository root).
//!
//! Nothing here sleeps or reads a clock: time is virtual, and every run is a
//! function of the program, the config and the scheduler's choices.
//!
//! # Capture
//!
//! While any capture is open, `synchronize`, `query` (unless
//! [`MockConfig::allow_query_during_capture`]), `Storage::alloc`, and a
//! `Storage::flush` that would release pages fail with `CaptureUnsupported`
//! and invalidate every open capture (CUDA's global capture mode; a
//! synchronization is also reported as
//! [`HazardKind::SyncDuringCapture`]). Waiting, on a capturing stream, for an
//! event recorded outside its capture, or using an event recorded inside a
//! capture from outside it, fails the same way (only single-stream captures
//! are modelled). Later work queued on an invalidated capture fails with
//! `CaptureInvalidated`.

mod check;
mod config;
mod counters;
mod device;
mod error;
pub mod fault;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod handles;
mod kernel;
mod log;
mod memory;
mod platform;
pub mod replay;
pub mod rng;
pub mod schedule;
mod storage;

pub use check::{Agent, ByteRange, Hazard, HazardKind, OpKind, OpRef};
pub use config::{CostModel, MockConfig};
pub use counters::{Call, Counters};
pub use error::MockError;
pub use handles::{MockEvent, MockGraph, MockStream};
pub use kernel::{KernelArg, KernelFn, MockKernel};
pub use log::{LogEntry, LogOp};
pub use memory::MemoryKind;
pub use platform::MockPlatform;
pub use storage::{MockHostStorage, MockStorage};
