//! The replay driver: peaks and hooks, failures naming their event, the
//! recorded traces' ratios, the counting storage's charges and the driver
//! model's figures.

use super::*;

#[test]
fn replay_measures_peaks_and_calls_the_hooks() {
    let trace = parse(&lines(&[
        r#"{"op":"alloc","id":1,"size":1048576,"stream":0}"#,
        r#"{"op":"alloc","id":2,"size":2097152,"stream":1}"#,
        r#"{"op":"free","id":1}"#,
        r#"{"op":"alloc","id":3,"size":1048576,"stream":0}"#,
        r#"{"op":"free","id":3}"#,
        r#"{"op":"free","id":2}"#,
    ]))
    .unwrap();
    let mut progress = Vec::new();
    let mut samples = Vec::new();
    let mut on_progress = |done, total| progress.push((done, total));
    let mut on_sample = |s: Sample| samples.push(s);
    let mut target = StreamcoreTarget::new(small_layout(), 256).with_model(DriverModel::Books);
    let report = replay(
        &trace,
        &mut target,
        ReplayOptions {
            progress: Some(&mut on_progress),
            progress_every: 2,
            sampler: Some(&mut on_sample),
            sample_every: 1,
        },
    )
    .unwrap();
    assert_eq!(report.events, 6);
    assert_eq!(report.allocs, 3);
    assert_eq!(report.peak_live, 3 << 20);
    assert_eq!(
        report.peak_reserved,
        3 << 20,
        "the idle page is reused exactly"
    );
    assert_eq!(report.storage.allocs, 2);
    assert!((report.ratio() - 1.0).abs() < 1e-12);
    assert_eq!(progress, vec![(2, 6), (4, 6), (6, 6)]);
    let live: Vec<u64> = samples.iter().map(|s| s.live >> 20).collect();
    assert_eq!(live, vec![1, 3, 2, 3, 2, 0]);
    assert!(samples.iter().all(|s| s.reserved >= s.live));
    assert_eq!(target.managers().len(), 2, "one manager per stream");
    let text = std::format!("{report}");
    assert!(text.contains("reserved / live   1.000"), "{text}");
}

#[test]
fn replay_failures_name_the_event() {
    let trace = parse(&lines(&[
        r#"{"op":"alloc","id":1,"size":1048576,"stream":0}"#,
        r#"{"op":"alloc","id":2,"size":1048576,"stream":0}"#,
    ]))
    .unwrap();
    let mut target =
        StreamcoreTarget::with_accounting(small_layout(), 256, Accounting::with_capacity(1 << 20))
            .with_model(DriverModel::Books);
    let e = replay(&trace, &mut target, ReplayOptions::default()).unwrap_err();
    assert_eq!(e.event, 1);
    assert!(e.why.contains("out of memory"), "{e}");
}

/// A trace built by hand (its fields are public) with events a loader
/// would never produce is refused before anything is replayed, naming the
/// event: no panic, no table grown to a stream id.
#[test]
fn replay_refuses_events_a_loader_would_not_produce() {
    let alloc = |slot, stream| TraceEvent::Alloc {
        slot,
        size: 16,
        stream,
    };
    let cases: [(Vec<TraceEvent>, &str); 4] = [
        (vec![alloc(0, 0), alloc(3, 0)], "slot 3 is past"),
        (vec![alloc(0, 0), alloc(1, u32::MAX)], "stream 4294967295"),
        (vec![alloc(0, 0), alloc(0, 0)], "still live"),
        (vec![alloc(0, 0), TraceEvent::Free { slot: 1 }], "not live"),
    ];
    for (events, why) in cases {
        let trace = Trace {
            events,
            slots: 2,
            streams: 1,
            ..Default::default()
        };
        let mut target = StreamcoreTarget::new(small_layout(), 256);
        let e = replay(&trace, &mut target, ReplayOptions::default()).unwrap_err();
        assert_eq!(e.event, 1, "{e}");
        assert!(e.why.contains(why), "{e}");
        assert!(target.managers().is_empty(), "refused before replaying");
    }
}

/// The recorded traces, through the default layout over the pools' own
/// books (exact bytes): peak reserved / peak live at or below the targets (a
/// deterministic figure, not a timing).
#[test]
fn recorded_traces_meet_the_ratio_targets() {
    let dir = traces_dir();
    let props = H200_PROPERTIES;
    for (name, target) in [
        ("gpt2_train", 1.047),
        ("resnet50_train", 1.043),
        ("llama_decode", 1.043),
        ("two_stream_pipeline", 1.050),
    ] {
        let trace = Trace::load(dir.join(std::format!("{name}.jsonl.gz"))).unwrap();
        assert_eq!(
            trace.header.events,
            Some(trace.events.len() as u64),
            "{name}: header and events agree"
        );
        let mut t = StreamcoreTarget::new(MemoryLayout::for_device(&props), 256)
            .with_model(DriverModel::Books);
        let r = replay(&trace, &mut t, ReplayOptions::default()).unwrap();
        assert!(r.ratio() <= target, "{name}: {:.4} > {target}", r.ratio());
        assert!(r.ratio() >= 1.0, "{name}: reserved below live?");
        // Everything the trace frees is back in the pools.
        let live_left: u64 = t.reports().iter().map(|r| r.total().in_use).sum();
        let mut live = std::collections::HashMap::new();
        for e in &trace.events {
            match *e {
                TraceEvent::Alloc { slot, size, .. } => {
                    live.insert(slot, size);
                }
                TraceEvent::Free { slot } => {
                    live.remove(&slot);
                }
            }
        }
        assert_eq!(live_left, live.values().sum::<u64>(), "{name}");
    }
}

/// The counting storage charges what the driver charges: whole 2 MiB units
/// above 1 MiB, packed pages below, exact chunks on the virtual-memory
/// route, and the cost table's time for every call.
#[test]
fn the_counting_storage_charges_the_drivers_terms() {
    use streamcore::platform::Storage;
    let mib = 1u64 << 20;
    let acc = Accounting::new();
    let mut s = CountingStorage::with_model(acc.clone(), 256, DriverModel::Malloc);
    for (size, charged) in [
        (mib + mib / 2, 2 * mib),
        (3 * mib, 4 * mib),
        (5 * mib, 6 * mib),
    ] {
        let before = acc.held();
        let p = s.alloc(size).unwrap();
        assert_eq!(acc.held() - before, charged, "{size}");
        s.dealloc(p);
        s.flush().unwrap();
        assert_eq!(acc.held(), before);
    }
    // Below 1 MiB pages share granules: three of 512 KiB take 2 MiB.
    let small: Vec<_> = (0..3).map(|_| s.alloc(512 << 10).unwrap()).collect();
    assert_eq!(acc.held(), 2 * mib);
    let st = acc.stats();
    assert_eq!((st.allocs, st.deallocs, st.syncs), (6, 3, 3));
    let table = H200;
    let expected = [mib + mib / 2, 3 * mib, 5 * mib]
        .iter()
        .map(|&b| {
            table.malloc.of(b)
                + table
                    .free
                    .of(DriverModel::Malloc.terms(&table, 256).charge(b))
        })
        .sum::<u64>()
        + 3 * table.packed.of(512 << 10);
    assert_eq!(st.driver_ns, expected);
    for p in small {
        s.dealloc(p);
    }
    s.flush().unwrap();
    assert_eq!(acc.held(), 0);

    // The virtual-memory route: a reservation costs nothing held, chunks
    // cost their bytes until decommitted, at once.
    let acc = Accounting::new();
    let mut v = CountingStorage::with_model(acc.clone(), 256, DriverModel::Vmm);
    let r = v.reserve(64 * mib).unwrap();
    assert_eq!(acc.held(), 0);
    v.commit(r, 0, 6 * mib).unwrap();
    v.commit(r, 6 * mib, 2 * mib).unwrap();
    assert_eq!((acc.held(), v.committed(r)), (8 * mib, Some(8 * mib)));
    // Contract violations are refused, not charged.
    for (o, l) in [(mib, 2 * mib), (4 * mib, 2 * mib), (62 * mib, 4 * mib)] {
        let e = v.commit(r, o, l).unwrap_err();
        assert_eq!(
            e.kind,
            streamcore::platform::ErrorKind::InvalidValue,
            "{o}+{l}"
        );
    }
    assert!(v.decommit(r, 0, 2 * mib).is_err(), "not one earlier commit");
    v.decommit(r, 0, 6 * mib).unwrap();
    assert_eq!(acc.held(), 2 * mib);
    let st = acc.stats();
    assert_eq!(
        (st.reserves, st.commits, st.decommits, st.syncs),
        (1, 2, 1, 0)
    );
    // Each commit and decommit also pays its MiB squared (the driver's
    // price per MiB grows with the chunk): 245 ps per MiB squared.
    assert_eq!(table.chunk_squared_ns(6 * mib), 36 * 245 / 1000);
    assert_eq!(table.chunk_squared_ns(1024 * mib), 1024 * 1024 * 245 / 1000);
    assert_eq!(
        st.driver_ns,
        table.reserve.of(64 * mib)
            + table.commit.of(6 * mib)
            + table.commit.of(2 * mib)
            + table.decommit.of(6 * mib)
            + 2 * table.chunk_squared_ns(6 * mib)
            + table.chunk_squared_ns(2 * mib)
    );
    assert_eq!(st.committed_bytes, 8 * mib);
    assert_eq!(st.chunk_mib_squared, 6 * 6 + 2 * 2 + 6 * 6);
}

/// The counting storage's fresh-range figures (commits into granules their
/// reservation never mapped) against a naive model: one flag per granule,
/// cleared only by a new reservation, over random commit and decommit
/// sequences in two reservations.
#[test]
fn fresh_commits_count_granules_never_mapped_in_their_reservation() {
    use proptest::prelude::*;
    use streamcore::platform::Storage;
    let mib = 1u64 << 20;
    let g = 2 * mib;
    const GRANULES: u64 = 24;
    let ops = proptest::collection::vec((0..3u8, 0..2usize, 0..GRANULES, 1..6u64), 1..80);
    proptest!(ProptestConfig::with_cases(200), |(ops in ops)| {
        let acc = Accounting::new();
        let mut v = CountingStorage::with_model(acc.clone(), 256, DriverModel::Vmm);
        let mut pages = [v.reserve(GRANULES * g).unwrap(), v.reserve(GRANULES * g).unwrap()];
        // The model: per reservation, granules ever mapped and live chunks.
        let mut mapped = [[false; GRANULES as usize]; 2];
        let mut chunks: [Vec<(u64, u64)>; 2] = [Vec::new(), Vec::new()];
        let (mut fresh_commits, mut fresh_bytes) = (0u64, 0u64);
        for (op, r, at, len) in ops {
            match op {
                0 => {
                    let end = at + len;
                    let overlaps = chunks[r].iter().any(|&(o, l)| o < end && at < o + l);
                    let ok = v.commit(pages[r], at * g, len * g).is_ok();
                    prop_assert_eq!(ok, end <= GRANULES && !overlaps);
                    if ok {
                        let new = (at..end).filter(|&i| !mapped[r][i as usize]).count() as u64;
                        if new > 0 {
                            fresh_commits += 1;
                            fresh_bytes += new * g;
                        }
                        (at..end).for_each(|i| mapped[r][i as usize] = true);
                        chunks[r].push((at, len));
                    }
                }
                1 => {
                    if let Some((o, l)) = chunks[r].pop() {
                        v.decommit(pages[r], o * g, l * g).unwrap();
                    }
                }
                _ => {
                    // A new reservation in place of an empty one.
                    if chunks[r].is_empty() {
                        v.dealloc(pages[r]);
                        pages[r] = v.reserve(GRANULES * g).unwrap();
                        mapped[r] = [false; GRANULES as usize];
                    }
                }
            }
            let st = acc.stats();
            prop_assert_eq!((st.fresh_commits, st.fresh_committed_bytes), (fresh_commits, fresh_bytes));
        }
    });
}

/// What the driver model predicts for each recorded trace through the
/// default layout, held as figures (deterministic; the model's own time,
/// not a measurement): the H200's virtual-memory route and the `hipMalloc`
/// fallback. The virtual-memory figures are what the default targets on the
/// GPU (issue 11: peak used / live at or below gpt2 1.049, resnet50 1.012,
/// llama 1.032, two-stream 1.006; driver time under the driver pool's wall
/// time).
#[test]
fn the_driver_model_holds_its_figures_per_trace() {
    let dir = traces_dir();
    let props = H200_PROPERTIES;
    // (trace, model, ratio x 1e4, allocs (commits included), commits,
    // decommits, driver ms x 10). The virtual-memory route's driver ms
    // fell with the costs refitted in round 8 (gpt2 12.3, resnet50 6.1,
    // llama 2.8, two-stream 0.4 before; the same calls), and rose a little
    // with the squared part of round 24 (resnet50 6.1 -> 6.2, llama 2.6 ->
    // 2.7; the same calls). GPT-2 with
    // commits in pieces of 64 granules: 1.0184 for 275 commits and 43
    // decommits, 12.6 ms (whole chunks: 1.0220, 212 + 11, 9.5 ms).
    let expected: [(&str, DriverModel, u64, u64, u64, u64, u64); 8] = [
        // Carved pages at their exact size and commits that reach ahead
        // only within what pages and live data already needed: GPT-2 1.0220
        // (was 1.0293, 213 commits and 12 decommits, 12.3 ms, with pages
        // rounded to 1/128 and commits reaching into the trim headroom).
        // Round 9 (a large page's idle reservation trimmed to the trim
        // floor, and the others' commits not reaching into the room it
        // gave back): the same ratio for 276 commits. Round 24 (large
        // pages in the shared lane but for growing buffers' steps): 1.0451
        // for 267 commits and 40 decommits (1.0184, 276, 43 and 12.6 ms
        // before): its 785 MiB logits, best fit among the other pages,
        // strand more of the chunks they share (under its best peer's
        // 1.049 still).
        ("gpt2_train", DriverModel::Vmm, 10451, 267, 267, 40, 125),
        // ResNet-50: the same 1.0041 for 40 more commits (was 122 and no
        // decommit, 4.8 ms; 1.0048, 152 + 2 at 1/32 rounding). Round 22,
        // pages of 32 whole granules or more on granule boundaries: 1.0055
        // for 176 commits, 6.1 ms (still under its best peer's 1.0115).
        ("resnet50_train", DriverModel::Vmm, 10055, 176, 176, 2, 62),
        ("llama_decode", DriverModel::Vmm, 10174, 81, 81, 0, 27),
        ("two_stream_pipeline", DriverModel::Vmm, 10062, 9, 9, 0, 3),
        ("gpt2_train", DriverModel::Malloc, 10568, 778, 0, 0, 823),
        ("resnet50_train", DriverModel::Malloc, 10733, 635, 0, 0, 422),
        // Llama on the `hipMalloc` route: finer page sizes share fewer
        // pages, 4,635 calls where 1/32 rounding made 1,985.
        ("llama_decode", DriverModel::Malloc, 10621, 4635, 0, 0, 733),
        (
            "two_stream_pipeline",
            DriverModel::Malloc,
            10062,
            10,
            0,
            0,
            10,
        ),
    ];
    let mut got = Vec::new();
    for &(name, model, ..) in &expected {
        let trace = Trace::load(dir.join(std::format!("{name}.jsonl.gz"))).unwrap();
        let mut t = StreamcoreTarget::new(MemoryLayout::for_device(&props), 256).with_model(model);
        let r = replay(&trace, &mut t, ReplayOptions::default()).unwrap();
        got.push((
            name,
            model,
            (r.ratio() * 1e4).round() as u64,
            r.storage.allocs,
            r.storage.commits,
            r.storage.decommits,
            (r.driver_ms() * 10.0).round() as u64,
        ));
    }
    assert_eq!(got, expected);
}

/// The predicted wall time of a whole replay (driver time plus the host's
/// share per event, `DriverTable::predicted_wall_ms`) against the wall
/// times the H200 measured for the recorded traces through the default
/// layout (BENCHMARKS.md section 6, no touch, the fastest of 5 runs; the
/// first costs predicted 2-3x those walls, from 13.2 ms for ResNet-50's
/// 6.2). Within a fifth each: the run measured calls made under the first
/// costs, a few of which the fitted costs decide otherwise.
///
/// The walls since round 8: the fastest of the runs on 2026-12-02 that
/// made the same calls as the model (GPT-2 with commits in pieces of 64
/// granules: 917 driver calls, 14.7 ms in the one run of that policy;
/// ResNet-50 5.9 / 6.5 / 6.5, Llama 20.1 / 18.2 / 20.4 and two-stream
/// 0.4 / 0.4 / 0.5 ms, whose 491, 244 and 29 calls the pieces do not
/// change), predicted by the costs refitted to that day's 44 traces.
/// Before, 11.8, 6.2, 18.9 and 0.5 ms, predicted by the round-7 costs.
#[test]
fn the_driver_model_predicts_the_h200_walls() {
    let dir = traces_dir();
    let props = H200_PROPERTIES;
    for (name, measured_ms) in [
        ("gpt2_train", 14.7),
        ("resnet50_train", 5.9),
        ("llama_decode", 18.2),
        ("two_stream_pipeline", 0.4),
    ] {
        let trace = Trace::load(dir.join(std::format!("{name}.jsonl.gz"))).unwrap();
        let mut t = StreamcoreTarget::new(MemoryLayout::for_device(&props), 256);
        let r = replay(&trace, &mut t, ReplayOptions::default()).unwrap();
        let predicted = H200.predicted_wall_ms(r.events, r.storage.driver_ns);
        let error = predicted / measured_ms - 1.0;
        assert!(
            error.abs() <= 0.2,
            "{name}: predicted {predicted:.2} ms, the H200 measured {measured_ms} ms"
        );
    }
}

/// The held-out workloads are the ten families again, other traces: the
/// same count, other names, other events, generated alike every time.
#[test]
fn the_held_out_set_is_other_traces_of_the_same_families() {
    let seen = crate::replay::synthetic::workloads();
    let held = crate::replay::synthetic::held_out();
    assert_eq!(held.len(), seen.len());
    for ((sn, st), (hn, ht)) in seen.iter().zip(&held) {
        assert_eq!(
            sn.trim_start_matches("syn_"),
            hn.trim_start_matches("held_"),
            "the same family, in order"
        );
        assert_ne!(st.events, ht.events, "{hn}");
    }
    let again = crate::replay::synthetic::held_out();
    assert!(
        held.iter()
            .zip(&again)
            .all(|(a, b)| a.1.events == b.1.events)
    );
}

/// The same traces freed in stream order, as `streamcore replay --platform
/// hip --touch` frees them (each allocation touched by one command on its
/// stream): the figures of the default route are the untouched ones, the
/// managers waiting for their stream a few times before giving memory back
/// instead of fencing every free. GPT-2 moved when commits came in pieces
/// of at most 64 granules (1.0220, 212 commits, 11 decommits, 3 waits
/// with whole chunks), and again in round 9, when a large page's idle
/// reservation went back down to the trim floor (273 commits, 41
/// decommits before). ResNet-50 moved in round 22 (pages of 32 whole
/// granules or more on granule boundaries; 1.0041 for 162 commits before),
/// GPT-2 in round 24 (large pages in the shared lane but for growing
/// buffers' steps: 1.0184, 276 commits, 43 decommits, 4 waits before).
#[test]
fn frees_in_stream_order_keep_the_figures_with_a_few_waits() {
    let dir = traces_dir();
    let props = H200_PROPERTIES;
    // (trace, ratio x 1e4, commits, decommits, waits)
    let expected: [(&str, u64, u64, u64, u64); 4] = [
        ("gpt2_train", 10451, 268, 39, 5),
        ("resnet50_train", 10055, 176, 2, 2),
        ("llama_decode", 10174, 81, 0, 0),
        ("two_stream_pipeline", 10062, 9, 0, 0),
    ];
    let mut got = Vec::new();
    for &(name, ..) in &expected {
        let trace = Trace::load(dir.join(std::format!("{name}.jsonl.gz"))).unwrap();
        let mut t = StreamcoreTarget::new(MemoryLayout::for_device(&props), 256).ordered();
        let r = replay(&trace, &mut t, ReplayOptions::default()).unwrap();
        got.push((
            name,
            (r.ratio() * 1e4).round() as u64,
            r.storage.commits,
            r.storage.decommits,
            t.waits(),
        ));
    }
    assert_eq!(got, expected);
}

/// Workloads the policy was not tuned on (`replay::synthetic`), through
/// the pools' own books, the `hipMalloc` route and the default
/// virtual-memory route, held as figures (deterministic). Where they stand
/// against each other is in BENCHMARKS.md section 3.
///
/// Moved with the churn budget (before: vmm ratio, commits + decommits,
/// driver ms): growing cache 1.0117, 389 + 345, 224.5 ms; random 1.0548,
/// 1,174 + 765, 120.8 ms; three streams 1.1465, 829 + 743, 121.3 ms; huge
/// transients 1.0160, 138 + 7, 13.6 ms; serving 1.0950, 3,914 + 3,645,
/// 1,062.6 ms; pinned fragments 1.0676, 565 + 404, 58.4 ms: a fraction of
/// the calls, for more bytes on the irregular ones (where each stands
/// against the driver's pool on the H200: BENCHMARKS.md section 6). The
/// last two workloads were added with the budget and not tuned on (before
/// it: 1.1094, 568 + 233, 80.9 ms and 1.0111, 360 + 296, 553.6 ms).
///
/// Moved again when the default budget went from 500 ns + 150 ns/MiB to
/// 850 + 800, chosen by a sweep of both parts for the most rows at or below
/// the best peer's bytes and the driver pool's wall on the H200 (the
/// figures under 500 + 150, same order: growing cache 179 + 135, 53.1 ms;
/// random 1.1456, 66 + 16, 6.9 ms; three streams 1.2729, 51 + 12, 6.2 ms;
/// serving 1.1406, 537 + 238, 115.5 ms; pinned fragments 39 + 3, 3.3 ms;
/// random b 1.3479, 99 + 28, 15.8 ms; growing pair 1.0775, 387 + 344,
/// 529.6 ms).
///
/// Moved again when the driver model's costs were fitted to whole replays
/// on the H200 (about half the first calibration's), pages were rounded to
/// 1/128 of their size instead of 1/32 and the default budget went back to
/// 500 + 150 (chosen by a sweep under the fitted costs, checked on the
/// held-out set). The vmm figures under 850 + 800, 1/32 and the first
/// costs, same order: 1.0109; 1.0117, 279 + 226; 1.1180, 140 + 61;
/// 1.2616, 197 + 131; 1.0160, 141 + 7; 1.0042; 1.1460, 1,231 + 969;
/// 1.1297, 54 + 15; 1.2964, 167 + 71; 1.0585, 516 + 452 (the driver ms
/// of the first costs, 2-3x what the H200 showed).
///
/// Moved again when pages carved from reservations took their exact size
/// (the 1/128 classes stay for pages of their own) and a commit in the
/// shared reservations stopped reaching ahead into the trim headroom
/// (reached-ahead memory no page used was stranded by the page that did).
/// The vmm figures before, same order: 1.0034, 241 + 0; 1.0032,
/// 206 + 160; 1.1877, 92 + 37; 1.1759, 177 + 97; 1.0070, 142 + 8;
/// 1.0016, 270 + 0; 1.1391, 363 + 200, 30.3 ms; 1.0560, 43 + 4; 1.3676,
/// 120 + 40; 1.0113, 473 + 429, 198.4 ms.
///
/// Moved again when large carved pages took whole granules (exact sizes
/// had let two of them share one, stranding the chunk of the page before):
/// growing cache 253 + 197, 21.7 ms before.
///
/// Moved again when a page committed in several gaps stopped reaching past
/// its end by the earlier gaps' size (the step's surplus is measured over
/// all the gaps); before, same order: three streams 153 + 85, 8.8 ms;
/// serving 1.1125, 1,088 + 778, 96.0 ms; random b 1.2734, 117 + 43,
/// 6.7 ms; growing pair 1.0624, 462 + 418, 195.6 ms.
///
/// Moved again when a large page came to be carved at the start of the
/// empty reservation with most of it committed (not best fit, behind a
/// live page) and large-page reservations to twice the page (not 1.5x);
/// before, same order: growing cache 228 + 181, 20.7 ms; growing pair
/// 1.0072, 500 + 444, 182.9 ms. On the H200 the growing pair's wall went
/// from 194.6 ms to 50.7 ms (BENCHMARKS.md section 3, round 8).
///
/// Moved again when the commit and decommit costs were refitted to the
/// H200's walls of all 44 traces (32 µs + 0.13 µs/MiB and 33 µs +
/// 0.19 µs/MiB, from 33 + 0.25 and 18 + 0.5): the churn budget prices
/// small round trips higher and large ones lower. Before, same order:
/// three phases 8.7 ms; growing cache 228 + 186, 20.0 ms; random
/// lifetimes 1.1261, 105 + 51, 5.3 ms; three streams 1.1691, 157 + 83,
/// 8.9 ms; huge transients 6.0 ms; transformer steps 10.9 ms; serving
/// 1.1146, 1,057 + 732, 91.7 ms; pinned fragments 39 + 4; random b 36
/// decommits, 6.0 ms; growing pair 461 + 359, 76.1 ms.
///
/// Moved again when commits came in pieces of at most 64 granules (whole
/// chunks before): before, same order: growing cache 243 + 201, 18.6 ms;
/// huge transients 143 + 9, 5.4 ms; transformer steps 295 commits,
/// 10.0 ms; serving 1.1318, 606 + 323, 40.8 ms; random b 1.2738, 107 +
/// 32, 5.5 ms; growing pair 1.0070, 460 + 358, 50.6 ms.
///
/// Moved again in round 9: the idle chunks of a large page's own
/// reservation go back once a commit would pass the trim floor (the
/// headroom no longer keeps them), a large page's commit reaches no
/// further than the floor, and the others' commits do not reach into the
/// room a large page gave back. Before, same order: growing cache 300 +
/// 219, 20.9 ms; huge transients 1.0057, 152 + 12, 5.6 ms; growing pair
/// 1.0076, 718 + 599, 61.3 ms.
///
/// Moved in round 10: a large page's commit past the trim floor gives the
/// shared lane's idle chunks back first (they cannot serve it). Before,
/// same order: growing cache 308 + 228, 21.5 ms; growing pair 807 + 691,
/// 70.3 ms.
///
/// Moved in round 22: pages of 32 whole granules or more go on granule
/// boundaries. Before, same order: growing cache 309 + 228, 21.4 ms;
/// serving 1.0697, 1353 + 1054, 102.6 ms (its placement is chaotic: over
/// 120 fresh serving workloads as many ratios went down as up, the
/// geometric mean unchanged, BENCHMARKS.md section 6); growing pair
/// 766 + 661, 66.3 ms.
///
/// Moved in round 24: large pages in the shared lane but for growing
/// buffers' steps (whose first two steps land there too). Before, same
/// order: growing cache 297 + 217, 20.7 ms; huge transients 151 + 14,
/// 5.8 ms; growing pair 769 + 654, 65.7 ms.
///
/// Moved in round 26: trimming settles once a chunk it gave back came
/// back twice (`MemoryPolicy::round_trip_window`). Before: serving 1137
/// + 913, 90.0 ms (the same bytes).
///
/// Moved in round 27: past a quarter of the live peak idle, trimming takes
/// idle chunks the churn budget does not cover (`idle_cap_shift`).
/// Before: growing cache 288 + 207, 21.0 ms; pinned fragments 40 + 5;
/// random lifetimes b 1.2426, 142 + 49, 7.4 ms; growing pair 765 + 655,
/// 69.9 ms.
#[test]
fn the_driver_model_holds_its_figures_on_unseen_workloads() {
    // (workload, ratio x 1e4 books, malloc, vmm; vmm commits, decommits,
    // driver ms x 10)
    let expected: [(&str, u64, u64, u64, u64, u64, u64); 10] = [
        ("syn_three_phases", 10078, 10933, 10005, 247, 0, 82),
        ("syn_growing_cache", 10022, 10048, 10005, 273, 205, 210),
        ("syn_random_lifetimes", 10078, 10889, 10889, 165, 74, 84),
        ("syn_three_streams", 10779, 11149, 11601, 173, 88, 96),
        ("syn_huge_transients", 10078, 11334, 10006, 137, 0, 46),
        ("syn_transformer_steps", 10078, 10985, 10007, 304, 0, 104),
        ("syn_serving", 10325, 10504, 11195, 1103, 877, 874),
        ("syn_pinned_fragments", 10076, 10637, 10404, 39, 3, 15),
        ("syn_random_lifetimes_b", 10078, 10345, 12412, 136, 43, 70),
        ("syn_growing_pair", 10053, 10068, 10001, 777, 667, 710),
    ];
    let workloads = crate::replay::synthetic::workloads();
    assert_eq!(workloads.len(), expected.len(), "every workload is held");
    let mut got = Vec::new();
    for &(name, ..) in &expected {
        let (_, trace) = workloads
            .iter()
            .find(|(n, _)| n == name)
            .expect("a synthetic workload");
        let mut ratio = [0u64; 3];
        let mut calls = (0, 0, 0);
        for (k, model) in [DriverModel::Books, DriverModel::Malloc, DriverModel::Vmm]
            .into_iter()
            .enumerate()
        {
            let mut t = StreamcoreTarget::new(h200_layout(), 256).with_model(model);
            let r = replay(trace, &mut t, ReplayOptions::default()).unwrap();
            ratio[k] = (r.ratio() * 1e4).round() as u64;
            calls = (
                r.storage.commits,
                r.storage.decommits,
                (r.driver_ms() * 10.0).round() as u64,
            );
        }
        got.push((
            name, ratio[0], ratio[1], ratio[2], calls.0, calls.1, calls.2,
        ));
    }
    assert_eq!(got, expected);
}

/// The default layout of the H200 the model replays against.
fn h200_layout() -> MemoryLayout {
    MemoryLayout::for_device(&H200_PROPERTIES)
}

/// The synthetic workload (`synthetic::workloads`) of that name.
fn workload(name: &str) -> Trace {
    crate::replay::synthetic::workloads()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t)
        .expect("a synthetic workload")
}

/// The churn budget bounds the decommits a manager makes by choice: on the
/// workloads of random sizes (one stream, no page large enough for a
/// reservation of its own, so every decommit is one by choice) what the
/// decommits and the commits they set up cost, by the driver's fixed costs
/// alone, stays within what the reserves earned. Before the budget the
/// strand guard and trimming made 765 decommits on the first (76 ms of
/// round trips against the 7 ms a budget of 500 ns + 150 ns/MiB earned).
#[test]
fn decommits_by_choice_stay_within_what_the_reserves_earned() {
    let budget = MemoryPolicy::default().churn_budget;
    let table = crate::replay::H200;
    for name in ["syn_random_lifetimes", "syn_random_lifetimes_b"] {
        let trace = workload(name);
        assert_eq!(trace.streams, 1);
        let (mut reserves, mut requested) = (0u64, 0u64);
        for e in &trace.events {
            if let TraceEvent::Alloc { size, .. } = e {
                assert!(*size < 512 << 20, "no page of its own reservation");
                reserves += 1;
                requested += size;
            }
        }
        let earned = reserves * budget.per_reserve_ns + (requested >> 20) * budget.per_mib_ns;
        let mut t = StreamcoreTarget::new(h200_layout(), 256).with_model(DriverModel::Vmm);
        let r = replay(&trace, &mut t, ReplayOptions::default()).unwrap();
        let round_trip = table.decommit.fixed_ns + table.commit.fixed_ns;
        let spent = r.storage.decommits * round_trip;
        assert!(
            spent <= earned,
            "{name}: {} decommits cost at least {spent} ns, {earned} ns earned",
            r.storage.decommits
        );
        assert!(r.storage.decommits > 0, "{name}: trimming still happens");
    }
}

/// A buffer that grows (a new, larger one, then the old one freed) lands
/// in the reservation before last, over its committed chunks: the bytes
/// committed over the whole run stay within a few times the peak, where a
/// reservation sized to each page made every step commit the whole buffer
/// again (75 GiB committed for a 5 GiB peak).
#[test]
fn a_growing_buffer_commits_its_growth_not_itself() {
    let trace = workload("syn_growing_cache");
    let mut t = StreamcoreTarget::new(h200_layout(), 256).with_model(DriverModel::Vmm);
    let r = replay(&trace, &mut t, ReplayOptions::default()).unwrap();
    assert!(
        r.storage.committed_bytes <= 4 * r.peak_live,
        "{} bytes committed over the run for a peak of {}",
        r.storage.committed_bytes,
        r.peak_live
    );
}

/// Trimming's search for an idle chunk to give back is not blinded by the
/// chunks the churn budget refuses: with commits in one-granule pieces
/// (hundreds of small idle chunks, each refused), a growing buffer's idle
/// reservation (given back free of the budget) is still found behind them.
/// When refused chunks used up the search, trimming settled at 2.64 times
/// the live peak on this workload.
#[test]
fn refused_chunks_do_not_hide_one_trimming_may_give_back() {
    let trace = workload("syn_growing_cache");
    let base = h200_layout();
    let layout = base
        .with_policy(MemoryPolicy {
            commit_piece_granules: 1,
            ..*base.policy()
        })
        .unwrap();
    let mut t = StreamcoreTarget::new(layout, 256).with_model(DriverModel::Vmm);
    let r = replay(&trace, &mut t, ReplayOptions::default()).unwrap();
    assert!(r.ratio() < 1.25, "held / live {:.4}", r.ratio());
}
