//! Replays the allocation traces through streamcore's memory managers and
//! through cubecl-server's `MemoryManagement`, side by side, with the same
//! byte accounting (a released page counts until its storage's flush).
//!
//! Usage: `peer-memory [--traces DIR] [--runs N]`

mod cubecl_side;

use std::time::Instant;

use streamcore::memory::{LayoutPreset, MemoryLayout};
use streamcore::platform::DeviceProperties;
use streamcore_mock::replay::{
    DriverModel, ReplayOptions, ReplayReport, ReplayTarget, StreamcoreTarget, Trace, replay,
};

use cubecl_server::memory_management::MemoryConfiguration;

const TRACES: [&str; 4] = [
    "gpt2_train",
    "resnet50_train",
    "llama_decode",
    "two_stream_pipeline",
];
/// The targets the memory issue sets (the best of PyTorch and CubeCL's two
/// layouts as reported there), per trace, in `TRACES` order.
const ISSUE_TARGETS: [f64; 4] = [1.047, 1.043, 1.043, 1.050];
/// The device the traces were recorded on (an H200): 141 GB, 256 B alignment.
const TOTAL_MEMORY: u64 = 141_000_000_000;
const ALIGNMENT: u64 = 256;
/// CubeCL's CUDA/HIP runtimes cap a page at a quarter of the device.
const MAX_PAGE: u64 = TOTAL_MEMORY / 4;

/// Replays `runs` times with fresh targets; keeps the fastest run (the byte
/// figures are the same every run, which is checked).
fn best_of<T: ReplayTarget>(
    trace: &Trace,
    runs: usize,
    mut make: impl FnMut() -> T,
) -> ReplayReport {
    let mut best: Option<ReplayReport> = None;
    for _ in 0..runs {
        let mut target = make();
        let r = replay(trace, &mut target, ReplayOptions::default())
            .unwrap_or_else(|e| panic!("replay failed: {e}"));
        drop(target);
        if let Some(b) = &best {
            assert_eq!(
                b.peak_reserved, r.peak_reserved,
                "replays differ between runs"
            );
            if r.elapsed_ns >= b.elapsed_ns {
                continue;
            }
        }
        best = Some(r);
    }
    best.expect("at least one run")
}

fn main() {
    let mut dir = String::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/traces"));
    let mut runs = 5usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--traces" => dir = args.next().expect("--traces DIR"),
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            other => {
                eprintln!("unknown argument {other}; usage: peer-memory [--traces DIR] [--runs N]");
                std::process::exit(2);
            }
        }
    }
    let props = DeviceProperties {
        total_memory: TOTAL_MEMORY,
        max_page_size: MAX_PAGE,
        alignment: ALIGNMENT,
        integrated: false,
    };
    let started = Instant::now();
    println!(
        "{:<20} {:<26} {:>13} {:>13} {:>7} {:>7} {:>7} {:>8} {:>9}",
        "trace",
        "allocator",
        "peak reserved",
        "peak live",
        "ratio",
        "allocs",
        "flushes",
        "ns/op",
        "ratio[1]"
    );
    let mut verdicts = Vec::new();
    for (name, issue_target) in TRACES.into_iter().zip(ISSUE_TARGETS) {
        let path = format!("{dir}/{name}.jsonl.gz");
        let trace = Trace::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let row = |who: &str, r: &ReplayReport| {
            println!(
                "{:<20} {:<26} {:>13} {:>13} {:>7.4} {:>7} {:>7} {:>8.1} {:>9.4}",
                name,
                who,
                r.peak_reserved,
                r.peak_live,
                r.ratio(),
                r.storage.allocs,
                r.storage.flushes,
                r.ns_per_op(),
                r.storage.peak_unreleased as f64 / r.peak_live as f64
            );
        };
        // Both sides count exact bytes (the pools' own books), as CubeCL's
        // counting storage does: the driver's granularity is not modelled here.
        let ours = best_of(&trace, runs, || {
            StreamcoreTarget::new(MemoryLayout::for_device(&props), ALIGNMENT)
                .with_model(DriverModel::Books)
        });
        row("streamcore (default)", &ours);
        let ours_excl = best_of(&trace, runs, || {
            StreamcoreTarget::new(
                MemoryLayout::preset(LayoutPreset::ExclusivePages, &props),
                ALIGNMENT,
            )
            .with_model(DriverModel::Books)
        });
        row("streamcore (exclusive)", &ours_excl);
        let adaptive = best_of(&trace, runs, || {
            cubecl_side::CubeclTarget::new(
                MemoryConfiguration::Adaptive,
                MAX_PAGE,
                ALIGNMENT,
                TOTAL_MEMORY,
            )
        });
        row("cubecl (adaptive)", &adaptive);
        let exclusive = best_of(&trace, runs, || {
            cubecl_side::CubeclTarget::new(
                MemoryConfiguration::ExclusivePages,
                MAX_PAGE,
                ALIGNMENT,
                TOTAL_MEMORY,
            )
        });
        row("cubecl (exclusive pages)", &exclusive);
        let pytorch = trace.header.recorder_ratio().unwrap_or(f64::INFINITY);
        println!(
            "{:<20} {:<26} {:>13} {:>13} {:>7.4}",
            name,
            "pytorch (header)",
            trace.header.peak_reserved_bytes.unwrap_or(0),
            trace.header.peak_allocated_bytes.unwrap_or(0),
            pytorch
        );
        let best_peer = issue_target
            .min(pytorch)
            .min(adaptive.ratio())
            .min(exclusive.ratio());
        verdicts.push((name, ours.ratio(), best_peer, ours.ns_per_op()));
    }
    println!();
    println!(
        "{:<20} {:>10} {:>10} {:>9}  verdict",
        "trace", "streamcore", "target", "ns/op"
    );
    let mut all = true;
    for (name, ours, peer, ns) in verdicts {
        let ok = ours <= peer && ns < 100.0;
        all &= ok;
        println!(
            "{name:<20} {ours:>10.4} {peer:>10.4} {ns:>9.1}  {}",
            if ok { "met" } else { "MISSED" }
        );
    }
    println!(
        "\n[1] diagnostic only: peak counting a released page only until its dealloc, not its flush"
    );
    println!(
        "targets {} (ratio at or below the issue's figure and the best of PyTorch and both CubeCL layouts measured here, under 100 ns/op); {runs} runs each, {:.1} s",
        if all { "met on every trace" } else { "missed" },
        started.elapsed().as_secs_f64()
    );
}
