//! `streamcore replay` run as a process: on the bundled traces, with each
//! output, and on each kind of bad input (a clear message and exit status
//! 1, never a panic).
//!
//! One module per concern: the tables and JSON of good traces
//! ([`tables`]), the plot ([`svg`]), `--layout` ([`layouts`]), bad traces
//! ([`bad_input`]), and the command line itself ([`usage`]).

mod bad_input;
mod layouts;
mod svg;
mod tables;
mod usage;

use std::path::PathBuf;
use std::process::Output;

use streamcore_mock::replay::json::{self, Value};

#[path = "../common/mod.rs"]
mod common;

use common::{scratch, streamcore, text, trace, u};

fn replay(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut all: Vec<&std::ffi::OsStr> = vec!["replay".as_ref()];
    all.extend(args.iter().map(|a| a.as_ref()));
    streamcore(&all)
}

fn json_lines(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|l| json::parse(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn f(v: &Value, key: &str) -> f64 {
    match v.get(key) {
        Some(Value::Number(x)) => *x,
        Some(Value::UInt(n)) => *n as f64,
        other => panic!("no number {key:?}: {other:?}"),
    }
}

/// A bad input: exit status 1 (not a panic's 101), one clear message.
fn assert_refused(out: &Output, needles: &[&str]) {
    assert_refused_with(out, 1, needles);
}

/// A bad argument (a layout file that cannot be used): exit status 2,
/// nothing replayed, one clear message.
fn assert_bad_argument(out: &Output, needles: &[&str]) {
    assert_refused_with(out, 2, needles);
}

fn assert_refused_with(out: &Output, code: i32, needles: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    assert!(err.starts_with("streamcore: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "missing {n:?} in: {err}");
    }
}
