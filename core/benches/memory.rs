//! Cost of the memory manager's hot path: reserve + free on warm pools (the
//! steady state of a launch loop), and reserve + free in a sliced pool whose
//! pages are all fragmented, for 16 and 1024 pages, beside a naive first-fit
//! scan over the same pages (the shape of a pool that scans every page).
//! The per-op figure to compare with the target (under 100 ns per
//! reserve+free) is the `pair` rows divided by two.
//!
//! The `pair_carved` rows run the same pairs over a storage with resizable
//! pages (pages carved from reservations).
//!
//! `cargo bench -p streamcore --bench memory`
//!
//! With `PROFILE=pair/<pool>` or `PROFILE=pair_carved/<pool>` (`small`,
//! `sliced`, `exclusive`) the binary instead runs that row's body
//! `ITERS` times (default 100,000) and exits, for counting instructions
//! per pair, which this noisy a machine cannot time to a few nanoseconds:
//! `PROFILE=pair/sliced valgrind --tool=cachegrind target/release/deps/memory-*`
//! (run it with `ITERS=0` too: the difference over the iterations is the
//! pair's).
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group};
use streamcore::memory::{MemoryLayout, MemoryManager, MemoryPolicy, PoolSpec, SliceHandle};
use streamcore::platform::{
    ErrorKind, PageId, PlatformError, ResizableTerms, Storage, StorageTerms,
};

#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("never")
    }
}

impl PlatformError for Never {
    fn kind(&self) -> ErrorKind {
        ErrorKind::Other
    }
}

/// Hands out ids, and (`resizable`) resizable pages of 2 MiB granules;
/// holds nothing.
struct Ids {
    next: u64,
    resizable: bool,
}

impl Ids {
    const fn plain() -> Self {
        Self {
            next: 0,
            resizable: false,
        }
    }

    const fn resizable() -> Self {
        Self {
            next: 0,
            resizable: true,
        }
    }
}

impl Storage for Ids {
    type Error = Never;
    fn alignment(&self) -> u64 {
        256
    }
    fn alloc(&mut self, _size: u64) -> Result<PageId, Never> {
        self.next += 1;
        Ok(PageId(self.next))
    }
    fn dealloc(&mut self, _page: PageId) {}
    fn flush(&mut self) -> Result<(), Never> {
        Ok(())
    }
    fn terms(&self) -> StorageTerms {
        let mut t = StorageTerms::plain(256);
        if self.resizable {
            t.resizable = Some(ResizableTerms::new(2 * MIB, 1 << 40));
        }
        t
    }
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

fn layout() -> MemoryLayout {
    MemoryLayout::new(
        &[
            PoolSpec::small(MIB, KIB),
            PoolSpec::sliced(4 * MIB, 256 * KIB),
            PoolSpec::exclusive(1 << 30),
        ],
        256,
        MemoryPolicy::default(),
    )
    .expect("valid layout")
}

/// The pools of the `pair` rows: name and the size reserved.
const PAIRS: [(&str, u64); 3] = [("small", 200), ("sliced", 40 * KIB), ("exclusive", 8 * MIB)];

/// `PROFILE=<group>/<pool>`: that row's pairs, `ITERS` of them, untimed.
fn profile(row: &str) {
    let iters: u64 = std::env::var("ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let (group, pool) = row.split_once('/').unwrap_or((row, ""));
    let storage = match group {
        "pair" => Ids::plain,
        "pair_carved" => Ids::resizable,
        _ => panic!("PROFILE={row}: not pair/<pool> or pair_carved/<pool>"),
    };
    let Some(&(_, size)) = PAIRS.iter().find(|(name, _)| *name == pool) else {
        panic!("PROFILE={row}: no pool {pool:?}");
    };
    with_warm_pool(storage, size, |m| {
        for _ in 0..iters {
            pair(m, size);
        }
    });
}

/// A manager over `storage()` with a few slices of `size` live (so their
/// page is not trivially empty), handed to `body`; the slices are freed
/// after it.
fn with_warm_pool(storage: fn() -> Ids, size: u64, body: impl FnOnce(&mut MemoryManager<Ids>)) {
    let mut m = MemoryManager::new(storage(), layout());
    let keep: Vec<SliceHandle> = (0..8).map(|_| m.reserve(size).unwrap().0).collect();
    body(&mut m);
    for h in keep {
        m.free(h).unwrap();
    }
}

/// What a `pair` row runs: a reserve of `size` and its free.
#[inline(always)]
fn pair(m: &mut MemoryManager<Ids>, size: u64) {
    let (h, _) = m.reserve(black_box(size)).unwrap();
    m.free(h).unwrap();
}

/// A reserve and free of one size per pool, warm, over `storage()`.
fn pairs(g: &mut BenchmarkGroup<'_, WallTime>, storage: fn() -> Ids) {
    for (name, size) in PAIRS {
        with_warm_pool(storage, size, |m| {
            g.bench_function(name, |b| b.iter(|| pair(m, size)));
        });
    }
}

fn warm_pairs(c: &mut Criterion) {
    let mut g = c.benchmark_group("memory/pair");
    pairs(&mut g, Ids::plain);
    // A launch loop: twelve buffers of every pool, freed out of order.
    let sizes = [
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
        64 * MIB,
    ];
    let mut m = MemoryManager::new(Ids::plain(), layout());
    let mut live = [None; 12];
    g.bench_function("launch_loop_12_buffers", |b| {
        b.iter(|| {
            for (k, &size) in sizes.iter().enumerate() {
                live[k] = Some(m.reserve(black_box(size)).unwrap().0);
            }
            for k in [3, 0, 11, 7, 1, 9, 4, 2, 10, 5, 8, 6] {
                m.free(live[k].take().unwrap()).unwrap();
            }
        })
    });
    g.finish();
}

/// The same pairs over a storage with resizable pages: every page carved
/// from a reservation, chunks committed once (warm).
fn carved_pairs(c: &mut Criterion) {
    let mut g = c.benchmark_group("memory/pair_carved");
    pairs(&mut g, Ids::resizable);
    g.finish();
}

/// A naive sliced pool: pages as lists of (offset, size, free), first fit
/// by scanning every page and every block.
struct NaivePool {
    pages: Vec<Vec<(u64, u64, bool)>>,
}

impl NaivePool {
    fn reserve(&mut self, size: u64) -> Option<(usize, usize)> {
        for (p, blocks) in self.pages.iter_mut().enumerate() {
            for (i, b) in blocks.iter_mut().enumerate() {
                if b.2 && b.1 >= size {
                    b.2 = false;
                    return Some((p, i));
                }
            }
        }
        None
    }
    fn free(&mut self, at: (usize, usize)) {
        self.pages[at.0][at.1].2 = true;
    }
}

/// Every page holds 64 KiB slices with every other one free (32 KiB holes
/// after a 32 KiB live slice): a request of 48 KiB fits only the last page's
/// tail, which is kept free.
fn fragmented(c: &mut Criterion) {
    let mut g = c.benchmark_group("memory/fragmented_pair");
    for pages in [16usize, 1024] {
        let mut m = MemoryManager::new(Ids::plain(), layout());
        let mut keep = Vec::new();
        let mut holes = Vec::new();
        for _ in 0..pages {
            for _ in 0..64 {
                keep.push(m.reserve(32 * KIB).unwrap().0);
                holes.push(m.reserve(32 * KIB).unwrap().0);
            }
        }
        for h in holes {
            m.free(h).unwrap();
        }
        // One 64 KiB hole for the 48 KiB request.
        m.free(keep.pop().unwrap()).unwrap();
        g.bench_with_input(BenchmarkId::new("streamcore", pages), &pages, |b, _| {
            b.iter(|| {
                let (h, _) = m.reserve(black_box(48 * KIB)).unwrap();
                m.free(h).unwrap();
            })
        });
        let mut naive = NaivePool {
            pages: (0..pages)
                .map(|p| {
                    (0..128u64)
                        .map(|i| (i * 32 * KIB, 32 * KIB, i % 2 == 1))
                        .chain((p == pages - 1).then_some((4 * MIB, 64 * KIB, true)))
                        .collect()
                })
                .collect(),
        };
        g.bench_with_input(BenchmarkId::new("naive_scan", pages), &pages, |b, _| {
            b.iter(|| {
                let at = naive.reserve(black_box(48 * KIB)).unwrap();
                naive.free(at);
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30);
    targets = warm_pairs, carved_pairs, fragmented
}
fn main() {
    if let Ok(row) = std::env::var("PROFILE") {
        profile(&row);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
