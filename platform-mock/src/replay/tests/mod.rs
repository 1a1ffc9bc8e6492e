//! Tests of the trace loader (`trace.rs`) and the replay driver with its
//! storages and driver model (`replay.rs`), and their shared helpers.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::string::String;
use std::vec::Vec;

use streamcore::memory::{MemoryLayout, MemoryPolicy, PoolSpec};

use super::*;

mod real;
mod replay;
mod trace;

const HEADER: &str = r#"{"header": {"workload": "unit", "peak_allocated_bytes": 2000, "peak_reserved_bytes": 3000, "actions": {"alloc": 2}}}"#;

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(std::format!("streamcore-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn gzip(text: &str) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap()
}

fn parse(text: &str) -> Result<Trace, TraceError> {
    Trace::read(text.as_bytes(), Path::new("inline"))
}

fn lines(events: &[&str]) -> String {
    let mut s = String::from(HEADER);
    for e in events {
        s.push('\n');
        s.push_str(e);
    }
    s.push('\n');
    s
}

/// The recorded traces' folder.
fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/traces")
}

fn small_layout() -> MemoryLayout {
    MemoryLayout::new(
        &[PoolSpec::small(1 << 16, 1024), PoolSpec::exclusive(1 << 30)],
        256,
        MemoryPolicy::default(),
    )
    .unwrap()
}
