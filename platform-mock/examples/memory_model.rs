//! What the driver model predicts for each recorded trace: peak used / peak
//! live, driver calls and estimated driver time, per driver route and
//! policy. `cargo run --release -p streamcore-mock --example memory_model
//! [TRACE...]` (default: the four traces in `tests/traces`).

use std::path::PathBuf;

use streamcore::memory::{MemoryLayout, MemoryPolicy};
use streamcore::platform::DeviceProperties;
use streamcore_mock::replay::{DriverModel, ReplayOptions, StreamcoreTarget, Trace, replay};

fn main() {
    let mut paths: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/traces");
        for name in [
            "gpt2_train",
            "resnet50_train",
            "llama_decode",
            "two_stream_pipeline",
        ] {
            paths.push(dir.join(format!("{name}.jsonl.gz")));
        }
    }
    let props = DeviceProperties {
        total_memory: 141_000_000_000,
        max_page_size: 141_000_000_000 / 4,
        alignment: 256,
        integrated: false,
    };
    let base = MemoryLayout::for_device(&props);
    let knobs: Vec<(&str, MemoryPolicy)> = vec![
        ("default", *base.policy()),
        (
            "bytes",
            MemoryPolicy::favouring(streamcore::memory::Favour::Bytes),
        ),
        (
            "time",
            MemoryPolicy::favouring(streamcore::memory::Favour::Time),
        ),
    ];
    println!(
        "{:<22} {:<7} {:<8} {:>7} {:>7} {:>7} {:>7} {:>6} {:>9} {:>9}",
        "trace",
        "route",
        "policy",
        "ratio",
        "allocs",
        "commits",
        "decomm",
        "syncs",
        "driver ms",
        "books ms"
    );
    for path in &paths {
        let trace = match Trace::load(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                continue;
            }
        };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .trim_end_matches(".jsonl.gz");
        for model in [DriverModel::Books, DriverModel::Malloc, DriverModel::Vmm] {
            for (knob, policy) in &knobs {
                if model == DriverModel::Books && *knob != "default" {
                    continue;
                }
                let layout = base.with_policy(*policy).expect("valid policy");
                let mut t = StreamcoreTarget::new(layout, 256).with_model(model);
                match replay(&trace, &mut t, ReplayOptions::default()) {
                    Ok(r) => println!(
                        "{:<22} {:<7} {:<8} {:>7.4} {:>7} {:>7} {:>7} {:>6} {:>9.2} {:>9.2}",
                        name,
                        model.name(),
                        knob,
                        r.ratio(),
                        r.storage.allocs,
                        r.storage.commits,
                        r.storage.decommits,
                        r.storage.syncs,
                        r.driver_ms(),
                        r.elapsed_ns as f64 / 1e6
                    ),
                    Err(e) => println!("{name:<22} {:<7} {knob:<8} failed: {e}", model.name()),
                }
            }
        }
    }
}
