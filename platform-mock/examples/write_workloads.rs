//! Writes the synthetic workloads (`replay::synthetic::workloads`) as trace
//! files, so the replays on a GPU machine (`streamcore replay --platform
//! hip`, `scripts/torch_replay.py`) run the same unseen workloads the driver
//! model judges here.
//!
//! `cargo run --release -p streamcore-mock --example write_workloads -- DIR
//! [--held-out | --seed N]` writes `DIR/<name>.jsonl.gz` per workload (with
//! `--held-out`, the held-out set `replay::synthetic::held_out` instead;
//! with `--seed N`, the fresh set `replay::synthetic::fresh(N)`) ([`Trace::save`]: a header
//! naming the workload, no recorder peaks since nothing recorded them, then
//! one JSON line per event). Loading a written file gives back the same
//! events (checked before the program exits).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use streamcore_mock::replay::{Trace, synthetic};

#[macro_use]
#[path = "support/out.rs"]
mod out;

fn main() -> ExitCode {
    const USAGE: &str = "usage: write_workloads DIR [--held-out | --seed N]";
    let (mut dir, mut held_out, mut seed) = (None, false, None);
    let mut argv = std::env::args_os().skip(1);
    while let Some(a) = argv.next() {
        if a == "--held-out" {
            held_out = true;
        } else if a == "--seed" {
            match argv.next().and_then(|n| n.to_str()?.parse::<u64>().ok()) {
                Some(n) => seed = Some(n),
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            }
        } else if dir.is_none() {
            dir = Some(PathBuf::from(a));
        } else {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    }
    let Some(dir) = dir else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let set = match seed {
        Some(seed) => synthetic::fresh(seed),
        None if held_out => synthetic::held_out(),
        None => synthetic::workloads(),
    };
    for (name, trace) in set {
        let path = dir.join(format!("{name}.jsonl.gz"));
        match write(&path, &trace) {
            Ok(events) => outln!("{}: {events} events", path.display()),
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
