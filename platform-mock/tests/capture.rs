//! Graph capture: recorded not run, replay against the same addresses,
//! invalidation by host syncs and allocations.

mod common;

use common::*;
use streamcore::platform::{ErrorKind, GraphCapture, HostStorage, LaunchDims, Platform, Storage};
use streamcore_mock::{HazardKind, LogOp, MockConfig};

#[test]
fn capture_records_without_running_and_replays_run_on_the_same_addresses_with_fresh_inputs() {
    for seed in 0..8 {
        let mut r = rig(MockConfig::default().seed(seed));
        let mut s = r.stream();
        // Inputs staged through pinned pages that stay put.
        let ha = r.host.alloc(16).unwrap();
        let hb = r.host.alloc(16).unwrap();
        let hout = r.host.alloc(16).unwrap();
        let a = r.buffer(4);
        let b = r.buffer(4);
        let out = r.buffer(4);
        let add = r.kernel("add");
        r.host.write(ha, 0, &bytes_of(&[0; 4])).unwrap();
        r.host.write(hb, 0, &bytes_of(&[0; 4])).unwrap();
        let before = r.mock.counters().commands_completed;

        r.mock.begin_capture(&mut s).unwrap();
        assert!(r.mock.is_capturing(&s));
        r.mock.copy_to_device(&mut s, hr(ha, 0, 16), a).unwrap();
        r.mock.copy_to_device(&mut s, hr(hb, 0, 16), b).unwrap();
        r.mock
            .launch(
                &mut s,
                &add,
                LaunchDims::linear(1, 4),
                &[read(a), read(b), write(out)],
            )
            .unwrap();
        r.mock.copy_to_host(&mut s, out, hr(hout, 0, 16)).unwrap();
        let graph = r.mock.end_capture(&mut s).unwrap();
        assert!(!r.mock.is_capturing(&s));
        assert_eq!(graph.len(), 4);
        assert_eq!(r.mock.queued(&s), 0, "nothing was queued");
        r.mock.run_until_idle();
        assert_eq!(r.mock.counters().commands_completed, before, "nothing ran");
        assert_eq!(r.mock.peek_host(hr(hout, 0, 16)).unwrap(), vec![0; 16]);

        for round in 1..=3u32 {
            r.host.write(ha, 0, &bytes_of(&[round; 4])).unwrap();
            r.host
                .write(hb, 0, &bytes_of(&[100 * round, 1, 2, 3]))
                .unwrap();
            r.mock.launch_graph(&mut s, &graph).unwrap();
            let done = r.mock.record(&mut s).unwrap();
            r.mock.synchronize(&done).unwrap();
            let mut got = [0u8; 16];
            r.host.read(hout, 0, &mut got).unwrap();
            assert_eq!(
                words_of(&got),
                vec![101 * round, round + 1, round + 2, round + 3]
            );
        }
        // The replays touched exactly the captured ranges.
        let log = r.mock.event_log();
        let replayed: Vec<_> = log.iter().filter(|e| e.graph == Some(graph.id())).collect();
        assert_eq!(replayed.len(), 12);
        for e in &replayed {
            match &e.what {
                LogOp::CopyToDevice { src, dst } => {
                    assert!((src.page == ha && *dst == a) || (src.page == hb && *dst == b))
                }
                LogOp::Launch { kernel, .. } => assert_eq!(&**kernel, "add"),
                LogOp::CopyToHost { src, dst } => assert!(*src == out && dst.page == hout),
                other => panic!("unexpected {other:?}"),
            }
        }
        let c = r.mock.counters();
        assert_eq!((c.graphs_captured, c.graph_launches), (1, 3));
        r.mock.destroy_graph(graph).unwrap();
        assert_eq!(r.mock.counters().graphs_destroyed, 1);
        r.mock.assert_no_hazards();
    }
}

#[test]
fn a_destroyed_graph_s_queued_replays_still_complete() {
    let mut r = rig(MockConfig::default().lazy());
    let mut s = r.stream();
    let buf = r.buffer(2);
    r.fill(&mut s, buf, 0);
    let inc = r.kernel("inc");
    r.mock.begin_capture(&mut s).unwrap();
    r.mock
        .launch(&mut s, &inc, LaunchDims::linear(1, 2), &[read_write(buf)])
        .unwrap();
    let g = r.mock.end_capture(&mut s).unwrap();
    r.mock.launch_graph(&mut s, &g).unwrap();
    r.mock.launch_graph(&mut s, &g).unwrap();
    r.mock.destroy_graph(g).unwrap();
    assert_eq!(r.download(&mut s, buf), vec![2, 2]);
}

#[test]
fn a_host_sync_during_capture_is_refused_and_invalidates_it() {
    let mut r = rig(MockConfig::default().seed(1));
    let mut s = r.stream();
    let mut side = r.stream();
    let buf = r.buffer(4);
    r.fill(&mut side, buf, 1);
    let e = r.mock.record(&mut side).unwrap();
    r.mock.begin_capture(&mut s).unwrap();
    r.fill(&mut s, buf, 2);
    let err = r.mock.synchronize(&e).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CaptureUnsupported, "{err}");
    // Later work on the invalidated capture is refused too.
    let fill = r.kernel("fill");
    let again = r
        .mock
        .launch(&mut s, &fill, fill_dims(3), &[write(buf)])
        .unwrap_err();
    assert_eq!(again.kind(), ErrorKind::CaptureInvalidated);
    let end = r.mock.end_capture(&mut s).unwrap_err();
    assert_eq!(end.kind(), ErrorKind::CaptureInvalidated, "{end}");
    assert!(!r.mock.is_capturing(&s), "the stream stopped capturing");
    let hazards = r.mock.take_hazards();
    assert_eq!(hazards.len(), 1);
    assert_eq!(hazards[0].kind, HazardKind::SyncDuringCapture);
    assert_eq!(r.mock.counters().captures_invalidated, 1);
    // Outside the capture, the same sync works.
    r.mock.synchronize(&e).unwrap();
    r.mock.assert_no_hazards();
}

#[test]
fn a_query_during_capture_is_refused_unless_relaxed() {
    let r = rig(MockConfig::default().seed(2));
    let mut s = r.stream();
    let mut side = r.stream();
    let e = r.mock.record(&mut side).unwrap();
    r.mock.begin_capture(&mut s).unwrap();
    assert_eq!(
        r.mock.query(&e).unwrap_err().kind(),
        ErrorKind::CaptureUnsupported
    );
    assert_eq!(
        r.mock.end_capture(&mut s).unwrap_err().kind(),
        ErrorKind::CaptureInvalidated
    );

    let r = rig(MockConfig::default()
        .seed(2)
        .allow_query_during_capture(true));
    let mut s = r.stream();
    let mut side = r.stream();
    let e = r.mock.record(&mut side).unwrap();
    r.mock.begin_capture(&mut s).unwrap();
    r.mock.query(&e).unwrap();
    let captured = r.mock.record(&mut s).unwrap();
    assert_eq!(
        r.mock.query(&captured).unwrap_err().kind(),
        ErrorKind::CaptureUnsupported
    );
    assert_eq!(
        r.mock.end_capture(&mut s).unwrap_err().kind(),
        ErrorKind::CaptureInvalidated
    );
    let _ = r.mock.take_hazards();
}

#[test]
fn an_allocation_during_capture_invalidates_it() {
    for memory in ["device", "host"] {
        let mut r = rig(MockConfig::default().seed(3));
        let mut s = r.stream();
        let buf = r.buffer(4);
        r.mock.begin_capture(&mut s).unwrap();
        r.fill(&mut s, buf, 1);
        let err = if memory == "device" {
            r.dev.alloc(64).unwrap_err()
        } else {
            r.host.alloc(64).unwrap_err()
        };
        assert_eq!(err.kind(), ErrorKind::CaptureUnsupported);
        assert_eq!(
            r.mock.end_capture(&mut s).unwrap_err().kind(),
            ErrorKind::CaptureInvalidated
        );
        // The alloc works again once the capture is closed.
        r.dev.alloc(64).unwrap();
    }
}

#[test]
fn a_flush_that_would_free_during_capture_invalidates_it_and_keeps_the_pages_pending() {
    let mut r = rig(MockConfig::default().seed(4));
    let mut s = r.stream();
    let buf = r.buffer(4);
    r.mock.begin_capture(&mut s).unwrap();
    r.dev.flush().unwrap(); // nothing to free: fine
    r.dev.dealloc(buf.page);
    assert_eq!(
        r.dev.flush().unwrap_err().kind(),
        ErrorKind::CaptureUnsupported
    );
    assert_eq!(r.dev.pending(), &[buf.page]);
    assert!(r.mock.end_capture(&mut s).is_err());
    r.dev.flush().unwrap();
    assert!(r.dev.pending().is_empty());
}

#[test]
fn waits_across_the_capture_boundary_are_refused() {
    // A capturing stream waiting on an event recorded outside the capture.
    let r = rig(MockConfig::default().seed(5));
    let mut s = r.stream();
    let mut side = r.stream();
    let outside = r.mock.record(&mut side).unwrap();
    r.mock.begin_capture(&mut s).unwrap();
    assert_eq!(
        r.mock.wait(&mut s, &outside).unwrap_err().kind(),
        ErrorKind::CaptureUnsupported
    );
    assert_eq!(
        r.mock.end_capture(&mut s).unwrap_err().kind(),
        ErrorKind::CaptureInvalidated
    );

    // Another stream waiting on an event recorded inside the capture.
    r.mock.begin_capture(&mut s).unwrap();
    let inside = r.mock.record(&mut s).unwrap();
    r.mock.wait(&mut s, &inside).unwrap(); // same capture: fine
    assert_eq!(
        r.mock.wait(&mut side, &inside).unwrap_err().kind(),
        ErrorKind::CaptureUnsupported
    );
    assert_eq!(
        r.mock.end_capture(&mut s).unwrap_err().kind(),
        ErrorKind::CaptureInvalidated
    );
    // After the capture, the captured event is unusable, not a hang.
    assert_eq!(
        r.mock.synchronize(&inside).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
    assert_eq!(
        r.mock.query(&inside).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
}

#[test]
fn lifecycle_misuse_is_a_typed_error() {
    let mut r = rig(MockConfig::default());
    let mut s = r.stream();
    assert_eq!(
        r.mock.end_capture(&mut s).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
    r.mock.begin_capture(&mut s).unwrap();
    assert_eq!(
        r.mock.begin_capture(&mut s).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
    let g = r.mock.end_capture(&mut s).unwrap();
    assert!(g.is_empty());
    let other = streamcore_mock::MockPlatform::new();
    assert_eq!(
        other.destroy_graph(g).unwrap_err().kind(),
        ErrorKind::InvalidValue
    );
    let _ = r.buffer(1);
}

#[test]
fn a_graph_launched_into_a_capture_is_inlined() {
    let mut r = rig(MockConfig::default().seed(6));
    let mut s = r.stream();
    let buf = r.buffer(1);
    r.fill(&mut s, buf, 10);
    let inc = r.kernel("inc");
    r.mock.begin_capture(&mut s).unwrap();
    r.mock
        .launch(&mut s, &inc, LaunchDims::linear(1, 1), &[read_write(buf)])
        .unwrap();
    let inner = r.mock.end_capture(&mut s).unwrap();
    r.mock.begin_capture(&mut s).unwrap();
    r.mock.launch_graph(&mut s, &inner).unwrap();
    r.mock.launch_graph(&mut s, &inner).unwrap();
    let outer = r.mock.end_capture(&mut s).unwrap();
    assert_eq!(outer.len(), 2);
    r.mock.launch_graph(&mut s, &outer).unwrap();
    assert_eq!(r.download(&mut s, buf), vec![12]);
    r.mock.assert_no_hazards();
}

#[test]
fn replaying_a_graph_over_freed_pages_is_a_use_after_free() {
    let mut r = rig(MockConfig::default().seed(7));
    let mut s = r.stream();
    let buf = r.buffer(1);
    r.fill(&mut s, buf, 1);
    let inc = r.kernel("inc");
    r.mock.begin_capture(&mut s).unwrap();
    r.mock
        .launch(&mut s, &inc, LaunchDims::linear(1, 1), &[read_write(buf)])
        .unwrap();
    let g = r.mock.end_capture(&mut s).unwrap();
    let done = r.mock.record(&mut s).unwrap();
    r.mock.synchronize(&done).unwrap();
    r.dev.dealloc(buf.page);
    r.dev.flush().unwrap();
    r.mock.assert_no_hazards();
    r.mock.launch_graph(&mut s, &g).unwrap();
    r.mock.run_until_idle();
    let h = r.mock.take_hazards();
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!(h[0].kind, HazardKind::UseAfterFree);
    assert_eq!(
        h[0].current.kind,
        streamcore_mock::OpKind::Kernel("inc".into())
    );
}

#[test]
fn mock_and_fault_injector_declare_graph_capture() {
    use streamcore::platform::Capabilities;
    use streamcore_mock::fault::{FaultInjector, FaultPlan};
    let mock = streamcore_mock::MockPlatform::new();
    assert_eq!(mock.capabilities(), Capabilities::GRAPH_CAPTURE);
    assert!(mock.capture().is_some());
    let wrapped = FaultInjector::new(mock, FaultPlan::default());
    assert_eq!(wrapped.capabilities(), Capabilities::GRAPH_CAPTURE);
    assert!(wrapped.capture().is_some());
}
