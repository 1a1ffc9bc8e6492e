//! Capture priming: what is reserved in `Prepare` serves the capture
//! without a storage allocation; transitions out of order are refused.

use super::*;
use streamcore::memory::CapturedSlice;
use streamcore::platform::DeviceRange;
use streamcore::stream::capture::{CaptureError, Phase};

#[test]
fn capture_priming_means_no_storage_allocation_inside_the_capture() {
    let mut m = manager();
    let (weights, _) = m.reserve(3 * MIB).unwrap();
    let step = |m: &mut MemoryManager<TestStorage>| {
        let (a, _) = m.reserve(2 * MIB).unwrap();
        let (b, _) = m.reserve(40 * KIB).unwrap();
        m.free(a).unwrap();
        let (c, _) = m.reserve(2 * MIB).unwrap();
        let (d, _) = m.reserve(100).unwrap();
        m.free(b).unwrap();
        m.free(d).unwrap();
        c
    };
    m.prepare().unwrap();
    assert_eq!(m.phase(), Phase::Prepare);
    let c = step(&mut m);
    m.free(c).unwrap();
    // Every slice of the warm-up is retained: `a` and `c` are two pages.
    assert_eq!(pool(&m, PoolKind::Exclusive).slices, 3);
    assert!(matches!(
        m.cleanup(),
        Err(MemoryError::WindowOpen {
            phase: Phase::Prepare
        })
    ));
    m.begin_capture().unwrap();
    assert_eq!(
        pool(&m, PoolKind::Exclusive).slices,
        1,
        "retained slices released"
    );
    let allocs = m.storage().allocs;
    let c = step(&mut m);
    assert_eq!(
        m.storage().allocs,
        allocs,
        "no storage allocation in the capture"
    );
    assert_eq!(m.storage().deallocs, 0, "nothing released in the window");
    let mut captured: Vec<CapturedSlice> = Vec::new();
    m.end_capture(|s| captured.push(s)).unwrap();
    assert_eq!(captured.len(), 4);
    assert_eq!(m.phase(), Phase::NoCapture);
    // Pinned: freeing by the owner keeps them reserved until unpinned.
    m.free(c).unwrap();
    assert!(matches!(m.free(c), Err(MemoryError::AlreadyFreed(_))));
    assert_eq!(m.report().total().slices, 5);
    for s in &captured {
        assert_eq!(m.range(s.handle).unwrap(), s.range);
        m.unpin(s.handle).unwrap();
        assert!(matches!(
            m.unpin(s.handle),
            Err(MemoryError::StaleHandle(_))
        ));
    }
    assert_eq!(m.report().total().slices, 1);
    m.free(weights).unwrap();
    assert_eq!(m.report().total().slices, 0);
}

#[test]
fn a_capture_that_would_allocate_fails_typed_and_allocates_nothing() {
    let mut m = manager();
    m.prepare().unwrap();
    m.begin_capture().unwrap();
    let allocs = m.storage().alloc_calls;
    assert!(matches!(
        m.reserve(5 * MIB),
        Err(MemoryError::AllocationInCapture { bytes }) if bytes == 5 * MIB
    ));
    assert!(matches!(
        m.reserve(10),
        Err(MemoryError::AllocationInCapture { bytes }) if bytes == 64 * KIB
    ));
    assert_eq!(m.storage().alloc_calls, allocs);
    m.abort_capture().unwrap();
    assert_eq!(m.phase(), Phase::NoCapture);
    m.reserve(5 * MIB).unwrap();
}

#[test]
fn capture_transitions_out_of_order_are_rejected() {
    let mut m = manager();
    assert!(matches!(
        m.begin_capture(),
        Err(MemoryError::Capture(CaptureError::NotPrepared))
    ));
    assert!(matches!(
        m.end_capture(|_| {}),
        Err(MemoryError::Capture(CaptureError::NotCapturing { .. }))
    ));
    assert!(matches!(
        m.abort_capture(),
        Err(MemoryError::Capture(CaptureError::NothingToAbort))
    ));
    m.prepare().unwrap();
    assert!(matches!(
        m.prepare(),
        Err(MemoryError::Capture(CaptureError::AlreadyOpen { .. }))
    ));
    // Aborting the warm-up releases what it retained.
    let (h, _) = m.reserve(2 * MIB).unwrap();
    m.free(h).unwrap();
    assert_eq!(m.report().total().slices, 1);
    m.abort_capture().unwrap();
    assert_eq!(m.report().total().slices, 0);
    let mut none = 0;
    m.prepare().unwrap();
    m.begin_capture().unwrap();
    m.end_capture(|_| none += 1).unwrap();
    assert_eq!(none, 0);
}

/// Whether two ranges share no byte.
fn disjoint(a: DeviceRange, b: DeviceRange) -> bool {
    a.page != b.page || a.offset + a.len <= b.offset || b.offset + b.len <= a.offset
}

/// A slice reserved before the capture and freed inside it may be touched by
/// the captured work on every replay: its bytes serve nothing else inside
/// the window, and the graph keeps them until it unpins them.
#[test]
fn a_slice_freed_inside_the_capture_is_not_reused_and_stays_with_the_graph() {
    for size in [100, 40 * KIB, 2 * MIB, 5 * MIB] {
        let mut m = manager();
        let (old, old_range) = m.reserve(size).unwrap();
        m.prepare().unwrap();
        // The warm-up reserves what the capture will (a second slice of the
        // same size), so the capture needs no storage allocation.
        let (warm, _) = m.reserve(size).unwrap();
        m.free(warm).unwrap();
        m.begin_capture().unwrap();
        m.free(old).unwrap();
        assert!(matches!(m.free(old), Err(MemoryError::AlreadyFreed(_))));
        let (new, new_range) = m.reserve(size).unwrap();
        assert!(
            disjoint(new_range, old_range),
            "{size} B: the capture reused a slice it freed: {old_range:?} / {new_range:?}"
        );
        m.free(new).unwrap();
        let mut captured: Vec<CapturedSlice> = Vec::new();
        m.end_capture(|s| captured.push(s)).unwrap();
        assert!(
            captured.iter().any(|s| s.range == old_range),
            "{size} B: the freed slice is pinned for the graph"
        );
        // After the capture its bytes still belong to the graph.
        let (after, after_range) = m.reserve(size).unwrap();
        assert!(
            disjoint(after_range, old_range),
            "{size} B: an eager reserve got the graph's bytes"
        );
        m.free(after).unwrap();
        for s in &captured {
            m.unpin(s.handle).unwrap();
        }
        assert_eq!(m.report().total().slices, 0, "{size} B");
        assert_eq!(m.report().total().in_use, 0, "{size} B");
    }
}

/// A slice reserved in one capture and freed in a later one is pinned by
/// both graphs: the first graph's unpin leaves it to the second.
#[test]
fn a_slice_two_graphs_pin_stays_until_both_unpin() {
    let mut m = manager();
    let mut first: Vec<CapturedSlice> = Vec::new();
    m.prepare().unwrap();
    let (warm, _) = m.reserve(40 * KIB).unwrap();
    m.free(warm).unwrap();
    m.begin_capture().unwrap();
    let (s, range) = m.reserve(40 * KIB).unwrap();
    m.end_capture(|c| first.push(c)).unwrap();
    assert_eq!(first.len(), 1);
    let mut second: Vec<CapturedSlice> = Vec::new();
    m.prepare().unwrap();
    m.begin_capture().unwrap();
    m.free(s).unwrap();
    m.end_capture(|c| second.push(c)).unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].range, range);
    m.unpin(first[0].handle).unwrap();
    assert_eq!(m.range(s).unwrap(), range, "the second graph still pins it");
    let (other, other_range) = m.reserve(40 * KIB).unwrap();
    assert!(
        disjoint(other_range, range),
        "its bytes are not handed out while a graph pins it"
    );
    m.free(other).unwrap();
    m.unpin(second[0].handle).unwrap();
    assert!(matches!(m.unpin(s), Err(MemoryError::StaleHandle(_))));
    assert_eq!(m.report().total().slices, 0);
}
