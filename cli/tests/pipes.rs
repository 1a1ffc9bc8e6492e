//! Every command whose reader went away (`streamcore demo | head -1`) stops
//! quietly with exit status 0.
//!
//! The reader is gone before the command writes anything, so every write
//! fails with a broken pipe, whatever the timing: the command's stdout is a
//! FIFO's write end whose only reader was closed first.

#![cfg(target_os = "linux")]

use std::fs::OpenOptions;
use std::process::{Command, Output, Stdio};

mod common;

use common::{scratch, text, trace};

/// A write end with no reader: opening a FIFO for reading and writing never
/// blocks on Linux, so it serves as the reader while the write end opens,
/// and is closed before the command starts.
fn readerless_stdout(test: &str) -> Stdio {
    let fifo = scratch(test).join("out");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let reader = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .expect("open the FIFO");
    let writer = OpenOptions::new()
        .write(true)
        .open(&fifo)
        .expect("open the FIFO's write end");
    drop(reader);
    Stdio::from(writer)
}

fn run_into_closed_pipe(test: &str, args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(readerless_stdout(test))
        .stderr(Stdio::piped())
        .output()
        .expect("run streamcore")
}

fn assert_quiet_success(out: &Output, what: &str) {
    let err = text(&out.stderr);
    assert!(
        out.status.success(),
        "{what}: status {:?}, stderr: {err}",
        out.status
    );
    assert!(err.is_empty(), "{what}: nothing on stderr, got: {err}");
}

#[test]
fn demo_into_a_closed_pipe() {
    let out = run_into_closed_pipe("demo", &["demo".as_ref()]);
    assert_quiet_success(&out, "demo");
}

#[test]
fn replay_into_a_closed_pipe() {
    let t = trace("two_stream_pipeline");
    let out = run_into_closed_pipe("replay", &["replay".as_ref(), t.as_os_str()]);
    assert_quiet_success(&out, "replay");
    let out = run_into_closed_pipe(
        "replay-json",
        &["replay".as_ref(), "--json".as_ref(), t.as_os_str()],
    );
    assert_quiet_success(&out, "replay --json");
}

#[test]
fn record_into_a_closed_pipe() {
    let out = run_into_closed_pipe("record", &["record".as_ref(), "--script".as_ref()]);
    assert_quiet_success(&out, "record --script");
}
