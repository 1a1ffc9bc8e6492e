//! Writes the synthetic workloads (`replay::synthetic::workloads`) as trace
//! files, so the replays on a GPU machine (`streamcore replay --platform
//! hip`, `scripts/torch_replay.py`) run the same unseen workloads the driver
//! model judges here.
//!
//! `cargo run --release -p streamcore-mock --example write_workloads -- DIR
//! [--held-out]` writes `DIR/<name>.jsonl.gz` per workload (with
//! `--held-out`, the held-out set `replay::synthetic::held_out` instead) ([`Trace::save`]: a header
//! naming the workload, no recorder peaks since nothing recorded them, then
//! one JSON line per event). Loading a written file gives back the same
//! events (checked before the program exits).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use streamcore_mock::replay::{Trace, synthetic};

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os()
        .skip(1)
        .find(|a| a != "--held-out")
        .map(PathBuf::from)
    else {
        eprintln!("usage: write_workloads DIR [--held-out]");
        return ExitCode::from(2);
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let set = if std::env::args().any(|a| a == "--held-out") {
        synthetic::held_out()
    } else {
        synthetic::workloads()
    };
    for (name, trace) in set {
        let path = dir.join(format!("{name}.jsonl.gz"));
        match write(&path, &trace) {
            Ok(events) => println!("{}: {events} events", path.display()),
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// Writes `trace` to `path` ([`Trace::save`]), reloads it and checks the
/// events came back.
fn write(path: &Path, trace: &Trace) -> Result<usize, String> {
    trace.save(path).map_err(|e| e.to_string())?;
    let back = Trace::load(path).map_err(|e| e.to_string())?;
    if back.events != trace.events {
        return Err("the written trace loads as other events".into());
    }
    Ok(back.events.len())
}
