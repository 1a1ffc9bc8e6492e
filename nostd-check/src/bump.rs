//! A bump allocator over a static arena that also counts live and peak
//! bytes, so the firmware image can report the scenario's heap use.
//! Frees are counted but their bytes are not reused.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

/// A bump allocator over `N` bytes.
pub struct Bump<const N: usize> {
    arena: UnsafeCell<[u8; N]>,
    next: AtomicUsize,
    live: AtomicUsize,
    peak: AtomicUsize,
}

impl<const N: usize> Bump<N> {
    /// An empty arena.
    pub const fn new() -> Self {
        Self {
            arena: UnsafeCell::new([0; N]),
            next: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// Bytes of the arena handed out so far (frees are not reused).
    pub fn used(&self) -> usize {
        self.next.load(Ordering::Relaxed)
    }

    /// The most bytes that were allocated and not yet freed at one time.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}

// SAFETY: the arena is only handed out in disjoint pieces, claimed through
// the atomic `next`, so sharing between threads cannot alias.
unsafe impl<const N: usize> Sync for Bump<N> {}

// SAFETY: `alloc` returns a pointer into the arena that is aligned to
// `layout.align()`, `layout.size()` bytes long, and never handed out again;
// it returns null when the arena is exhausted, as the trait asks.
unsafe impl<const N: usize> GlobalAlloc for Bump<N> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = self.arena.get() as usize;
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            let start = (base + cur).next_multiple_of(layout.align()) - base;
            let end = match start.checked_add(layout.size()) {
                Some(e) if e <= N => e,
                _ => return core::ptr::null_mut(),
            };
            match self
                .next
                .compare_exchange(cur, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    let live = self.live.fetch_add(layout.size(), Ordering::Relaxed);
                    self.peak.fetch_max(live + layout.size(), Ordering::Relaxed);
                    return (base + start) as *mut u8;
                }
                Err(seen) => cur = seen,
            }
        }
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, layout: Layout) {
        self.live.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}
