//! The `streamcore` command line.
//!
//! - `streamcore demo`: a two-stream pipeline with a captured graph and one
//!   injected kernel failure on the mock platform, explained step by step.

mod demo;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo { seed } => demo::run(seed, &mut std::io::stdout().lock()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("streamcore: {e}");
            ExitCode::FAILURE
        }
    }
}
