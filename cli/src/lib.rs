//! # streamcore-cli
//!
//! The `streamcore` command line, as a library the binary calls (its pages
//! are for people working on the command line; users read
//! `streamcore --help`).
//!
//! - [`demo`]: `streamcore demo` — a two-stream pipeline with a captured graph
//!   and one injected kernel failure, explained step by step, on the mock
//!   platform or (`--platform hip`) on a real GPU.
//! - [`replay`]: `streamcore replay TRACE...` — replays allocation traces
//!   through streamcore's memory managers and compares the bytes held with
//!   the recorded run's own (PyTorch's) figures.
//! - [`record`]: `streamcore record` — how to record such a trace from
//!   PyTorch.
//! - [`platform`]: the `--platform` argument.
//!
//! Every command writes its results to stdout and its errors to stderr, one
//! line each, and exits 0 on success, 1 on a failure it explains, 2 on bad
//! arguments. A closed stdout (`streamcore demo | head -1`) ends a command
//! quietly with status 0.

pub mod demo;
pub mod platform;
pub mod record;
pub mod replay;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// streamcore: a GPU stream runtime core, shown on its deterministic mock
/// or a real GPU.
#[derive(Parser, Debug)]
#[command(name = "streamcore", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a two-stream pipeline with a captured graph and one injected
    /// kernel failure (on the mock platform unless `--platform hip`), and
    /// explain what happened.
    #[command(long_about = demo::LONG_ABOUT)]
    Demo(demo::DemoArgs),
    /// Replay allocation traces through streamcore's memory managers and
    /// report the bytes held beside the recorded run's own (PyTorch's)
    /// figures.
    #[command(long_about = replay::LONG_ABOUT, after_long_help = replay::AFTER_LONG_HELP)]
    Replay(replay::ReplayArgs),
    /// How to record an allocation trace from PyTorch (prints the guide).
    #[command(long_about = record::GUIDE)]
    Record(record::RecordArgs),
}

/// Runs a parsed command line; the exit code says how it went.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Demo(args) => demo::main(&args),
        Command::Replay(args) => replay::main(&args),
        Command::Record(args) => {
            let mut out = io::stdout().lock();
            let written = record::run(&args, &mut out).and_then(|()| out.flush());
            finish_output(written)
        }
    }
}

/// The exit code for a command whose output was written (or not): a closed
/// stdout (`| head`) is not an error, anything else is one line on stderr.
pub fn finish_output(written: io::Result<()>) -> ExitCode {
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("streamcore: writing the output: {e}");
            ExitCode::FAILURE
        }
    }
}
