//! What trimming keeps on the mock's device, with real workloads scaled to
//! its 64 KiB granules (every size over 32, as 2 MiB granules are to
//! 64 KiB): round trips that settle it, and the cap on what a spent churn
//! budget keeps idle. The manager's books stay the device's after every
//! event.

use super::placement::cleans_up;
use super::*;
use streamcore::memory::{MemoryLayout, MemoryManager, MemoryPolicy, MemoryReport};
use streamcore::platform::{Platform, StorageCosts};
use streamcore_mock::replay::{DriverModel, H200_PROPERTIES, Trace, TraceEvent};

/// What a scaled replay came to: commits, decommits, peak held over peak
/// live, the peak held, and the manager's report at the end.
struct Figures {
    commits: u64,
    decommits: u64,
    ratio: f64,
    peak_held: u64,
    report: MemoryReport,
}

/// Replays the held-out workload `name`, every size over 32, through a
/// manager over the device storage of a mock built from `mock` (virtual
/// memory of 64 KiB granules), the device's default policy changed by
/// `tweak`; checks the books against the device after every event and
/// that everything goes back once what the trace left live is freed.
fn scaled(
    name: &str,
    scale: u64,
    mock: MockConfig,
    tweak: impl FnOnce(&mut MemoryPolicy),
) -> Figures {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../tests/real_held_out/{name}.jsonl.gz"));
    let trace = Trace::load(path).unwrap();
    let r = rig(mock);
    let base = MemoryLayout::for_device(&r.mock.properties());
    let mut policy = *base.policy();
    tweak(&mut policy);
    let mut m = MemoryManager::new(
        r.mock.device_storage().unwrap(),
        base.with_policy(policy).unwrap(),
    );
    assert!(m.carves_pages());
    let mut slots = vec![None; trace.slots as usize];
    let (mut live, mut peak_live, mut peak_held) = (0u64, 0u64, 0u64);
    for e in &trace.events {
        match *e {
            TraceEvent::Alloc { slot, size, .. } => {
                let bytes = (size / scale).max(1);
                slots[slot as usize] = Some((m.reserve(bytes).unwrap().0, bytes));
                live += bytes;
                peak_live = peak_live.max(live);
            }
            TraceEvent::Free { slot } => {
                let (h, bytes) = slots[slot as usize].take().expect("a live slot");
                m.free(h).unwrap();
                live -= bytes;
            }
        }
        let held = r.mock.memory_used(MemoryKind::Device);
        assert_eq!(m.held_bytes(), held, "the books are the device's");
        peak_held = peak_held.max(held);
    }
    // What the trace left live goes too.
    for (h, _) in slots.into_iter().flatten() {
        m.free(h).unwrap();
    }
    let figures = Figures {
        commits: m.commits(),
        decommits: m.decommits(),
        ratio: peak_held as f64 / peak_live as f64,
        peak_held,
        report: m.report(),
    };
    cleans_up(&r, &mut m);
    figures
}

/// The held-out diffusion sampler: trimming's round trips settle as over
/// the driver model (`round_trip_window`), and the books stay the
/// device's through every settle.
#[test]
fn a_cycle_of_trims_settles_on_the_device() {
    let run = |window: u32| {
        // No call costs declared: the budget never binds, so the window
        // alone decides what trimming keeps.
        let device = config(3).storage_costs(StorageCosts::UNKNOWN);
        scaled("denoise_sampling", 32, device, |p| {
            p.round_trip_window = window
        })
    };
    // (commits, decommits, peak held / peak live); off: (146, 104,
    // 1.0615), on: (77, 36, 1.0929) when written.
    let off = run(0);
    let on = run(64);
    // The report says whether, and how often, a round trip settled it.
    assert_eq!(off.report.trimming.round_trip_settles, 0);
    assert!(
        on.report.trimming.round_trip_settles > 0,
        "no settle reported"
    );
    assert!(on.report.trimming.settled > 0 && on.report.trimming.settled <= on.peak_held);
    assert!(off.decommits >= 80, "the cycle trims: {}", off.decommits);
    assert!(
        on.decommits * 2 <= off.decommits,
        "settled: {} against {}",
        on.decommits,
        off.decommits
    );
    assert!(
        on.commits < off.commits,
        "fewer commits: {} against {}",
        on.commits,
        off.commits
    );
    // Settling keeps more, within its cap (1/32 of the live peak) and the
    // trim headroom (1/128).
    assert!(on.ratio >= off.ratio, "{} against {}", on.ratio, off.ratio);
    assert!(
        on.ratio <= off.ratio + 1.0 / 32.0 + 1.0 / 128.0,
        "{} against {}",
        on.ratio,
        off.ratio
    );
}

/// The held-out LSTM at full size on a device with the H200's properties
/// (whose storages declare the H200's call costs, the mock's default), so
/// the churn budget binds as over the driver: with no cap the spent budget keeps one phase's
/// memory under the next (1.1809 of the live peak); with the idle cap (the
/// default) trimming gives idle chunks back past the budget (1.0593), the
/// report counts them, and the books stay the device's through every one.
/// The mock's device and the driver model (the counting storage the
/// policy was chosen with) make the same calls for the same peak.
#[test]
fn the_idle_cap_acts_on_the_device() {
    use streamcore_mock::replay::{ReplayOptions, StreamcoreTarget, replay};
    let device = || {
        MockConfig::default()
            .seed(3)
            .properties(H200_PROPERTIES)
            .virtual_memory(2 * MIB)
    };
    let run = |shift: u32| {
        let on_device = scaled("lstm_seq2seq_train", 1, device(), |p| {
            p.idle_cap_shift = shift
        });
        // The same replay over the driver model.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/real_held_out/lstm_seq2seq_train.jsonl.gz");
        let layout = MemoryLayout::for_device(&H200_PROPERTIES);
        let policy = MemoryPolicy {
            idle_cap_shift: shift,
            ..*layout.policy()
        };
        let mut model = StreamcoreTarget::new(layout.with_policy(policy).unwrap(), 256)
            .with_model(DriverModel::Vmm);
        let r = replay(
            &Trace::load(path).unwrap(),
            &mut model,
            ReplayOptions::default(),
        )
        .unwrap();
        assert_eq!(
            (on_device.commits, on_device.decommits),
            (r.storage.commits, r.storage.decommits),
            "the device and the model make the same calls"
        );
        assert!((on_device.ratio - r.ratio()).abs() < 1e-9);
        on_device
    };
    let off = run(64);
    let on = run(MemoryPolicy::default().idle_cap_shift);
    assert_eq!(off.report.trimming.capped_decommits, 0);
    assert!(
        on.report.trimming.capped_decommits > 0,
        "the cap never acted"
    );
    assert!(
        off.ratio >= 1.15,
        "the spent budget keeps: {:.4}",
        off.ratio
    );
    assert!(on.ratio <= 1.07, "capped: {:.4}", on.ratio);
}
