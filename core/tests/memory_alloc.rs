//! Zero heap allocation per reserve / free / cursor in steady state, proven
//! with a counting global allocator (per thread, so parallel tests do not
//! disturb the count).

mod memory_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use memory_support::{KIB, MIB, TestStorage, default_layout};
use streamcore::memory::{MemoryManager, SliceHandle};

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counter is a const-initialised thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCS.with(Cell::get)
}

/// One "step" of a launch loop: buffers of every pool, freed in a different
/// order than reserved, cursors set as a launch would.
fn step(m: &mut MemoryManager<TestStorage>, live: &mut [Option<SliceHandle>; 12], i: u64) {
    const SIZES: [u64; 12] = [
        64,
        200,
        1000,
        4 * KIB,
        30 * KIB,
        64 * KIB,
        100 * KIB,
        MIB,
        3 * MIB,
        3 * MIB,
        MIB + 512,
        20 * MIB,
    ];
    for (k, &size) in SIZES.iter().enumerate() {
        let (h, _) = m.reserve(size).expect("reserve");
        m.set_cursor(h, i).expect("cursor");
        live[k] = Some(h);
    }
    for k in [3, 0, 11, 7, 1, 9, 4, 2, 10, 5, 8, 6] {
        let h = live[k].take().expect("live");
        assert_eq!(m.cursor(h).expect("cursor"), i);
        m.free(h).expect("free");
    }
}

#[test]
fn steady_state_reserve_and_free_do_not_allocate() {
    let mut m = MemoryManager::new(TestStorage::new(), default_layout());
    let mut live = [None; 12];
    // Warm-up: pools, slabs, indices and the storage's own maps grow.
    for i in 0..50 {
        step(&mut m, &mut live, i);
    }
    let storage_allocs = m.storage().allocs;
    let before = allocations();
    for i in 50..2050 {
        step(&mut m, &mut live, i);
    }
    let after = allocations();
    assert_eq!(after - before, 0, "heap allocations in steady state");
    // The dedicated 20 MiB page is a storage call each step; the rest reuse.
    assert_eq!(m.storage().allocs - storage_allocs, 2000);
}

#[test]
fn the_counter_sees_allocations() {
    let before = allocations();
    let v: Vec<u64> = Vec::with_capacity(16);
    assert!(allocations() > before, "the counting allocator must count");
    drop(v);
}
