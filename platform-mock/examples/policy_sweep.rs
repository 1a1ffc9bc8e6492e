//! One policy through the driver model, on every trace set: for a sweep
//! of the default policy's settings (which of them moves what).
//!
//! `cargo run --release -p streamcore-mock --example policy_sweep -- [SETTINGS] [--seeds A..B] [TRACE...]`
//!
//! `SETTINGS` changes the default policy, comma-separated `name=value`:
//! `trim` (trim headroom shift), `step` (commit step shift), `large`
//! (large page granules), `fit` (fit slack shift), `round` (page rounding
//! shift), `reserve_ns` and `mib_ns` (the churn budget's parts), `split`
//! (0 or 1), `piece` (commit piece granules, 0: no limit), `guard` (the
//! strand guard: 0 off, 1 adaptive, 2 on), `align` (pages of at least this many
//! whole granules on granule boundaries, 0: never), `shed` (shed partial idle chunks leaving this many granules
//! unused, 0: off), `share` (large pages behind live ones over committed
//! granules: 0 or 1), `keep` (keep large pages' bare reservations: 0 or
//! 1), `space` (large pages in the shared lane but for growing buffers'
//! steps: 0 or 1), `small` (pages below one granule in a lane of their
//! own: 0 or 1), `rt` (the round-trip window in reserves, 0: off), `idle`
//! (the idle cap's shift, 64: no cap). Prints one
//! line per trace and touch mode (the recorded traces,
//! `synthetic::workloads`, `synthetic::held_out` and the fresh sets of
//! seeds 7919 and 104729; with `--seeds A..B`, the fresh sets of seeds
//! `A` to `B` instead, for a check on workloads no choice was judged on;
//! with `TRACE` files, `.jsonl.gz` or `.jsonl`, those traces instead, named
//! as `streamcore replay` names them: the header's workload, else the file
//! name):
//! name, touch (`no` / `yes`), peak used over peak live on the
//! virtual-memory route, the predicted H200 wall in ms
//! (`DriverTable::predicted_wall_ms`) and the commits. The ratios are
//! the ones the H200 shows for the same policy (BENCHMARKS.md section 6);
//! the walls are estimates. With `--calls`, each line goes on with what
//! the estimate is made of (for fitting the driver table to the H200's
//! measured walls): reserves, committed MiB, decommits, decommitted MiB,
//! events, the commits into never-mapped granules of their reservation
//! with those granules' MiB, and the sum of every commit's and decommit's
//! MiB squared (`scripts/fit_squared_term.py` reads them).

use std::path::PathBuf;
use std::process::ExitCode;

use streamcore::memory::{MemoryLayout, MemoryPolicy, StrandGuard};
use streamcore_mock::replay::{
    DriverModel, H200, H200_PROPERTIES, ReplayOptions, StreamcoreTarget, Trace, replay, synthetic,
};

#[macro_use]
#[path = "support/out.rs"]
mod out;

/// `policy` with `settings` applied, or why not.
fn apply(mut policy: MemoryPolicy, settings: &str) -> Result<MemoryPolicy, String> {
    for kv in settings.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("{kv}: not name=value"))?;
        let v: u64 = v
            .parse()
            .map_err(|_| format!("{kv}: not a non-negative integer"))?;
        let small = || u32::try_from(v).map_err(|_| format!("{kv}: too large"));
        match k {
            "trim" => policy.trim_headroom_shift = small()?,
            "step" => policy.commit_step_shift = small()?,
            "large" => policy.large_page_granules = small()?.max(1),
            "fit" => policy.fit_slack_shift = small()?,
            "round" => policy.page_rounding_shift = small()?,
            "reserve_ns" => policy.churn_budget.per_reserve_ns = v,
            "mib_ns" => policy.churn_budget.per_mib_ns = v,
            "split" => policy.split_boundaries = v != 0,
            "piece" => policy.commit_piece_granules = small()?,
            "align" => policy.aligned_page_granules = small()?,
            "shed" => policy.shed_partial_granules = small()?,
            "share" => policy.share_large_reservations = v != 0,
            "keep" => policy.keep_bare_reservations = v != 0,
            "space" => policy.large_page_space = v != 0,
            "small" => policy.small_page_lane = v != 0,
            "rt" => policy.round_trip_window = v as u32,
            "idle" => policy.idle_cap_shift = small()?,
            "guard" => {
                policy.strand_guard = match v {
                    0 => StrandGuard::Off,
                    1 => StrandGuard::Adaptive,
                    2 => StrandGuard::On,
                    _ => return Err(format!("{kv}: 0 (off), 1 (adaptive) or 2 (on)")),
                }
            }
            _ => return Err(format!("{k}: no such setting")),
        }
    }
    Ok(policy)
}

fn main() -> ExitCode {
    let mut settings = String::new();
    let mut seeds: Vec<u64> = Vec::new();
    let mut calls = false;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut argv = std::env::args().skip(1);
    while let Some(a) = argv.next() {
        if a == "--calls" {
            calls = true;
        } else if a == "--seeds" {
            let range = argv.next().unwrap_or_default();
            let parsed = range.split_once("..").and_then(|(first, last)| {
                Some((first.parse::<u64>().ok()?, last.parse::<u64>().ok()?))
            });
            match parsed {
                Some((first, last)) if first <= last => seeds.extend(first..=last),
                _ => {
                    eprintln!("policy_sweep: --seeds takes FIRST..LAST, not {range:?}");
                    return ExitCode::from(2);
                }
            }
        } else if a.ends_with(".jsonl.gz") || a.ends_with(".jsonl") {
            files.push(PathBuf::from(a));
        } else {
            settings = a;
        }
    }
    let base = MemoryLayout::for_device(&H200_PROPERTIES);
    let layout = match apply(*base.policy(), &settings).map(|p| base.with_policy(p)) {
        Ok(Ok(l)) => l,
        Ok(Err(e)) => {
            eprintln!("policy_sweep: the policy was refused: {e}");
            return ExitCode::from(2);
        }
        Err(why) => {
            eprintln!("policy_sweep: {why}");
            return ExitCode::from(2);
        }
    };
    let mut traces: Vec<(String, Trace)> = Vec::new();
    for path in &files {
        match Trace::load(path) {
            // Named as `streamcore replay` names its rows: the header's
            // workload, else the file name up to its first dot.
            Ok(t) => {
                let name = if t.header.workload.is_empty() {
                    let file = path.file_name().map(|n| n.to_string_lossy().into_owned());
                    let file = file.unwrap_or_default();
                    file.split('.').next().unwrap_or_default().to_owned()
                } else {
                    t.header.workload.clone()
                };
                traces.push((name, t));
            }
            Err(e) => {
                eprintln!("policy_sweep: {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    if seeds.is_empty() && files.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/traces");
        for n in [
            "gpt2_train",
            "resnet50_train",
            "llama_decode",
            "two_stream_pipeline",
        ] {
            match Trace::load(dir.join(format!("{n}.jsonl.gz"))) {
                Ok(t) => traces.push((n.to_string(), t)),
                Err(e) => {
                    eprintln!("policy_sweep: {n}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        traces.extend(synthetic::workloads());
        traces.extend(synthetic::held_out());
        traces.extend(synthetic::fresh(7919));
        traces.extend(synthetic::fresh(104729));
    }
    for &seed in &seeds {
        traces.extend(synthetic::fresh(seed));
    }
    for (name, trace) in &traces {
        for touch in [false, true] {
            let mut t = StreamcoreTarget::new(layout.clone(), 256).with_model(DriverModel::Vmm);
            if touch {
                t = t.ordered();
            }
            match replay(trace, &mut t, ReplayOptions::default()) {
                Ok(r) => {
                    let s = &r.storage;
                    out!(
                        "{name} {} {:.4} {:.2} {}",
                        if touch { "yes" } else { "no" },
                        r.ratio(),
                        H200.predicted_wall_ms(r.events, s.driver_ns),
                        s.commits
                    );
                    if calls {
                        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
                        out!(
                            " {} {:.1} {} {:.1} {} {} {:.1} {}",
                            s.reserves,
                            mib(s.committed_bytes),
                            s.decommits,
                            mib(s.decommitted_bytes),
                            r.events,
                            s.fresh_commits,
                            mib(s.fresh_committed_bytes),
                            s.chunk_mib_squared
                        );
                    }
                    outln!();
                }
                Err(e) => {
                    eprintln!("policy_sweep: {name}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    ExitCode::SUCCESS
}
