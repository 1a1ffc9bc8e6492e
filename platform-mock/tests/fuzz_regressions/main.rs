//! Programs the fuzzers or the exhaustive exploration found violating the
//! oracle, kept as regression tests (each failed before its fix).
//!
//! One module per concern: streams that use each other's buffers
//! ([`cross_stream`]), capture windows and what they pin ([`capture`]),
//! windows refused at `end_capture` ([`refused_windows`]), reads whose
//! synchronization fails ([`reads`]), handles of another device
//! ([`foreign`]), odd configurations ([`config`]), and reservations over
//! virtual memory ([`virtual_memory`]).

mod capture;
mod config;
mod cross_stream;
mod foreign;
mod reads;
mod refused_windows;
mod virtual_memory;

use streamcore_mock::fuzzing::{self, Config, Kernel, Op, Program};

/// Runs `p` under the full oracle; a violation fails the test with the
/// program.
fn run(p: Program) {
    if let Err(v) = fuzzing::run(&p) {
        panic!("{v}\n{p:?}");
    }
}

/// The config of `streams` (as [`Config::streams`] counts them), everything
/// else zero.
fn cfg(streams: u8) -> Config {
    Config {
        streams,
        ..Config::default()
    }
}

/// A fill of `out` (its inputs named as `out` too).
fn fill(stream: u8, out: u8, k: u8) -> Op {
    Op::launch(stream, Kernel::Fill, out, out, out, k)
}
