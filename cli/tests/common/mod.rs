//! What the command-line tests share: running the binary, its output as
//! text, scratch folders, the bundled traces, and JSON members.

#![allow(dead_code, reason = "each test binary uses a part of these helpers")]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use streamcore_mock::replay::json::Value;

/// Runs the `streamcore` binary with `args` and waits for its output.
pub fn streamcore<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Output {
    Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .args(args)
        .output()
        .expect("run streamcore")
}

/// Output bytes as text (invalid UTF-8 replaced).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh, empty scratch folder for one test, named after the test binary
/// and `test`.
pub fn scratch(test: &str) -> PathBuf {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{}-{test}", env!("CARGO_CRATE_NAME")));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// The bundled trace `tests/traces/{name}.jsonl.gz`.
pub fn trace(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/traces")
        .join(format!("{name}.jsonl.gz"))
}

/// The integer member `key` of a JSON object; fails the test without one.
pub fn u(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no integer {key:?} in {v:?}"))
}

/// Runs `streamcore` with `args` (a `--platform hip` command) where the only
/// place to look for the HIP runtime is an empty folder: it must say so in
/// one line on stderr, with exit status 1 and nothing on stdout.
#[cfg(feature = "hip")]
pub fn assert_no_hip_runtime<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) {
    let empty = scratch("no-rocm");
    std::fs::create_dir_all(empty.join("lib")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .args(args)
        .env("ROCM_PATH", &empty)
        .env("HIP_PATH", &empty)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run streamcore");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with("streamcore: --platform hip: no usable HIP runtime"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing on stdout");
}
