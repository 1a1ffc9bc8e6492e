//! What a manager holds on the heap, measured with a global allocator that
//! counts live bytes: the pools' tables grow with the sizes a pool has
//! listed (they were 8 KiB per pool whatever its pages, ~42 KiB per
//! manager), so a bounded configuration stays small.

mod memory_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use memory_support::{KIB, TestStorage};
use streamcore::memory::{MemoryLayout, MemoryManager};
use streamcore::platform::DeviceProperties;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn add(bytes: i64) {
    let _ = LIVE.try_with(|l| l.set(l.get() + bytes));
}

struct Live;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the bookkeeping touches only a const-initialised thread-local
// `Cell`, which never allocates.
unsafe impl GlobalAlloc for Live {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as i64);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as i64));
        // SAFETY: `ptr` came from this allocator (so from `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as i64 - layout.size() as i64);
        // SAFETY: `ptr` came from this allocator (so from `System`) with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Live = Live;

fn live() -> i64 {
    LIVE.with(Cell::get)
}

fn device(total: u64) -> DeviceProperties {
    DeviceProperties {
        total_memory: total,
        max_page_size: total,
        alignment: 256,
        integrated: true,
    }
}

/// What a manager over `storage`, laid out for a device of `total` bytes,
/// holds on the heap: fresh, and with a few slices of every pool live.
/// The manager is boxed, as a device holds its managers: what it holds
/// inline counts too.
fn footprint(total: u64, storage: TestStorage) -> (i64, i64) {
    let before = live();
    let mut m = Box::new(MemoryManager::new(
        storage,
        MemoryLayout::for_device(&device(total)),
    ));
    let fresh = live() - before;
    let mut live_handles = Vec::new();
    for size in [64, 1000, 8 * KIB, 40 * KIB, total / 16] {
        for _ in 0..4 {
            live_handles.push(m.reserve(size).unwrap().0);
        }
    }
    let used = live() - before;
    for h in live_handles {
        m.free(h).unwrap();
    }
    (fresh, used)
}

#[test]
fn a_manager_holds_little_heap_before_and_after_use() {
    // What a manager holds inline (a device boxes one per stream): the
    // carving state over resizable pages is boxed, so pages of their own
    // do not pay for it (1,304 B held inline, 864 B boxed, 64-bit).
    let inline = core::mem::size_of::<MemoryManager<TestStorage>>();
    assert!(inline <= 1024, "a manager holds {inline} B inline");
    for total in [256 * KIB, 1 << 34] {
        let (fresh, used) = footprint(total, TestStorage::new());
        assert!(
            fresh <= 4 * 1024,
            "{total}: a fresh manager holds {fresh} B"
        );
        assert!(
            used <= 16 * 1024,
            "{total}: a manager in use holds {used} B"
        );
    }
}

/// Over a storage with resizable pages (carved from reservations, as over
/// HIP's virtual memory): what a
/// manager tracks only for large pages and for trims by choice (growth
/// steps, the round-trip ring), and the size-class bitmaps of engines it
/// never lists a block in, take no heap until needed. (Held inline, they
/// made a boxed manager 2,728 B, 5,616 B fresh and 17,048 B / 29,432 B in
/// use on a 64-bit host; grown when needed, and the carving state boxed,
/// 864 B, 2,920 B and 14,452 B / 26,896 B.)
#[test]
fn a_manager_over_reservations_holds_little_heap() {
    // (device bytes, granule, most bytes held in use)
    for (total, granule, most) in [(4 << 20, 4 * KIB, 16 * KIB), (1 << 34, 2 << 20, 28 * KIB)] {
        let (fresh, used) = footprint(total, TestStorage::resizable(granule, total));
        assert!(
            fresh <= 4 * 1024,
            "{total}: a fresh manager holds {fresh} B"
        );
        assert!(
            used <= most as i64,
            "{total}: a manager in use holds {used} B"
        );
    }
}
