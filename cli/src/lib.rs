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
//! - [`text`]: text from the outside world as a terminal is shown it.
//!
//! Every command writes its results to stdout and its errors to stderr, one
//! line each, and exits 0 on success, 1 on a failure it explains, 2 on bad
//! arguments. A closed stdout (`streamcore demo | head -1`) ends a command
//! quietly with status 0; `--help` and `--version` are output like any
//! other ([`parse_and_run`]).

/// One line on stderr, after `streamcore: `, as [`error_line`] writes it:
/// `eprintln!` that never panics.
macro_rules! error_line {
    ($($arg:tt)*) => {
        $crate::error_line(format_args!($($arg)*))
    };
}

pub mod demo;
pub mod platform;
pub mod record;
pub mod replay;
pub mod text;

use std::ffi::OsString;
use std::fmt;
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

/// Parses the command line `args` (the program's name first) and runs it.
///
/// `--help` and `--version` are the command's output, on stdout: a closed
/// stdout ends them quietly with status 0, one that cannot be written (a
/// full disk) is one line on stderr and status 1, as for every command
/// ([`finish_output`]). A bad argument is clap's message on stderr and
/// status 2.
pub fn parse_and_run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match Cli::try_parse_from(args) {
        Ok(cli) => run(cli),
        Err(e) if e.use_stderr() => {
            // Where stderr itself cannot be written, nothing is left to
            // tell: the status still says it.
            let _ = e.print();
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
        }
        // Help or version, asked for: written like any output.
        Err(e) => finish_output(e.print().and_then(|()| io::stdout().flush())),
    }
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
            error_line!("writing the output: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `streamcore: ` and `message` as one line on stderr, the way every
/// command says what went wrong. The message is shown as
/// [`text::error_text`] shows it: a trace's text or a file's name quoted in
/// it cannot drive the terminal (control characters are escaped, line
/// breaks included: one line), and a megabyte-long trace line quoted back
/// is cut to its start and end. Unlike `eprintln!`, it never panics: where
/// stderr itself cannot be written (a closed pipe, `2>&1 | head -1` once
/// `head` is gone; a full disk), nothing is left to tell, and the exit
/// status still says how the command went (1 or 2, never a panic's 101).
pub fn error_line(message: fmt::Arguments<'_>) {
    let line = text::error_text(&message.to_string());
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "streamcore: {line}");
}
