//! The device's steady-state launch loop — launches on live buffers with
//! info-cache hits, deferred frees flushed behind fences and reclaimed by
//! polling — makes no heap allocation once warm. Proven with a counting
//! global allocator over a platform that itself never allocates.

use streamcore::device::{Device, DeviceConfig, Launched};
use streamcore::null::Null;
use streamcore::platform::{KernelSource, LaunchDims};
use streamcore::stream::StreamId;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

#[test]
fn warm_launch_loop_allocates_nothing() {
    let d = Device::new(Null, DeviceConfig::with_streams(2)).unwrap();
    let kernel = |bindings| {
        d.load_kernel(&KernelSource {
            name: "k",
            source: "",
            bindings,
        })
        .unwrap()
    };
    let (k1, k) = (kernel(2), kernel(3));
    let (s0, s1) = (StreamId(0), StreamId(1));
    let a = d.alloc(s1, 4096).unwrap();
    let b = d.alloc(s0, 4096).unwrap();
    let c = d.alloc(s0, 4096).unwrap();
    let dims = LaunchDims::linear(16, 256);
    let round = |i: u64| {
        // Producer on stream 1, consumers on stream 0: a cross-stream wait
        // per round, info-cache hits, and polling that reclaims.
        assert_eq!(
            d.launch(s1, k1, dims, &[a.write()], &[1024, i % 4])
                .unwrap(),
            Launched::Queued
        );
        assert_eq!(
            d.launch(s0, k, dims, &[a.read(), b.write()], &[1024])
                .unwrap(),
            Launched::Queued
        );
        assert_eq!(
            d.launch(s0, k, dims, &[b.read(), c.write()], &[1024, 3])
                .unwrap(),
            Launched::Queued
        );
        d.poll().unwrap();
    };
    for i in 0..64 {
        round(i);
    }
    let allocs = allocations(|| {
        for i in 0..2000 {
            round(i);
        }
    });
    assert_eq!(allocs, 0, "allocations in the warm launch loop");
    let s = d.stats();
    assert!(
        s.waits >= 2000,
        "each round hands a buffer across streams: {s:?}"
    );
    assert!(s.info_hits >= 6000, "{s:?}");
}

#[test]
fn device_is_shareable_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Device<Null>>();
    assert_send_sync::<streamcore::device::Buffer>();
    assert_send_sync::<streamcore::device::Graph>();
}

/// A warm `alloc` + drop loop allocates nothing: the freed slice goes back
/// to its pool and the handle's allocation is reused for the next buffer.
#[test]
fn warm_alloc_and_drop_allocate_nothing() {
    let d = Device::new(Null, DeviceConfig::with_streams(1)).unwrap();
    let s0 = StreamId(0);
    let round = || {
        for size in [1 << 20, 4096, 256] {
            drop(d.alloc(s0, size).unwrap());
        }
    };
    for _ in 0..16 {
        round();
    }
    let allocs = allocations(|| {
        for _ in 0..1000 {
            round();
        }
    });
    assert_eq!(allocs, 0, "allocations in the warm alloc + drop loop");
    assert_eq!(d.census().buffers, 0);
}

/// Replaying a captured graph, warm, allocates nothing.
#[test]
fn warm_replay_loop_allocates_nothing() {
    let d = Device::new(Null, DeviceConfig::with_streams(2)).unwrap();
    let k = d
        .load_kernel(&KernelSource {
            name: "k",
            source: "",
            bindings: 3,
        })
        .unwrap();
    let (s0, s1) = (StreamId(0), StreamId(1));
    let x = d.alloc(s1, 4096).unwrap();
    let y = d.alloc(s0, 4096).unwrap();
    let dims = LaunchDims::linear(16, 256);
    let run = || d.launch(s0, k, dims, &[x.read(), y.write()], &[1024, 2]);
    d.prepare(s0).unwrap();
    assert_eq!(run().unwrap(), Launched::Queued);
    d.begin_capture(s0).unwrap();
    assert_eq!(run().unwrap(), Launched::Queued);
    let g = d.end_capture(s0).unwrap();
    let round = || {
        // A fresh input on stream 1 each time: the replay waits for it.
        assert_eq!(
            d.launch(s1, k, dims, &[y.read(), x.write()], &[1024, 3])
                .unwrap(),
            Launched::Queued
        );
        assert_eq!(d.replay(&g).unwrap(), Launched::Queued);
        d.poll().unwrap();
    };
    for _ in 0..64 {
        round();
    }
    let allocs = allocations(|| {
        for _ in 0..2000 {
            round();
        }
    });
    assert_eq!(allocs, 0, "allocations in the warm replay loop");
    assert!(d.stats().graph_replays >= 2064);
}
