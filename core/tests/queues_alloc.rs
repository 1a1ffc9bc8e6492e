//! Steady-state allocation check: once warm, info-cache hits and drop-queue
//! push / flush / reclaim at fixed capacity make no heap allocation.
//!
//! A counting global allocator counts the allocations made by the current
//! thread while counting is switched on, so tests running on other threads
//! do not disturb the count.

use streamcore::drop_queue::{BoundedDropQueue, DropQueue, FlushPolicy, Flushed, Pushed};
use streamcore::info_cache::{CacheMode, CachePolicy, GraphId, InfoCache};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

/// Info words of launch `i`: 8 words, as shapes and strides of a 2-D op.
fn info_words(i: u64) -> [u64; 8] {
    [i, 64, 64, 1, 64, 4096, 64, 1]
}

#[test]
fn info_cache_hits_allocate_nothing_when_warm() {
    const ENTRIES: u64 = 1024;
    let mut cache: InfoCache<u64> = InfoCache::with_capacity(
        CachePolicy::new(ENTRIES as usize, 1 << 20),
        ENTRIES as usize,
    );
    for i in 0..ENTRIES {
        cache.insert(&info_words(i), i, |_| ()).unwrap();
    }
    // Some entries pinned by a graph still hit without allocating.
    cache.set_mode(CacheMode::Capture, |_| ());
    for i in 0..16 {
        cache.get(&info_words(i)).unwrap();
    }
    cache.capture_commit(GraphId(1), |_| ()).unwrap();

    let mut sum = 0u64;
    let n = allocations(|| {
        for round in 0..10_000u64 {
            let i = (round * 7919) % ENTRIES;
            sum = sum.wrapping_add(*cache.get(&info_words(i)).unwrap());
        }
    });
    assert_eq!(n, 0, "info-cache hits allocated");
    assert!(sum > 0);
}

#[test]
fn info_cache_churn_at_capacity_allocates_nothing_when_warm() {
    const ENTRIES: u64 = 1024;
    let mut cache: InfoCache<u64> = InfoCache::with_capacity(
        CachePolicy::new(ENTRIES as usize, 1 << 20),
        ENTRIES as usize,
    );
    let mut next = 0u64;
    let mut evicted = 0u64;
    let mut churn = |cache: &mut InfoCache<u64>, rounds: u64| {
        for _ in 0..rounds {
            cache
                .insert(&info_words(next), next, |_| evicted += 1)
                .unwrap();
            next += 1;
        }
    };
    churn(&mut cache, 4 * ENTRIES);
    let n = allocations(|| churn(&mut cache, 10_000));
    assert_eq!(n, 0, "insert-with-eviction at capacity allocated");
    assert_eq!(cache.len(), ENTRIES as usize);
    assert_eq!(evicted, next - ENTRIES);
}

#[test]
fn growable_drop_queue_allocates_nothing_when_warm() {
    let mut q: DropQueue<u64, u64> = DropQueue::with_capacity(FlushPolicy::discrete(), 256, 8);
    let mut fence = 0u64;
    let mut released = 0u64;
    let mut run = |q: &mut DropQueue<u64, u64>, rounds: u64| {
        for r in 0..rounds {
            for i in 0..64 {
                if q.push(r * 64 + i, 4096) == Pushed::FlushDue {
                    fence += 1;
                    let f = fence;
                    let sealed = q.flush_with(|| Ok::<_, ()>(f)).unwrap();
                    assert!(matches!(sealed, Flushed::Sealed { items: 64, .. }));
                }
            }
            // The device runs two fences behind.
            let done = fence.saturating_sub(2);
            released += q.reclaim(|f| Ok::<_, ()>(*f <= done), |_| ()).unwrap() as u64;
        }
    };
    run(&mut q, 16);
    let cap = q.capacity();
    let n = allocations(|| run(&mut q, 5_000));
    assert_eq!(n, 0, "push/flush/reclaim allocated");
    assert_eq!(q.capacity(), cap);
    assert_eq!(released + q.len() as u64, 5_016 * 64);
}

#[test]
fn bounded_drop_queue_never_allocates() {
    let mut q: BoundedDropQueue<u64, u64, 256, 8> =
        BoundedDropQueue::new(FlushPolicy::integrated());
    let mut fence = 0u64;
    let n = allocations(|| {
        for r in 0..5_000u64 {
            for i in 0..16 {
                if q.push(r * 16 + i, 1).unwrap() == Pushed::FlushDue {
                    fence += 1;
                    let f = fence;
                    q.flush_with(|| Ok::<_, ()>(f)).unwrap();
                }
            }
            let done = fence.saturating_sub(3);
            q.reclaim(|f| Ok::<_, ()>(*f <= done), |_| ()).unwrap();
        }
    });
    assert_eq!(n, 0);
    assert_eq!(q.len(), 3 * 16);
}
