//! The fuzzing harness: random (or enumerated) programs of device operations
//! run on the mock, checked step by step against a sequential model.
//!
//! Behind the `fuzzing` feature (off by default). The fuzz targets under
//! `fuzz/` are three-line shims over [`fuzz`]; the corpus replay and the
//! exhaustive exploration are ordinary tests of this crate.
//!
//! - [`Program`] / [`Op`]: what an input means. Ops cover allocation, free,
//!   write, read, launch (over live buffers, possibly aliased), cross-stream
//!   use, sync, flush (poll), capture prepare/begin/end/abort, replay, graph
//!   release, pool installs, cleanup and injected faults, over 1–4 streams.
//! - [`Driver`]: applies a program to a `Device` on the mock (seeded
//!   scheduler, or any [`Scheduler`](crate::schedule::Scheduler)) and runs the
//!   oracle after every step:
//!   - the mock's hazard checker is silent;
//!   - accounting: pool pages equal the mock's live device pages, no two
//!     live buffers overlap, the drop queues are empty after `sync_all`, the
//!     info cache's pins equal the live graphs' pins, the taint graph's
//!     failures equal those the live buffers carry, the device's buffer and
//!     graph counts equal the model's;
//!   - every read returns the model's bytes, or fails with a taint report
//!     naming exactly the failure the model says claims the buffer;
//!   - every capture transition is accepted or refused as the model says,
//!     and `end_capture` seals exactly the windows nothing doomed;
//!   - after dropping everything and a final sync nothing is live.
//! - [`explore`]: every program over a small alphabet up to a length, under
//!   every interleaving the mock's scheduler can produce.
//! - [`corpus`]: seed-corpus generation and replay.

mod check;
pub mod corpus;
mod driver;
pub mod explore;
pub mod kernels;
pub mod minimize;
pub mod model;
mod program;
pub mod setup;

pub use driver::{
    DevError, Driver, ForeignDevice, FuzzPlatform, Outcome, RunReport, SETUP_FACT, Violation,
    pattern, platform_kind,
};
pub use program::{
    Config, FaultSite, Foreign, Kernel, MAX_BUFFERS, MAX_GRAPHS, MAX_MODELED, MAX_OPS, OP_KINDS,
    Op, Profile, Program, ReadSite, SIZES,
};
pub use setup::{STREAM_BOUND, Setup};

/// Runs `program` with its seeded scheduler and the full oracle. A config
/// the device refused (as the oracle permits) runs no op.
pub fn run(program: &Program) -> Result<RunReport, Violation> {
    match Driver::new(program, None)? {
        Some(d) => d.run(program),
        None => Ok(RunReport {
            features: [driver::SETUP_FACT].into_iter().collect(),
            ..RunReport::default()
        }),
    }
}

/// The fuzz-target entry: decodes `data`, shapes it for `profile`, runs it,
/// and panics with the violation (and the program, to reproduce it).
pub fn fuzz(profile: Profile, data: &[u8]) {
    let program = profile.shape(Program::decode(data));
    if let Err(v) = run(&program) {
        panic!("{v}\nprogram: {program:?}");
    }
}
