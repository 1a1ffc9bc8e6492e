//! The `streamcore` command line.
//!
//! - `streamcore demo`: a two-stream pipeline with a captured graph and one
//!   injected kernel failure on the mock platform, explained step by step.
//! - `streamcore replay TRACE...`: replays allocation traces through
//!   streamcore's memory managers and compares the bytes held with the
//!   recorder's (PyTorch's) own figures.
//! - `streamcore record`: how to record such a trace from PyTorch.

mod demo;
mod record;
mod replay;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// streamcore: a GPU stream runtime core, shown on its deterministic mock.
#[derive(Parser, Debug)]
#[command(name = "streamcore", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a two-stream pipeline with a captured graph and one injected
    /// kernel failure on the mock platform, and explain what happened.
    Demo {
        /// Scheduler seed of the mock (same seed, same run).
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Replay allocation traces through streamcore's memory managers and
    /// report the bytes held beside PyTorch's own figures.
    #[command(long_about = replay::LONG_ABOUT, after_long_help = replay::AFTER_LONG_HELP)]
    Replay(replay::ReplayArgs),
    /// How to record an allocation trace from PyTorch (prints the guide).
    #[command(long_about = record::GUIDE)]
    Record(record::RecordArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Demo { seed } => match demo::run(seed, &mut std::io::stdout().lock()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("streamcore: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Replay(args) => replay::main(&args),
        Command::Record(args) => {
            let mut out = std::io::stdout().lock();
            match record::run(&args, &mut out).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                // Nobody reads the rest (`| head`): not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("streamcore: writing the output: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
