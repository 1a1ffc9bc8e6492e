//! Every command whose reader went away (`streamcore demo | head -1`) stops
//! quietly with exit status 0.
//!
//! The reader is gone before the command writes anything, so every write
//! fails with a broken pipe, whatever the timing: the command's stdout is a
//! FIFO's write end whose only reader was closed first.

#![cfg(target_os = "linux")]

use std::process::{Command, Output, Stdio};

mod common;

use common::{full_disk, readerless_pipe, text, trace};

fn run_into_closed_pipe(test: &str, args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(readerless_pipe(test))
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

/// `--help` and `--version` into a closed pipe stop quietly too.
#[test]
fn help_and_version_into_a_closed_pipe() {
    for args in [&["--help"][..], &["replay", "--help"], &["--version"]] {
        let os: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        let out = run_into_closed_pipe("help", &os);
        assert_quiet_success(&out, &args.join(" "));
    }
}

/// Output that cannot be written for another reason (a full disk:
/// `/dev/full`) is an error: one line on stderr, exit status 1, for the
/// help and the version as for every command's output.
#[test]
fn output_to_a_full_disk_is_an_error() {
    if full_disk().is_none() {
        eprintln!("SKIPPED: no /dev/full");
        return;
    }
    let t = trace("two_stream_pipeline");
    let cases: [&[&std::ffi::OsStr]; 6] = [
        &["--help".as_ref()],
        &["--version".as_ref()],
        &["replay".as_ref(), "--help".as_ref()],
        &["demo".as_ref()],
        &["record".as_ref()],
        &["replay".as_ref(), t.as_os_str()],
    ];
    for args in cases {
        let full = full_disk().expect("open /dev/full");
        let out = Command::new(env!("CARGO_BIN_EXE_streamcore"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(full)
            .output()
            .expect("run streamcore");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(
            err.starts_with("streamcore: writing the"),
            "{args:?}: {err}"
        );
        assert!(err.contains("No space left on device"), "{args:?}: {err}");
    }
}

/// A command whose stderr cannot be written (its reader gone, or a full
/// disk) still ends with the status that says how it went, not a panic's
/// 101: a missing trace is 1, a bad argument 2.
#[test]
fn an_error_that_cannot_be_told_keeps_its_status() {
    let t = trace("two_stream_pipeline");
    let cases: [(&[&std::ffi::OsStr], i32); 3] = [
        (&["replay".as_ref(), "no-such-trace.jsonl".as_ref()], 1),
        (
            &[
                "replay".as_ref(),
                "--layout".as_ref(),
                "no-such-layout".as_ref(),
                t.as_os_str(),
            ],
            2,
        ),
        (&["demo".as_ref(), "--seed".as_ref(), "x".as_ref()], 2),
    ];
    for (args, code) in cases {
        let mut stderrs = vec![("closed pipe", readerless_pipe("stderr"))];
        if let Some(full) = full_disk() {
            stderrs.push(("full disk", full));
        }
        for (what, stderr) in stderrs {
            let status = Command::new(env!("CARGO_BIN_EXE_streamcore"))
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(stderr)
                .status()
                .expect("run streamcore");
            assert_eq!(status.code(), Some(code), "{args:?}, stderr a {what}");
        }
    }
}
