//! Buffer and graph handles that outlive their device lose nothing: the
//! device's release queue is closed with it, takes back the handle
//! allocations no handle holds, gets the others back as the handles drop
//! (on any thread, even while the device is being dropped), and then
//! serves the next device. Proven with a global allocator that counts the
//! blocks alive: after warm-up, rounds of "device dropped first, handles
//! after" leave the count where it was.
//!
//! One test in this binary: the count is process-wide.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use streamcore::device::{Buffer, Device, DeviceConfig, Launched};
use streamcore::null::Null;
use streamcore::platform::{KernelSource, LaunchDims};
use streamcore::stream::StreamId;

/// Heap blocks alive in the process.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the bookkeeping is one atomic counter, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(1, Ordering::Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator (so from `System`) with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator (so from `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const S0: StreamId = StreamId(0);
const S1: StreamId = StreamId(1);

/// How the handles that outlive the device are dropped.
#[derive(Copy, Clone, Debug)]
enum Drops {
    /// On this thread, before the device (which leaves them all queued).
    Before,
    /// On this thread, after the device.
    Here,
    /// On two threads, after the device.
    TwoThreads,
    /// On two threads while this one drops the device.
    DuringDeviceDrop,
}

/// One device's life: buffers (some cloned, some released and not yet
/// processed, one recorded by a graph), the device dropped before the rest.
fn round(drops: Drops) {
    const KERNEL: KernelSource<'static> = KernelSource {
        name: "k",
        source: "",
        bindings: 2,
    };
    let d = Device::new(Null, DeviceConfig::with_streams(2)).unwrap();
    let bufs: Vec<Buffer> = (0..16)
        .map(|i| d.alloc(if i % 2 == 0 { S0 } else { S1 }, 4096).unwrap())
        .collect();
    let clones: Vec<Buffer> = bufs.iter().step_by(3).cloned().collect();
    // A graph recording a launch over two of them (no info words), alive
    // past the device too.
    let k = d.load_kernel(&KERNEL).unwrap();
    let over = [bufs[0].read(), bufs[1].write()];
    let graph = {
        let dims = LaunchDims::linear(1, 64);
        d.prepare(S1).unwrap();
        assert_eq!(d.launch(S1, k, dims, &over, &[]).unwrap(), Launched::Queued);
        d.begin_capture(S1).unwrap();
        assert_eq!(d.launch(S1, k, dims, &over, &[]).unwrap(), Launched::Queued);
        d.end_capture(S1).unwrap()
    };
    // Released before the device goes, never processed: one in the
    // mailbox, the others queued.
    let gone: Vec<Buffer> = (0..5).map(|_| d.alloc(S1, 512).unwrap()).collect();
    drop(gone);
    match drops {
        Drops::Before => {
            drop(bufs);
            drop(graph);
            drop(clones);
            drop(d);
        }
        Drops::Here => {
            drop(d);
            drop(bufs);
            drop(graph);
            drop(clones);
        }
        // Joined (not scoped) threads: a join returns once the thread has
        // exited, its own blocks freed.
        Drops::TwoThreads => {
            drop(d);
            let a = std::thread::spawn(move || drop(bufs));
            let b = std::thread::spawn(move || drop((clones, graph)));
            a.join().unwrap();
            b.join().unwrap();
        }
        Drops::DuringDeviceDrop => {
            let a = std::thread::spawn(move || drop(bufs));
            let b = std::thread::spawn(move || drop((clones, graph)));
            drop(d);
            a.join().unwrap();
            b.join().unwrap();
        }
    }
}

#[test]
fn handles_outliving_their_device_leak_nothing() {
    let all = [
        Drops::Before,
        Drops::Here,
        Drops::TwoThreads,
        Drops::DuringDeviceDrop,
    ];
    // Warm-up: the queue pool (the lists of the pooled queue reach the
    // most a round can queue: everything, in `Before`), the threads'
    // bookkeeping in std.
    for drops in all {
        round(drops);
    }
    let before = LIVE.load(Ordering::SeqCst);
    for i in 0..200 {
        round(all[i % all.len()]);
        assert_eq!(
            LIVE.load(Ordering::SeqCst) - before,
            0,
            "blocks alive after round {i} ({:?})",
            all[i % all.len()]
        );
    }
    // The count counts: a block kept alive shows.
    let kept = Box::new(7u64);
    assert_eq!(LIVE.load(Ordering::SeqCst) - before, 1);
    drop(kept);
}
