//! `scripts/torch_replay.py`'s input checks, which run before PyTorch is
//! imported (so they hold on any machine with `python3`).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{scratch, text};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/torch_replay.py")
}

#[test]
fn a_trace_that_does_not_parse_is_reported_once_by_its_path() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED: python3 not found; torch_replay.py was not run");
        return;
    }
    let dir = scratch("bad-traces");
    let unknown = dir.join("unknown_free.jsonl");
    std::fs::write(&unknown, "{\"op\":\"free\",\"id\":3}\n").unwrap();
    let broken = dir.join("broken.jsonl");
    std::fs::write(&broken, "{\"op\":\"alloc\",\"id\":1,\"size\":\n").unwrap();
    let out = Command::new("python3")
        .arg(script())
        .arg(&unknown)
        .arg(&broken)
        .output()
        .expect("run python3");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "bad input is exit 1:\n{err}");
    assert!(!err.contains("SKIPPED"), "inputs are checked first:\n{err}");
    for (path, says) in [
        (&unknown, "free of unknown id 3 at line 1"),
        (&broken, "Expecting value"),
    ] {
        let p = path.to_str().unwrap();
        let lines: Vec<&str> = err.lines().filter(|l| l.contains(p)).collect();
        assert_eq!(lines.len(), 1, "{p} reported once:\n{err}");
        assert_eq!(
            lines[0].matches(p).count(),
            1,
            "the path once: {}",
            lines[0]
        );
        assert!(lines[0].contains(says), "{}", lines[0]);
    }
    assert!(text(&out.stdout).is_empty(), "no table for no trace");
}
