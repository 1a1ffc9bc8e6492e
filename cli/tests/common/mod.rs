//! What the command-line tests share: running the binary, its output as
//! text, scratch folders, the bundled traces, and JSON members.

#![allow(dead_code, reason = "each test binary uses a part of these helpers")]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

/// A pipe's write end with no reader, for a command's stdout or stderr:
/// every write to it fails with a broken pipe, whatever the timing (as
/// `| head` does once `head` is gone). Opening a FIFO for reading and
/// writing never blocks on Linux, so it serves as the reader while the
/// write end opens, and is closed before the command starts.
#[cfg(target_os = "linux")]
pub fn readerless_pipe(test: &str) -> Stdio {
    use std::fs::OpenOptions;
    let fifo = scratch(&format!("fifo-{test}")).join("out");
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

/// `/dev/full` opened for writing (every write fails: no space left), or
/// `None` where there is none.
pub fn full_disk() -> Option<Stdio> {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .ok()
        .map(Stdio::from)
}

/// Whether `python3` runs here; says SKIPPED (past the test harness's
/// capture) when it does not, for the caller to skip.
pub fn has_python(what: &str) -> bool {
    let found = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: python3 not found; {what} was not run"
        );
    }
    found
}

/// The script `scripts/{name}`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scripts")
        .join(name)
}
