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

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use streamcore_mock::replay::json::{self, Value};

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/traces")
}

fn trace(name: &str) -> PathBuf {
    traces().join(format!("{name}.jsonl.gz"))
}

/// A fresh scratch folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("replay-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn streamcore(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .args(args)
        .output()
        .expect("run streamcore")
}

fn replay(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut all: Vec<&std::ffi::OsStr> = vec!["replay".as_ref()];
    all.extend(args.iter().map(|a| a.as_ref()));
    streamcore(&all)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json_lines(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|l| json::parse(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn u(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no integer {key:?} in {v:?}"))
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
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
    assert!(err.starts_with("streamcore: "), "{err}");
    for n in needles {
        assert!(err.contains(n), "missing {n:?} in: {err}");
    }
}
