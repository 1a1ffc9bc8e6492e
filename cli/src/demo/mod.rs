//! `streamcore demo`: the core's mechanisms, one after another — cross-stream
//! waits, capture and replay, a failure that taints only what depends on
//! it, the memory report, and (on the mock) the hazard checker's verdict.
//!
//! The story ([`pipeline`]) is written once against the platform traits and
//! told on the mock ([`mock`]) or on a real GPU through HIP (`hip`, with the
//! `hip` feature); each platform adds what only it can say (the mock: the
//! order its seeded scheduler completed the work in, and its hazards).

#[cfg(feature = "hip")]
pub mod hip;
pub mod mock;
pub mod pipeline;

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Args;

use crate::platform::PlatformArg;

/// `streamcore demo --help`, above the options.
pub const LONG_ABOUT: &str = "\
Run a two-stream pipeline and explain what the core did at each step:
stream 1 uploads and fills, stream 0 adds and scales (one event wait, only
where stream 0 reads what stream 1 wrote); a chain captured as a graph and
replayed with fresh inputs; one kernel made to fail by fault injection, the
launch that depends on it skipped, the read of its output refused with the
chain back to the failure, and the work that shares nothing with it
unaffected; the memory report; and, after a final sync, that nothing is left.

On the mock (the default) the device is simulated: a seeded scheduler decides
when queued work completes (--seed; the demo shows the order it chose) and a
hazard checker reports any unsynchronized access. --platform hip runs the
same pipeline on a real GPU through the HIP runtime (ROCm, or the HIP-on-CUDA
shim of platform-hip/nvidia/ on an NVIDIA GPU), found through $ROCM_PATH,
$HIP_PATH or the system's library path.

Exit status: 0 when the story ran as told; 1 when the device answered
something else (or no GPU was found), said in one line on stderr; 2 for bad
arguments.";

/// Arguments of `streamcore demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Scheduler seed of the mock: it decides when each stream's queued work
    /// completes, and the demo shows the order it chose (same seed, same
    /// run). Mock only. [default: 0]
    // A negative number is taken as the value, to be refused as one (not
    // as a stray argument `-1`).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub seed: Option<u64>,

    /// Where to run the pipeline: the deterministic mock, or a real GPU
    /// through HIP.
    #[arg(long, value_enum, default_value_t = PlatformArg::Mock)]
    pub platform: PlatformArg,
}

/// Why the demo stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum DemoError {
    /// Writing the report failed.
    Io(io::Error),
    /// The platform could not be set up (no HIP runtime, no device, ...).
    Unavailable(String),
    /// The device answered something the demo did not expect.
    Unexpected(String),
}

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DemoError::Io(e) => write!(f, "writing the report: {e}"),
            DemoError::Unavailable(why) => f.write_str(why),
            DemoError::Unexpected(what) => write!(f, "demo went wrong: {what}"),
        }
    }
}

impl std::error::Error for DemoError {}

impl From<io::Error> for DemoError {
    fn from(e: io::Error) -> Self {
        DemoError::Io(e)
    }
}

/// Runs `streamcore demo`; the exit code says whether the story ran as told.
pub fn main(args: &DemoArgs) -> ExitCode {
    let mut out = io::stdout().lock();
    let result = match args.platform {
        PlatformArg::Mock => mock::run(args.seed.unwrap_or(0), &mut out),
        PlatformArg::Hip if args.seed.is_some() => {
            error_line!(
                "--seed picks the mock's schedule; a real GPU keeps its own \
                 (leave --seed out with --platform hip)"
            );
            return ExitCode::from(2);
        }
        PlatformArg::Hip => run_hip(&mut out),
    };
    match result.and_then(|()| out.flush().map_err(DemoError::from)) {
        Ok(()) => ExitCode::SUCCESS,
        // Nobody reads the rest (`| head`): stop quietly.
        Err(DemoError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            error_line!("{e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(feature = "hip")]
fn run_hip(out: &mut impl Write) -> Result<(), DemoError> {
    hip::run(out)
}

#[cfg(not(feature = "hip"))]
fn run_hip(_: &mut impl Write) -> Result<(), DemoError> {
    Err(DemoError::Unavailable(
        crate::platform::HIP_NOT_BUILT.to_owned(),
    ))
}
