//! Streams, events, copies, kernels, scheduling and determinism.

mod common;

use common::*;
use streamcore::platform::{
    DeviceProperties, ErrorKind, HostStorage, LaunchDims, Platform, Storage,
};
use streamcore_mock::schedule::{ChoicePoint, FnScheduler};
use streamcore_mock::{Call, LogEntry, LogOp, MemoryKind, MockConfig, MockPlatform};

/// The (stream, op) completion order of a log.
fn order(log: &[LogEntry]) -> Vec<(u32, u64)> {
    log.iter().map(|e| (e.stream, e.op)).collect()
}

#[test]
fn each_stream_completes_in_submission_order_under_every_seed() {
    for seed in 0..32 {
        let mut r = rig(MockConfig::default().seed(seed));
        let mut s0 = r.stream();
        let mut s1 = r.stream();
        let a = r.buffer(4);
        let b = r.buffer(4);
        r.fill(&mut s0, a, 1);
        r.fill(&mut s1, b, 2);
        let inc = r.kernel("inc");
        for _ in 0..5 {
            r.mock
                .launch(&mut s0, &inc, LaunchDims::linear(1, 4), &[read_write(a)])
                .unwrap();
            r.mock
                .launch(&mut s1, &inc, LaunchDims::linear(1, 4), &[read_write(b)])
                .unwrap();
        }
        r.mock.run_until_idle();
        let log = r.mock.event_log();
        assert_eq!(log.len(), 12);
        for s in [0, 1] {
            let ops: Vec<u64> = log.iter().filter(|e| e.stream == s).map(|e| e.op).collect();
            assert!(
                ops.windows(2).all(|w| w[0] < w[1]),
                "seed {seed}: stream {s} out of order: {ops:?}"
            );
        }
        assert_eq!(words_of(&r.mock.peek(a).unwrap()), vec![6; 4]);
        assert_eq!(words_of(&r.mock.peek(b).unwrap()), vec![7; 4]);
        r.mock.assert_no_hazards();
    }
}

#[test]
fn a_cross_stream_wait_orders_the_consumer_after_the_producer() {
    for seed in 0..32 {
        let mut r = rig(MockConfig::default().seed(seed));
        let mut producer = r.stream();
        let mut consumer = r.stream();
        let buf = r.buffer(8);
        let out = r.buffer(8);
        r.fill(&mut producer, buf, 7);
        let ready = r.mock.record(&mut producer).unwrap();
        r.mock.wait(&mut consumer, &ready).unwrap();
        r.mock.copy_device(&mut consumer, buf, out).unwrap();
        assert_eq!(r.download(&mut consumer, out), vec![7; 8], "seed {seed}");
        let log = r.mock.event_log();
        let fill_at = log
            .iter()
            .position(|e| matches!(e.what, LogOp::Launch { .. }))
            .unwrap();
        let copy_at = log
            .iter()
            .position(|e| matches!(e.what, LogOp::CopyDevice { .. }))
            .unwrap();
        assert!(fill_at < copy_at, "seed {seed}");
        r.mock.assert_no_hazards();
    }
}

#[test]
fn query_never_blocks_and_stays_true_synchronize_runs_the_device() {
    let mut r = rig(MockConfig::default().lazy());
    let mut s = r.stream();
    let buf = r.buffer(4);
    r.fill(&mut s, buf, 3);
    let e = r.mock.record(&mut s).unwrap();
    // The lazy scheduler runs nothing until the host waits.
    assert!(!r.mock.query(&e).unwrap());
    assert!(!r.mock.query(&e).unwrap());
    assert_eq!(r.mock.queued(&s), 2);
    r.mock.synchronize(&e).unwrap();
    assert!(r.mock.is_idle());
    for _ in 0..3 {
        assert!(r.mock.query(&e).unwrap());
    }
    assert_eq!(words_of(&r.mock.peek(buf).unwrap()), vec![3; 4]);
    let c = r.mock.counters();
    assert_eq!((c.queries, c.syncs, c.records, c.launches), (5, 1, 1, 1));

    // Eager: the event has passed by the time the host asks.
    let mut r = rig(MockConfig::default().eager());
    let mut s = r.stream();
    let buf = r.buffer(4);
    r.fill(&mut s, buf, 3);
    let e = r.mock.record(&mut s).unwrap();
    assert!(r.mock.query(&e).unwrap());
}

#[test]
fn synchronize_waits_only_as_far_as_needed_under_a_lazy_schedule() {
    let mut r = rig(MockConfig::default().lazy());
    let mut s0 = r.stream();
    let mut s1 = r.stream();
    let a = r.buffer(1);
    let b = r.buffer(1);
    r.fill(&mut s0, a, 1);
    let e0 = r.mock.record(&mut s0).unwrap();
    r.fill(&mut s0, a, 2);
    r.fill(&mut s1, b, 3);
    r.mock.synchronize(&e0).unwrap();
    // Lazy forced points pick the lowest ready stream: stream 0's fill, then
    // its record; the second fill and stream 1's work are still queued.
    assert_eq!(r.mock.queued(&s0), 1);
    assert_eq!(r.mock.queued(&s1), 1);
    assert_eq!(r.mock.event_log().len(), 2);
    assert!(r.mock.step());
    assert!(r.mock.step());
    assert!(!r.mock.step());
}

#[test]
fn copies_move_real_bytes_both_ways_and_between_pages() {
    let mut r = rig(MockConfig::default().seed(3));
    let mut s = r.stream();
    let src = r.upload(&mut s, &[1, 2, 3, 4, 5, 6]);
    let dst = r.buffer(6);
    r.mock
        .copy_device(&mut s, dr(src.page, 8, 16), dr(dst.page, 0, 16))
        .unwrap();
    r.mock
        .copy_device(&mut s, dr(src.page, 0, 8), dr(dst.page, 16, 8))
        .unwrap();
    assert_eq!(r.download(&mut s, dst), vec![3, 4, 5, 6, 1, 2]);
    r.mock.assert_no_hazards();
}

#[test]
fn kernel_closures_compute_on_the_bound_bytes() {
    let mut r = rig(MockConfig::default().seed(11));
    let mut s = r.stream();
    let a = r.upload(&mut s, &[1, 2, 3, 4]);
    let b = r.upload(&mut s, &[10, 20, 30, 40]);
    let out = r.buffer(4);
    let add = r.kernel("add");
    r.mock
        .launch(
            &mut s,
            &add,
            LaunchDims::linear(1, 4),
            &[read(a), read(b), write(out)],
        )
        .unwrap();
    assert_eq!(r.download(&mut s, out), vec![11, 22, 33, 44]);
    // Writes to a read-only binding are discarded.
    r.mock.register_kernel("scribble", |_, args| {
        args[0].bytes_mut().fill(0xff);
    });
    let scribble = r.kernel("scribble");
    r.mock
        .launch(&mut s, &scribble, LaunchDims::linear(1, 1), &[read(a)])
        .unwrap();
    assert_eq!(r.download(&mut s, a), vec![1, 2, 3, 4]);
    r.mock.assert_no_hazards();
}

#[test]
fn unknown_kernels_and_bad_arguments_are_typed_errors() {
    let mut r = rig(MockConfig::default());
    let mut s = r.stream();
    let err = r
        .mock
        .load_kernel(&streamcore::platform::KernelSource {
            name: "nope",
            source: "__global__ void nope() {}",
            bindings: 0,
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Kernel);
    let buf = r.buffer(4);
    let h = r.host.alloc(16).unwrap();
    let bad = [
        r.mock
            .copy_device(&mut s, buf, dr(buf.page, 8, 16))
            .unwrap_err(), // out of bounds + overlap
        r.mock
            .copy_device(&mut s, dr(buf.page, 0, 4), dr(buf.page, 2, 4))
            .unwrap_err(), // overlap
        r.mock
            .copy_to_device(&mut s, hr(h, 0, 8), dr(buf.page, 0, 4))
            .unwrap_err(), // lengths
        r.mock
            .copy_to_device(&mut s, hr(buf.page, 0, 4), dr(buf.page, 0, 4))
            .unwrap_err(), // kind
        r.mock
            .copy_to_host(
                &mut s,
                dr(streamcore::platform::PageId(999), 0, 4),
                hr(h, 0, 4),
            )
            .unwrap_err(),
        r.mock
            .copy_to_host(&mut s, dr(buf.page, u64::MAX, 2), hr(h, 0, 2))
            .unwrap_err(),
    ];
    for e in &bad {
        assert_eq!(e.kind(), ErrorKind::InvalidValue, "{e}");
    }
    let mut out = [0u8; 4];
    assert_eq!(
        r.host.read(h, 14, &mut out).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
    assert_eq!(
        r.host.write(buf.page, 0, &out).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
    // Handles of another platform are refused.
    let other = MockPlatform::new();
    let mut foreign = other.create_stream().unwrap();
    assert_eq!(
        other.record(&mut s).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
    let e = other.record(&mut foreign).unwrap();
    assert_eq!(
        r.mock.query(&e).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
    assert!(r.mock.is_idle(), "nothing was queued");
    assert_eq!(r.mock.counters().errors, 10);
    assert!(r.mock.calls().contains(&Call::Failed {
        op: "copy_device",
        kind: ErrorKind::InvalidValue
    }));
}

#[test]
fn storage_budget_alignment_and_out_of_memory() {
    let props = DeviceProperties {
        total_memory: 4096,
        max_page_size: 1024,
        alignment: 512,
        integrated: true,
    };
    let mock = MockPlatform::with_config(MockConfig::default().properties(props).host_memory(1024))
        .unwrap();
    assert_eq!(mock.properties(), props);
    let mut dev = mock.device_storage().unwrap();
    assert_eq!(dev.alignment(), 512);
    let a = dev.alloc(1).unwrap();
    let b = dev.alloc(3000).unwrap();
    assert_eq!(mock.memory_used(MemoryKind::Device), 512 + 3072);
    assert_eq!(dev.alloc(1024).unwrap_err().kind(), ErrorKind::OutOfMemory);
    assert_eq!(
        mock.memory_used(MemoryKind::Device),
        3584,
        "a failed alloc changes nothing"
    );
    dev.dealloc(a);
    assert_eq!(
        mock.memory_used(MemoryKind::Device),
        3584,
        "released only at flush"
    );
    dev.flush().unwrap();
    assert_eq!(mock.memory_used(MemoryKind::Device), 3072);
    let c = dev.alloc(1024).unwrap();
    assert!(c.0 > b.0, "page ids are never reused");
    let mut host = mock.host_storage().unwrap();
    assert_eq!(host.alloc(2048).unwrap_err().kind(), ErrorKind::OutOfMemory);
    assert!(MockPlatform::with_config(MockConfig::default().alignment(300)).is_err());
}

#[test]
fn dealloc_keeps_bytes_for_queued_work_and_flush_drains_it() {
    let mut r = rig(MockConfig::default().lazy());
    let mut s = r.stream();
    let src = r.upload(&mut s, &[9, 9]);
    let dst = r.buffer(2);
    r.mock.copy_device(&mut s, src, dst).unwrap();
    r.dev.dealloc(src.page);
    assert_eq!(r.dev.pending(), &[src.page]);
    assert_eq!(r.mock.queued(&s), 2);
    r.dev.flush().unwrap();
    assert!(r.mock.is_idle(), "the flush let queued work complete first");
    assert!(r.dev.pending().is_empty());
    assert_eq!(words_of(&r.mock.peek(dst).unwrap()), vec![9, 9]);
    r.mock.assert_no_hazards();
    assert_eq!(r.mock.counters().pages_released, 1);
}

fn racy_program(seed: u64) -> (Vec<LogEntry>, Vec<u32>, usize) {
    let mut r = rig(MockConfig::default().seed(seed));
    let mut s0 = r.stream();
    let mut s1 = r.stream();
    let mut s2 = r.stream();
    let a = r.buffer(16);
    let b = r.buffer(16);
    let out = r.buffer(16);
    r.fill(&mut s0, a, 1);
    r.fill(&mut s1, b, 2);
    let inc = r.kernel("inc");
    for _ in 0..3 {
        r.mock
            .launch(&mut s0, &inc, LaunchDims::linear(1, 16), &[read_write(a)])
            .unwrap();
        r.mock
            .launch(&mut s1, &inc, LaunchDims::linear(1, 16), &[read_write(b)])
            .unwrap();
    }
    let ea = r.mock.record(&mut s0).unwrap();
    let eb = r.mock.record(&mut s1).unwrap();
    r.mock.wait(&mut s2, &ea).unwrap();
    r.mock.wait(&mut s2, &eb).unwrap();
    let add = r.kernel("add");
    r.mock
        .launch(
            &mut s2,
            &add,
            LaunchDims::linear(1, 16),
            &[read(a), read(b), write(out)],
        )
        .unwrap();
    let result = r.download(&mut s2, out);
    (r.mock.event_log(), result, r.mock.hazards().len())
}

#[test]
fn the_same_seed_gives_a_bit_identical_event_log() {
    for seed in [0, 1, 42, u64::MAX] {
        let (log1, res1, h1) = racy_program(seed);
        let (log2, res2, h2) = racy_program(seed);
        assert_eq!(log1, log2);
        assert_eq!(res1, vec![9; 16]);
        assert_eq!(res1, res2);
        assert_eq!((h1, h2), (0, 0));
    }
}

#[test]
fn different_seeds_give_different_completion_orders() {
    let orders: std::collections::BTreeSet<Vec<(u32, u64)>> =
        (0..16).map(|seed| order(&racy_program(seed).0)).collect();
    assert!(orders.len() > 4, "only {} distinct orders", orders.len());
    // Times follow the schedule too, but the virtual clock is deterministic.
    let (log, _, _) = racy_program(5);
    assert!(log.windows(2).all(|w| w[0].time <= w[1].time));
}

#[test]
fn a_callback_scheduler_sees_every_choice_and_the_trace_records_it() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let sched = FnScheduler(move |p: &ChoicePoint<'_>| {
        sink.lock().unwrap().push((p.may_stop, p.ready.to_vec()));
        p.options() - 1 // always the highest ready stream
    });
    let mut r = rig(MockConfig::default().scheduler(Box::new(sched)));
    let mut s0 = r.stream();
    let mut s1 = r.stream();
    let a = r.buffer(1);
    let b = r.buffer(1);
    r.fill(&mut s0, a, 1);
    r.fill(&mut s1, b, 1); // point: may_stop, ready [0]: runs stream 0's fill
    r.mock.run_until_idle(); // forced: ready [1]
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, vec![(true, vec![0]), (false, vec![1])]);
    let trace = r.mock.choice_trace();
    assert_eq!(trace.len(), seen.len());
    assert!(trace.iter().all(|c| c.chosen < c.options));
    assert_eq!(order(&r.mock.event_log()), vec![(0, 0), (1, 1)]);
}

#[test]
fn counters_and_the_exact_call_sequence() {
    let mut r = rig(MockConfig::default().lazy());
    let mut s = r.stream();
    let buf = r.buffer(1);
    r.fill(&mut s, buf, 5);
    let e = r.mock.record(&mut s).unwrap();
    r.mock.synchronize(&e).unwrap();
    r.dev.dealloc(buf.page);
    r.dev.flush().unwrap();
    let calls = r.mock.take_calls();
    assert_eq!(
        calls,
        vec![
            Call::CreateStream { stream: 0 },
            Call::Alloc {
                memory: MemoryKind::Device,
                page: buf.page,
                size: 4
            },
            Call::LoadKernel {
                name: "fill".into()
            },
            Call::Launch {
                stream: 0,
                kernel: "fill".into()
            },
            Call::Record {
                stream: 0,
                event: 0
            },
            Call::Synchronize { event: 0 },
            Call::Dealloc {
                memory: MemoryKind::Device,
                page: buf.page
            },
            Call::Flush {
                memory: MemoryKind::Device,
                released: 1
            },
        ]
    );
    let c = r.mock.counters();
    assert_eq!(
        (
            c.streams,
            c.allocs,
            c.kernels_loaded,
            c.launches,
            c.records,
            c.syncs,
            c.deallocs,
            c.flushes,
            c.pages_released,
            c.commands_completed
        ),
        (1, 1, 1, 1, 1, 1, 1, 1, 1, 2)
    );
    assert!(r.mock.calls().is_empty(), "take_calls cleared the sequence");
}

#[test]
fn dropped_events_are_forgotten_once_nothing_needs_them() {
    let mut r = rig(MockConfig::default().lazy());
    let mut s0 = r.stream();
    let mut s1 = r.stream();
    let buf = r.buffer(1);
    r.fill(&mut s0, buf, 1);
    let e = r.mock.record(&mut s0).unwrap();
    r.mock.wait(&mut s1, &e).unwrap();
    drop(e);
    assert_eq!(r.mock.tracked_events(), 1, "a queued wait still needs it");
    r.mock.run_until_idle();
    assert_eq!(r.mock.tracked_events(), 0);
    assert_eq!(r.mock.counters().events_dropped, 1);
}

#[test]
fn virtual_time_follows_the_cost_model() {
    let costs = streamcore_mock::CostModel {
        launch_ns: 100,
        copy_base_ns: 10,
        copy_bytes_per_ns: 2,
        event_ns: 1,
    };
    let mut r = rig(MockConfig::default().lazy().costs(costs));
    let mut s = r.stream();
    let a = r.buffer(4);
    let b = r.buffer(4);
    r.fill(&mut s, a, 1);
    r.mock.copy_device(&mut s, a, b).unwrap();
    let e = r.mock.record(&mut s).unwrap();
    r.mock.synchronize(&e).unwrap();
    let times: Vec<u64> = r.mock.event_log().iter().map(|e| e.time).collect();
    assert_eq!(times, vec![100, 100 + 10 + 8, 119]);
    assert_eq!(r.mock.now(), 119);
}

#[test]
fn the_mock_is_send_sync_and_cheap_to_share() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<MockPlatform>();
    assert_send_sync::<streamcore_mock::MockStorage>();
    assert_send_sync::<streamcore_mock::MockHostStorage>();
    assert_send_sync::<streamcore_mock::MockEvent>();
    assert_send_sync::<streamcore_mock::MockGraph>();
    let mock = MockPlatform::seeded(1);
    let clone = mock.clone();
    std::thread::spawn(move || {
        clone.create_stream().unwrap();
    })
    .join()
    .unwrap();
    assert_eq!(mock.counters().streams, 1);
}
