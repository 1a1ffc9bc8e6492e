//! The `streamcore` binary: parses the command line and runs it (the
//! commands live in the `streamcore_cli` library).

use std::process::ExitCode;

fn main() -> ExitCode {
    streamcore_cli::parse_and_run(std::env::args_os())
}
