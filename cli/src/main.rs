//! The `streamcore` binary: parses the command line and runs it (the
//! commands live in the `streamcore_cli` library).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    streamcore_cli::run(streamcore_cli::Cli::parse())
}
