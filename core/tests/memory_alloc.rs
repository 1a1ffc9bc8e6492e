//! Zero heap allocation per reserve / free / cursor in steady state, proven
//! with a counting global allocator (per thread, so parallel tests do not
//! disturb the count).

mod memory_support;

use memory_support::{KIB, MIB, TestStorage, default_layout};
use streamcore::memory::{MemoryManager, SliceHandle};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

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
    let n = allocations(|| {
        for i in 50..2050 {
            step(&mut m, &mut live, i);
        }
    });
    assert_eq!(n, 0, "heap allocations in steady state");
    // The dedicated 20 MiB page is a storage call each step; the rest reuse.
    assert_eq!(m.storage().allocs - storage_allocs, 2000);
}

/// The same launch loop over a storage with resizable pages: pages are
/// carved from a reservation and go back to it, chunks stay committed;
/// still no heap allocation once warm, and the only driver calls are the
/// dedicated 20 MiB page's (given back when freed, as over `alloc`).
#[test]
fn steady_state_over_resizable_pages_does_not_allocate() {
    let mut m = MemoryManager::new(TestStorage::resizable(2 * MIB, 1 << 32), default_layout());
    let mut live = [None; 12];
    for i in 0..50 {
        step(&mut m, &mut live, i);
    }
    let calls = (m.storage().commit_calls, m.storage().decommit_calls);
    let n = allocations(|| {
        for i in 50..2050 {
            step(&mut m, &mut live, i);
        }
    });
    assert_eq!(n, 0, "heap allocations in steady state");
    assert_eq!(
        (
            m.storage().commit_calls - calls.0,
            m.storage().decommit_calls - calls.1
        ),
        (2000, 2000),
        "one commit and one decommit per step, for the dedicated page"
    );
    assert_eq!(m.storage().alloc_calls, 0, "every page carved");
}
