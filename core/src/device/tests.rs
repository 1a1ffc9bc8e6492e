//! Unit tests of the device's internals.

use super::{Device, DeviceConfig, LockFamilyMutex, MAX_STREAMS};
use crate::null::Null;
use crate::stream::StreamId;

/// Issue 14 item 6: the tables indexed by stream follow the streams in use,
/// not the streams the device could have (the sync table is square).
#[test]
fn tables_grow_with_the_streams_in_use() {
    let d = Device::new(Null, DeviceConfig::with_streams(MAX_STREAMS)).unwrap();
    let tracked = |d: &Device<Null>| LockFamilyMutex::lock(&d.shared.state).sync.streams();
    let slots = |d: &Device<Null>| {
        LockFamilyMutex::lock(&d.shared.state)
            .streams
            .slots_in_use()
    };
    assert_eq!((tracked(&d), slots(&d)), (0, 0), "nothing up front");
    let a = d.alloc(StreamId(0), 64).unwrap();
    assert_eq!(tracked(&d), 1);
    let b = d.alloc(StreamId(5), 64).unwrap();
    assert_eq!((tracked(&d), slots(&d)), (6, 6));
    {
        let inner = LockFamilyMutex::lock(&d.shared.state);
        assert_eq!(inner.plan.waits().count(), 0);
        assert_eq!(inner.buffers.get(a.id()).unwrap().last_use().len(), 6);
        assert_eq!(inner.buffers.get(b.id()).unwrap().last_use().len(), 6);
    }
    drop((a, b));
    d.sync_all().unwrap();
}

/// The last-hit memo in front of the info cache keeps its eviction order:
/// a repeated hit changes nothing, a hit on another entry marks that one
/// (a second chance), and the oldest unmarked entry is what an insert
/// evicts.
#[test]
fn the_info_memo_keeps_the_cache_lru_order() {
    use crate::info_cache::CachePolicy;
    use crate::platform::{KernelSource, LaunchDims};
    let mut config = DeviceConfig::with_streams(1);
    config.info_cache = CachePolicy::new(2, 1 << 20);
    let d = Device::new(Null, config).unwrap();
    let k = d
        .load_kernel(&KernelSource {
            name: "k",
            source: "",
            bindings: 2,
        })
        .unwrap();
    let out = d.alloc(StreamId(0), 64).unwrap();
    let launch = |w: u64| {
        let r = d.launch(
            StreamId(0),
            k,
            LaunchDims::linear(1, 1),
            &[out.write()],
            &[w],
        );
        assert_eq!(r.unwrap(), super::Launched::Queued);
        let s = d.stats();
        (s.info_hits, s.info_misses)
    };
    // (head first; * marks an entry hit since it entered or since its
    // last second chance)
    assert_eq!(launch(1), (0, 1)); // [1]
    assert_eq!(launch(2), (0, 2)); // [2, 1]
    assert_eq!(launch(1), (1, 2)); // cache hit: [2, 1*]
    assert_eq!(launch(1), (2, 2)); // memo hit: changes nothing
    assert_eq!(launch(3), (2, 3)); // 1 gets its second chance, 2 goes: [3, 1]
    assert_eq!(launch(1), (3, 3)); // still cached: [3, 1*]
    assert_eq!(launch(2), (3, 4)); // evicted, uploaded again; 1 passes, 3 goes: [2, 1]
    assert_eq!(launch(3), (3, 5)); // 3 was evicted; 1 (chance spent) goes: [3, 2]
    assert_eq!(launch(2), (4, 5)); // still cached
    assert_eq!(d.info_census(StreamId(0)).unwrap().entries, 2);
}

/// A device on `LocalLock` (a `RefCell`: one context) runs the whole API;
/// nothing takes one of its locks twice (a `RefCell` would panic).
#[test]
fn a_single_context_device_runs_on_local_lock() {
    use super::{Launched, LocalLock};
    use crate::platform::{KernelSource, LaunchDims};
    let d = Device::<_, LocalLock>::with_lock(Null, DeviceConfig::with_streams(2)).unwrap();
    let k = d
        .load_kernel(&KernelSource {
            name: "k",
            source: "",
            bindings: 3,
        })
        .unwrap();
    let (s0, s1) = (StreamId(0), StreamId(1));
    let a = d.upload(s1, &[1, 2, 3, 4]).unwrap();
    let b = d.alloc(s0, 4).unwrap();
    let dims = LaunchDims::linear(1, 4);
    let run = || d.launch(s0, k, dims, &[a.read(), b.write()], &[4]).unwrap();
    assert_eq!(run(), Launched::Queued);
    assert_eq!(d.read(s0, &b).unwrap().len(), 4);
    d.with_platform(|_| d.sync(s1)).unwrap();
    d.prepare(s0).unwrap();
    assert_eq!(run(), Launched::Queued);
    d.begin_capture(s0).unwrap();
    assert_eq!(run(), Launched::Queued);
    let g = d.end_capture(s0).unwrap();
    assert_eq!(d.replay(&g).unwrap(), Launched::Queued);
    drop((a, b, g));
    d.sync_all().unwrap();
    let c = d.census();
    assert_eq!((c.buffers, c.graphs, c.deferred), (0, 0, 0));
}

/// Released buffers reach the device through the mailbox (one at a time)
/// or the locked queue (when the mailbox is taken): several dropped between
/// two calls, clones dropped in any order, and a buffer released while
/// graph releases drop others are each freed exactly once.
#[test]
fn every_released_buffer_is_freed_once_through_mailbox_or_queue() {
    let d = Device::new(Null, DeviceConfig::with_streams(2)).unwrap();
    let census = |d: &Device<Null>| {
        let c = d.census();
        (c.buffers, c.live_bytes)
    };
    // Five drops before the next call: one in the mailbox, four queued.
    let bufs: alloc::vec::Vec<_> = (0..5).map(|_| d.alloc(StreamId(0), 256).unwrap()).collect();
    assert_eq!(census(&d), (5, 5 * 256));
    drop(bufs);
    assert_eq!(census(&d), (0, 0));
    // Clones: only the last one releases; the slot's next buffer counts its
    // handles from one again (the first buffer's count was left at one).
    let a = d.alloc(StreamId(1), 64).unwrap();
    let (a2, a3) = (a.clone(), a.clone());
    drop(a);
    drop(a3);
    assert_eq!(census(&d), (1, 64), "a clone is still alive");
    drop(a2);
    assert_eq!(census(&d), (0, 0));
    let b = d.alloc(StreamId(1), 64).unwrap();
    let b2 = b.clone();
    drop(b);
    assert_eq!(census(&d), (1, 64));
    drop(b2);
    assert_eq!(census(&d), (0, 0));
    // A slot released through the mailbox serves the next buffer, which
    // stays live beside the others.
    let c = d.alloc(StreamId(0), 32).unwrap();
    let e = d.alloc(StreamId(0), 32).unwrap();
    drop(c);
    let f = d.alloc(StreamId(0), 32).unwrap();
    assert_eq!(census(&d), (2, 64));
    drop((e, f));
    d.sync_all().unwrap();
    assert_eq!(census(&d), (0, 0));
}

/// Threads dropping clones of the same buffers at once release each buffer
/// once: every byte comes back, nothing is freed twice (a double free
/// would fail the pool's check and be counted as a release error).
#[test]
fn clones_dropped_on_threads_release_each_buffer_once() {
    let d = Device::new(Null, DeviceConfig::with_streams(1)).unwrap();
    for _ in 0..50 {
        let bufs: alloc::vec::Vec<_> = (0..8).map(|_| d.alloc(StreamId(0), 128).unwrap()).collect();
        let clones = bufs.clone();
        std::thread::scope(|s| {
            s.spawn(move || drop(clones));
            s.spawn(|| {
                for _ in 0..8 {
                    let _ = d.alloc(StreamId(0), 64).unwrap();
                }
            });
        });
        drop(bufs);
        let c = d.census();
        assert_eq!((c.buffers, c.live_bytes), (0, 0));
    }
    assert_eq!(d.stats().release_errors, 0);
    assert!(d.take_release_error().is_none());
}

/// A buffer handle that outlives its device keeps the device's release
/// queue from serving another device until it drops: otherwise its drop
/// would put its slot index in the mailbox of the next device, which would
/// free its own live buffer at that index.
#[test]
fn a_handle_outliving_its_device_never_releases_a_later_devices_buffer() {
    for _ in 0..20 {
        let a = Device::new(Null, DeviceConfig::with_streams(1)).unwrap();
        let x = a.alloc(StreamId(0), 256).unwrap();
        let x2 = x.clone();
        drop(a);
        let b = Device::new(Null, DeviceConfig::with_streams(1)).unwrap();
        let y = b.alloc(StreamId(0), 256).unwrap();
        assert_eq!(x.id(), y.id(), "the same slot on both devices");
        drop(x);
        drop(x2);
        b.poll().unwrap();
        assert_eq!(b.census().buffers, 1, "y is alive");
        assert!(b.read(StreamId(0), &y).is_ok());
        drop(y);
        assert_eq!(b.census().buffers, 0);
    }
}

/// Closing a queue as its device drops: every handle allocation no handle
/// holds is taken back at once (released buffers, queued or in the
/// mailbox, included); those of live buffers come back as their last
/// handle drops, clones first or not.
#[test]
fn a_closed_queue_counts_the_allocations_still_out() {
    let d = Device::new(Null, DeviceConfig::with_streams(2)).unwrap();
    let q = LockFamilyMutex::lock(&d.shared.state).releases;
    let id = LockFamilyMutex::lock(&d.shared.state).id;
    assert_eq!(q.state(), (id, 0));
    let bufs: alloc::vec::Vec<_> = (0..3).map(|_| d.alloc(StreamId(1), 64).unwrap()).collect();
    let clone = bufs[0].clone();
    // Three released, not yet processed: one in the mailbox, two queued;
    // and one released and processed (its slot vacant).
    let gone: alloc::vec::Vec<_> = (0..3).map(|_| d.alloc(StreamId(0), 64).unwrap()).collect();
    let vacant = d.alloc(StreamId(0), 64).unwrap();
    drop(vacant);
    d.poll().unwrap();
    drop(gone);
    drop(d);
    assert_eq!(
        q.state(),
        (0, 3),
        "closed; three buffers still have handles"
    );
    let mut bufs = bufs.into_iter();
    drop(bufs.next());
    assert_eq!(q.state().1, 3, "a clone of the first is alive");
    drop(clone);
    assert_eq!(q.state().1, 2);
    drop(bufs);
    // Back in the pool: another device may already hold it.
    assert_eq!(q.state().1, 0);
}

/// A buffer whose release fails (here a cross-stream pin refused: the
/// reachable cause is a full pending-free arena, 2^32 - 1 entries) has no
/// handle left: its slot is emptied anyway, its bytes stay out of the pool
/// (their other stream's use is not known complete), and when the device
/// drops the release queue takes the slot's handle allocation back instead
/// of counting it out forever (which kept the queue out of the pool).
#[test]
fn a_failed_release_leaves_no_allocation_out_at_close() {
    use crate::platform::{KernelSource, LaunchDims};
    use crate::stream::CrossPins;
    let d = Device::new(Null, DeviceConfig::with_streams(2)).unwrap();
    let q = LockFamilyMutex::lock(&d.shared.state).releases;
    let k = d
        .load_kernel(&KernelSource {
            name: "k",
            source: "",
            bindings: 1,
        })
        .unwrap();
    let x = d.alloc(StreamId(0), 256).unwrap();
    let keep = d.alloc(StreamId(0), 256).unwrap();
    // Stream 1's queued use of `x` is not known complete: its release must
    // pin it on stream 1, which fails with no pin table.
    let launched = d.launch(StreamId(1), k, LaunchDims::linear(1, 1), &[x.read()], &[]);
    assert_eq!(launched.unwrap(), super::Launched::Queued);
    LockFamilyMutex::lock(&d.shared.state).pins = CrossPins::new(0);
    drop(x);
    let c = d.census();
    let s = d.stats();
    assert_eq!((s.release_errors, s.cross_stream_pins), (1, 0));
    assert!(d.take_release_error().is_some());
    assert_eq!(c.buffers, 1, "only `keep`: the failed one's slot is empty");
    drop(d);
    assert_eq!(q.state(), (0, 1), "only `keep` is still out");
    drop(keep);
    assert_eq!(q.state().1, 0, "back in the pool");
}

/// The idle pool of release queues is shared by every lock family, so a
/// context that preempted its holders (an interrupt handler making or
/// dropping a device) must not wait for it: with every shelf held, making
/// a device takes a new queue, dropping one leaves its queue out of the
/// pool.
#[test]
fn a_held_idle_pool_is_never_waited_for() {
    use std::sync::mpsc;
    let _serial = super::release_queue::POOL_TESTS.lock();
    let pool = super::release_queue::hold_idle_pool(usize::MAX);
    let before = super::release_queue::unpooled_queues();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let d = Device::new(Null, DeviceConfig::with_streams(1)).unwrap();
        let b = d.alloc(StreamId(0), 64).unwrap();
        drop(b);
        drop(d);
        let _ = tx.send(());
    });
    let done = rx.recv_timeout(std::time::Duration::from_secs(20));
    drop(pool);
    assert!(
        done.is_ok(),
        "a device made and dropped waited for the pool"
    );
    assert!(super::release_queue::unpooled_queues() > before);
}
