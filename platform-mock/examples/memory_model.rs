//! What the driver model predicts: peak used / peak live, driver calls and
//! estimated driver time, per driver route and policy, for the recorded
//! traces and for synthetic ones the policy was not tuned on.
//!
//! `cargo run --release -p streamcore-mock --example memory_model [TRACE...]`
//! (default: the four traces in `tests/traces` and the synthetic set;
//! `--held-out`: the held-out synthetic set, `synthetic::held_out`;
//! `--seed N`: a fresh set drawn from seed `N`, `synthetic::fresh`).
//! `driver ms` is the estimated driver time, `wall ms` the predicted wall
//! time of the replay on the H200 (`DriverTable::predicted_wall_ms`: the
//! driver time plus the host's share per event), `books ms` the
//! bookkeeping measured here.

use std::path::PathBuf;
use std::process::ExitCode;

use streamcore::memory::{Favour, MemoryLayout, MemoryPolicy};
use streamcore_mock::replay::{
    DriverModel, H200, H200_PROPERTIES, ReplayOptions, StreamcoreTarget, Trace, replay, synthetic,
};

#[macro_use]
#[path = "support/out.rs"]
mod out;

fn main() -> ExitCode {
    let mut held_out = false;
    let mut seed = None;
    let mut args: Vec<PathBuf> = Vec::new();
    let mut argv = std::env::args().skip(1);
    while let Some(a) = argv.next() {
        match a.as_str() {
            "--held-out" => held_out = true,
            "--seed" => match argv.next().map(|n| n.parse::<u64>()) {
                Some(Ok(n)) => seed = Some(n),
                _ => {
                    eprintln!("usage: memory_model [--held-out | --seed N | TRACE...]");
                    return ExitCode::from(2);
                }
            },
            _ => args.push(PathBuf::from(a)),
        }
    }
    let synthetic_only = held_out || seed.is_some();
    let mut traces: Vec<(String, Trace)> = Vec::new();
    let paths = if synthetic_only {
        Vec::new()
    } else if args.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/traces");
        [
            "gpt2_train",
            "resnet50_train",
            "llama_decode",
            "two_stream_pipeline",
        ]
        .iter()
        .map(|n| dir.join(format!("{n}.jsonl.gz")))
        .collect()
    } else {
        args.clone()
    };
    for path in paths {
        match Trace::load(&path) {
            Ok(t) => {
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("?")
                    .trim_end_matches(".jsonl.gz")
                    .to_string();
                traces.push((name, t));
            }
            Err(e) => eprintln!("{}: {e}", path.display()),
        }
    }
    if let Some(seed) = seed {
        traces.extend(synthetic::fresh(seed));
    } else if held_out {
        traces.extend(synthetic::held_out());
    } else if args.is_empty() {
        traces.extend(synthetic::workloads());
    }
    let base = MemoryLayout::for_device(&H200_PROPERTIES);

    // "touch": the default policy with every allocation touched by a
    // command on its stream and freed in stream order, as
    // `streamcore replay --platform hip --touch` does.
    let knobs = [
        ("default", *base.policy(), false),
        ("touch", *base.policy(), true),
        ("bytes", MemoryPolicy::favouring(Favour::Bytes), false),
        ("time", MemoryPolicy::favouring(Favour::Time), false),
    ];
    outln!(
        "{:<22} {:<6} {:<8} {:>7} {:>7} {:>7} {:>7} {:>6} {:>5} {:>9} {:>9} {:>9}",
        "trace",
        "route",
        "policy",
        "ratio",
        "allocs",
        "commits",
        "decomm",
        "syncs",
        "waits",
        "driver ms",
        "wall ms",
        "books ms"
    );
    for (name, trace) in &traces {
        for model in [DriverModel::Books, DriverModel::Malloc, DriverModel::Vmm] {
            for &(knob, policy, ordered) in &knobs {
                if model != DriverModel::Vmm && knob != "default" {
                    continue;
                }
                let layout = base.with_policy(policy).expect("valid policy");
                let mut t = StreamcoreTarget::new(layout, 256).with_model(model);
                if ordered {
                    t = t.ordered();
                }
                match replay(trace, &mut t, ReplayOptions::default()) {
                    Ok(r) => outln!(
                        "{:<22} {:<6} {:<8} {:>7.4} {:>7} {:>7} {:>7} {:>6} {:>5} {:>9.2} {:>9.2} {:>9.2}",
                        name,
                        model.name(),
                        knob,
                        r.ratio(),
                        r.storage.allocs,
                        r.storage.commits,
                        r.storage.decommits,
                        r.storage.syncs,
                        t.waits(),
                        r.driver_ms(),
                        H200.predicted_wall_ms(r.events, r.storage.driver_ns),
                        r.elapsed_ns as f64 / 1e6
                    ),
                    Err(e) => outln!("{name:<22} {:<6} {knob:<8} failed: {e}", model.name()),
                }
            }
        }
    }
    ExitCode::SUCCESS
}
