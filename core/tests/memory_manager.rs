//! Behaviour of the memory manager: pools, handles, out-of-memory, cleanup,
//! trimming, layouts, persistent mode and reports; capture priming
//! (`memory_manager/capture.rs`) and pages carved from reservations
//! (`memory_manager/resizable.rs`).

#[path = "memory_manager/capture.rs"]
mod capture;
mod memory_support;
#[path = "memory_manager/resizable.rs"]
mod resizable;

use core::num::NonZeroU64;

use memory_support::{KIB, MIB, TestError, TestStorage, default_layout, layout};
use streamcore::memory::{
    AllocationMode, LayoutPreset, MAX_HELD, MAX_REQUEST, MemoryError, MemoryLayout, MemoryManager,
    MemoryPolicy, OomCause, PoolKind, PoolSpec,
};
use streamcore::platform::{DeviceProperties, ErrorKind, PageId, PlatformError, Storage};

fn manager() -> MemoryManager<TestStorage> {
    MemoryManager::new(TestStorage::new(), default_layout())
}

fn no_trim() -> MemoryPolicy {
    MemoryPolicy {
        trim_before_grow: false,
        ..MemoryPolicy::default()
    }
}

fn pool(m: &MemoryManager<TestStorage>, kind: PoolKind) -> streamcore::memory::PoolReport {
    *m.report()
        .pools
        .iter()
        .find(|p| p.kind == kind)
        .expect("pool present")
}

#[test]
fn reserve_gives_aligned_disjoint_ranges_of_the_requested_length() {
    let mut m = manager();
    let mut got = Vec::new();
    for size in [1, 100, 255, 256, 257, 4000, 70 * KIB, 3 * MIB] {
        let (h, r) = m.reserve(size).unwrap();
        assert_eq!(r.len, size);
        assert_eq!(r.offset % 256, 0, "offset aligned");
        assert_eq!(m.range(h).unwrap(), r);
        got.push(r);
    }
    for (i, a) in got.iter().enumerate() {
        for b in &got[i + 1..] {
            let overlap =
                a.page == b.page && a.offset < b.offset + b.len && b.offset < a.offset + a.len;
            assert!(!overlap, "{a:?} overlaps {b:?}");
        }
    }
}

#[test]
fn pools_are_chosen_by_size() {
    let mut m = manager();
    m.reserve(KIB).unwrap();
    m.reserve(KIB + 1).unwrap();
    m.reserve(64 * KIB + 1).unwrap();
    m.reserve(17 * MIB).unwrap();
    for kind in [
        PoolKind::Small,
        PoolKind::Sliced,
        PoolKind::Exclusive,
        PoolKind::Dedicated,
    ] {
        assert_eq!(pool(&m, kind).slices, 1, "{kind}");
    }
    assert_eq!(pool(&m, PoolKind::Small).reserved, 64 * KIB);
    assert_eq!(pool(&m, PoolKind::Sliced).reserved, MIB);
    // 64 KiB + 1 rounded to the alignment, then to a 512 B multiple (1/128).
    assert_eq!(pool(&m, PoolKind::Exclusive).reserved, 64 * KIB + 512);
    assert_eq!(pool(&m, PoolKind::Dedicated).reserved, 17 * MIB);
}

#[test]
fn stale_handles_are_rejected_with_typed_errors() {
    let mut m = manager();
    let (h, _) = m.reserve(512).unwrap();
    m.free(h).unwrap();
    assert!(matches!(m.free(h), Err(MemoryError::StaleHandle(x)) if x == h));
    assert!(matches!(m.range(h), Err(MemoryError::StaleHandle(_))));
    assert!(matches!(m.cursor(h), Err(MemoryError::StaleHandle(_))));
    assert!(matches!(
        m.set_cursor(h, 3),
        Err(MemoryError::StaleHandle(_))
    ));
    // The slot is reused with a new generation: the old handle stays stale.
    let (h2, _) = m.reserve(512).unwrap();
    assert_eq!(h2.index(), h.index());
    assert_ne!(h2.generation(), h.generation());
    assert!(matches!(m.free(h), Err(MemoryError::StaleHandle(_))));
    m.free(h2).unwrap();
    let text = format!(
        "{}",
        MemoryError::<memory_support::TestError>::StaleHandle(h)
    );
    assert!(text.contains("stale"), "{text}");
}

#[test]
fn invalid_sizes_are_refused_and_change_nothing() {
    let mut m = manager();
    assert!(matches!(
        m.reserve(0),
        Err(MemoryError::InvalidSize { size: 0 })
    ));
    assert!(matches!(
        m.reserve(u64::MAX),
        Err(MemoryError::InvalidSize { .. })
    ));
    assert_eq!(m.storage().alloc_calls, 0);
    assert_eq!(m.report().total().slices, 0);
}

#[test]
fn cursors_are_per_slice() {
    let mut m = manager();
    let (a, _) = m.reserve(100).unwrap();
    let (b, _) = m.reserve(100).unwrap();
    assert_eq!(m.cursor(a).unwrap(), 0);
    m.set_cursor(a, 7).unwrap();
    m.set_cursor(b, u64::MAX).unwrap();
    assert_eq!(m.cursor(a).unwrap(), 7);
    assert_eq!(m.cursor(b).unwrap(), u64::MAX);
    m.free(a).unwrap();
    let (c, _) = m.reserve(100).unwrap();
    assert_eq!(
        m.cursor(c).unwrap(),
        0,
        "a reused slot starts with a fresh cursor"
    );
}

#[test]
fn freed_neighbours_coalesce_and_the_idle_page_is_released_by_cleanup() {
    let mut m = manager();
    let (a, ra) = m.reserve(32 * KIB).unwrap();
    let (b, rb) = m.reserve(32 * KIB).unwrap();
    assert_eq!(ra.page, rb.page);
    m.free(a).unwrap();
    m.free(b).unwrap();
    // The page is whole again: a slice of the full page fits... only the
    // pool's largest slice, but two of them fit side by side again.
    let (c, rc) = m.reserve(64 * KIB).unwrap();
    assert_eq!((rc.page, rc.offset), (ra.page, 0));
    m.free(c).unwrap();
    let sliced = pool(&m, PoolKind::Sliced);
    assert_eq!((sliced.pages, sliced.idle_pages), (1, 1));
    let released = m.cleanup().unwrap();
    assert_eq!((released.pages, released.bytes), (1, MIB));
    assert_eq!(m.storage().live_bytes(), 0);
    assert_eq!(m.storage().pending_bytes(), 0, "cleanup flushes");
    assert_eq!(m.report().total().reserved, 0);
}

#[test]
fn exclusive_pages_are_reused_only_when_they_fit_tightly() {
    let mut m = MemoryManager::new(TestStorage::new(), layout(no_trim()));
    let (a, ra) = m.reserve(MIB).unwrap();
    m.free(a).unwrap();
    let (b, rb) = m.reserve(MIB).unwrap();
    assert_eq!(rb.page, ra.page, "same size reuses the idle page");
    assert_eq!(m.storage().allocs, 1);
    m.free(b).unwrap();
    // Slightly smaller (within 1/32): reused, the difference is padding.
    let (c, rc) = m.reserve(MIB - 16 * KIB).unwrap();
    assert_eq!(rc.page, ra.page);
    assert_eq!(pool(&m, PoolKind::Exclusive).padding, 16 * KIB);
    m.free(c).unwrap();
    // Half the size: too loose, a new page.
    let (d, rd) = m.reserve(MIB / 2).unwrap();
    assert_ne!(rd.page, ra.page);
    assert_eq!(m.storage().allocs, 2);
    m.free(d).unwrap();
}

#[test]
fn exclusive_pages_are_rounded_so_nearby_sizes_share_them() {
    // Exact pages: a request a little larger than the idle page needs a new one.
    let exact = MemoryPolicy {
        page_rounding_shift: 64,
        ..no_trim()
    };
    let mut m = MemoryManager::new(TestStorage::new(), layout(exact));
    let (a, _) = m.reserve(MIB + 4 * KIB).unwrap();
    assert_eq!(m.storage().live_bytes(), MIB + 4 * KIB);
    m.free(a).unwrap();
    m.reserve(MIB + 8 * KIB).unwrap();
    assert_eq!(m.storage().allocs, 2);
    // Rounded pages: the default (1/128 of the size) gives 1 MiB + 8 KiB,
    // 1/32 gives 1 MiB + 32 KiB; either way the next, slightly larger
    // request shares the idle page. (shift, page, next request, padding)
    for (shift, page, next, padding) in [
        (None, MIB + 8 * KIB, MIB + 6 * KIB, 2 * KIB),
        (Some(5), MIB + 32 * KIB, MIB + 8 * KIB, 24 * KIB),
    ] {
        let mut policy = no_trim();
        if let Some(shift) = shift {
            policy.page_rounding_shift = shift;
        }
        let mut m = MemoryManager::new(TestStorage::new(), layout(policy));
        let (a, ra) = m.reserve(MIB + 4 * KIB).unwrap();
        assert_eq!(m.storage().live_bytes(), page);
        m.free(a).unwrap();
        let (_, rb) = m.reserve(next).unwrap();
        assert_eq!(rb.page, ra.page);
        assert_eq!(m.storage().allocs, 1);
        assert_eq!(pool(&m, PoolKind::Exclusive).padding, padding);
    }
}

#[test]
fn allocations_beyond_every_pool_are_released_on_free() {
    let mut m = manager();
    let (h, _) = m.reserve(20 * MIB).unwrap();
    assert_eq!(m.storage().live_bytes(), 20 * MIB);
    m.free(h).unwrap();
    assert_eq!(m.storage().live_bytes(), 0);
    assert_eq!(m.storage().deallocs, 1);
    assert_eq!(pool(&m, PoolKind::Dedicated).pages, 0);
    // Counted until flushed.
    assert_eq!(m.held_bytes(), 20 * MIB);
    m.cleanup().unwrap();
    assert_eq!(m.held_bytes(), 0);
}

#[test]
fn trim_before_grow_keeps_held_bytes_under_the_high_water_mark() {
    let mut m = manager();
    let (a, _) = m.reserve(8 * MIB).unwrap();
    m.free(a).unwrap();
    // A size the idle page does not fit: the idle page goes back first.
    let (b, _) = m.reserve(4 * MIB).unwrap();
    assert_eq!(m.storage().peak_held, 8 * MIB);
    assert_eq!(m.storage().live_bytes(), 4 * MIB);
    m.free(b).unwrap();
    // Without trimming, both pages are held.
    let mut m = MemoryManager::new(TestStorage::new(), layout(no_trim()));
    let (a, _) = m.reserve(8 * MIB).unwrap();
    m.free(a).unwrap();
    m.reserve(4 * MIB).unwrap();
    assert_eq!(m.storage().peak_held, 12 * MIB);
}

#[test]
fn periodic_release_frees_pages_idle_for_a_period() {
    let policy = MemoryPolicy {
        release_idle_after: NonZeroU64::new(4),
        trim_before_grow: false,
        ..MemoryPolicy::default()
    };
    let mut m = MemoryManager::new(TestStorage::new(), layout(policy));
    let (big, _) = m.reserve(2 * MIB).unwrap();
    m.free(big).unwrap();
    for _ in 0..3 {
        let (h, _) = m.reserve(100).unwrap();
        m.free(h).unwrap();
    }
    assert_eq!(
        pool(&m, PoolKind::Exclusive).pages,
        1,
        "not yet a period idle"
    );
    for _ in 0..8 {
        let (h, _) = m.reserve(100).unwrap();
        m.free(h).unwrap();
    }
    assert_eq!(pool(&m, PoolKind::Exclusive).pages, 0);
    assert!(m.storage().flushes >= 1);
    assert_eq!(m.storage().pending_bytes(), 0);
}

#[test]
fn out_of_memory_releases_idle_pages_and_retries_once() {
    let mut m = MemoryManager::new(TestStorage::with_capacity(3 * MIB), layout(no_trim()));
    let (a, _) = m.reserve(2 * MIB).unwrap();
    m.free(a).unwrap();
    // 1.5 MiB does not fit the idle 2 MiB page tightly; 2 + 1.5 > 3 MiB.
    let (b, _) = m.reserve(3 * MIB / 2).unwrap();
    assert_eq!(m.storage().alloc_calls, 3, "one failure, one retry");
    assert_eq!(m.storage().live_bytes(), 3 * MIB / 2);
    assert_eq!(m.report().total().reserved, 3 * MIB / 2);
    let before = m.report();
    match m.reserve(2 * MIB) {
        Err(MemoryError::OutOfMemory {
            requested,
            cause: OomCause::Storage(e),
            report,
        }) => {
            assert_eq!(requested, 2 * MIB);
            assert_eq!(e.kind(), ErrorKind::OutOfMemory);
            assert_eq!(*report, before);
            let text = format!(
                "{}",
                MemoryError::<memory_support::TestError>::OutOfMemory {
                    requested,
                    cause: OomCause::Storage(e),
                    report
                }
            );
            assert!(text.contains("out of memory reserving 2.00 MiB"), "{text}");
            assert!(text.contains("total"), "{text}");
        }
        other => panic!("expected out of memory, got {other:?}"),
    }
    // Consistent afterwards: nothing leaked, the live slice still works.
    assert_eq!(m.report(), before);
    assert_eq!(m.storage().live_bytes(), 3 * MIB / 2);
    m.free(b).unwrap();
    m.cleanup().unwrap();
    assert_eq!(m.storage().held(), 0);
}

#[test]
fn other_storage_errors_pass_through_typed_without_retry() {
    let mut m = manager();
    m.storage_mut().fail_next = Some(ErrorKind::DeviceLost);
    match m.reserve(MIB) {
        Err(MemoryError::Storage {
            op: "alloc",
            source,
        }) => {
            assert_eq!(source.kind(), ErrorKind::DeviceLost)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(m.storage().alloc_calls, 1);
    assert_eq!(m.report().total().pages, 0);
    m.reserve(MIB).unwrap();
    // A failing flush is reported by cleanup.
    m.storage_mut().fail_flush = Some(ErrorKind::DeviceLost);
    assert!(matches!(
        m.cleanup(),
        Err(MemoryError::Storage { op: "flush", .. })
    ));
}

#[test]
fn pool_cap_and_page_budget_are_typed_out_of_memory() {
    let capped = MemoryLayout::new(
        &[PoolSpec::sliced(MIB, 64 * KIB).with_cap(MIB)],
        256,
        MemoryPolicy::default(),
    )
    .unwrap();
    let mut m = MemoryManager::new(TestStorage::new(), capped);
    let mut live = Vec::new();
    for _ in 0..16 {
        live.push(m.reserve(64 * KIB).unwrap().0);
    }
    assert!(matches!(
        m.reserve(64 * KIB),
        Err(MemoryError::OutOfMemory {
            cause: OomCause::PoolCap {
                pool: PoolKind::Sliced,
                cap
            },
            ..
        }) if cap == MIB
    ));
    let budget = MemoryPolicy {
        max_pages: 2,
        ..MemoryPolicy::default()
    };
    let mut m = MemoryManager::new(TestStorage::new(), layout(budget));
    m.reserve(2 * MIB).unwrap();
    m.reserve(3 * MIB).unwrap();
    assert!(matches!(
        m.reserve(4 * MIB),
        Err(MemoryError::OutOfMemory {
            cause: OomCause::PageLimit { limit: 2 },
            ..
        })
    ));
}

/// The warm-up of a capture window grows the pools to the window's working
/// set; the capture then allocates nothing from storage.

#[test]
fn install_swaps_the_layout_only_when_nothing_is_live() {
    let mut m = manager();
    let (h, _) = m.reserve(1000).unwrap();
    let other = MemoryLayout::new(
        &[PoolSpec::exclusive(64 * MIB)],
        256,
        MemoryPolicy::default(),
    )
    .unwrap();
    assert!(matches!(
        m.install(other.clone()),
        Err(MemoryError::InUse { bytes: 1000 })
    ));
    assert_eq!(m.range(h).unwrap().len, 1000, "refusal changes nothing");
    m.free(h).unwrap();
    m.install(other.clone()).unwrap();
    assert_eq!(m.layout(), &other);
    assert_eq!(m.storage().live_bytes(), 0, "old pages released");
    m.reserve(1000).unwrap();
    assert_eq!(pool(&m, PoolKind::Exclusive).slices, 1);
    assert!(!m.report().pools.iter().any(|p| p.kind == PoolKind::Small));
    // Old handles stay stale across an install.
    assert!(matches!(m.free(h), Err(MemoryError::StaleHandle(_))));
}

#[test]
fn persistent_windows_nest_and_are_never_trimmed() {
    let mut m = manager();
    assert_eq!(m.mode(), AllocationMode::Auto);
    m.begin_persistent();
    m.begin_persistent();
    m.end_persistent().unwrap();
    assert_eq!(m.mode(), AllocationMode::Persistent);
    let (w, _) = m.reserve(100).unwrap();
    assert_eq!(pool(&m, PoolKind::Persistent).slices, 1);
    assert_eq!(
        pool(&m, PoolKind::Persistent).reserved,
        256,
        "exact-size page"
    );
    m.end_persistent().unwrap();
    assert_eq!(m.mode(), AllocationMode::Auto);
    assert!(matches!(
        m.end_persistent(),
        Err(MemoryError::NoPersistentWindow)
    ));
    m.free(w).unwrap();
    // An idle persistent page survives trimming; explicit cleanup releases it.
    let (a, _) = m.reserve(8 * MIB).unwrap();
    m.free(a).unwrap();
    m.reserve(4 * MIB).unwrap();
    assert_eq!(pool(&m, PoolKind::Persistent).pages, 1);
    m.cleanup().unwrap();
    assert_eq!(pool(&m, PoolKind::Persistent).pages, 0);

    let forced = MemoryPolicy {
        force_persistent: true,
        ..MemoryPolicy::default()
    };
    let mut m = MemoryManager::new(TestStorage::new(), layout(forced));
    assert_eq!(m.mode(), AllocationMode::Persistent);
    m.reserve(3 * MIB).unwrap();
    assert_eq!(pool(&m, PoolKind::Persistent).slices, 1);
}

#[test]
fn report_adds_up_and_reads_as_a_table() {
    let mut m = manager();
    m.reserve(10).unwrap();
    m.reserve(2000).unwrap();
    m.reserve(MIB + 1).unwrap();
    let r = m.report();
    let t = r.total();
    assert_eq!(t.in_use, 10 + 2000 + MIB + 1);
    // Alignment padding, plus the exclusive page rounded up to 1/128 of
    // 1 MiB.
    assert_eq!(
        t.padding,
        (256 - 10) + (2048 - 2000) + (MIB + 8 * KIB - (MIB + 1))
    );
    assert_eq!(t.slices, 3);
    assert_eq!(t.reserved, m.storage().live_bytes());
    assert_eq!(t.pages as usize, m.storage().live.len());
    let text = format!("{r}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("pool"), "{text}");
    for name in [
        "small",
        "sliced",
        "exclusive",
        "persistent",
        "dedicated",
        "total",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(name)),
            "{name} in {text}"
        );
    }
    let w = lines[0].len();
    assert!(lines.iter().all(|l| l.len() == w), "aligned:\n{text}");
    assert!(text.contains("1.00 MiB"), "{text}");
}

#[test]
fn presets_run_on_any_device() {
    let props = DeviceProperties {
        total_memory: 80 << 30,
        max_page_size: 2 << 30,
        alignment: 512,
        integrated: false,
    };
    for preset in [
        LayoutPreset::Balanced,
        LayoutPreset::ExclusivePages,
        LayoutPreset::Sliced,
    ] {
        let mut m = MemoryManager::new(TestStorage::new(), MemoryLayout::preset(preset, &props));
        assert_eq!(m.alignment(), 512);
        let hs: Vec<_> = [1, 5000, 300 << 10, 50 << 20, 3 << 30]
            .into_iter()
            .map(|s| m.reserve(s).unwrap().0)
            .collect();
        for h in hs {
            m.free(h).unwrap();
        }
        m.cleanup().unwrap();
        assert_eq!(m.storage().held(), 0, "{preset:?}");
    }
}

/// Sizes and alignments at the edge of `u64` are typed errors: a storage
/// aligned to 2^63 refuses every reserve (it used to corrupt the
/// accounting), a device reporting a largest page of `u64::MAX` gets a
/// layout that serves every size up to `MAX_REQUEST` (it used to overflow
/// the rounding), and sizes past it are refused before any rounding.
#[test]
fn out_of_range_sizes_and_alignments_are_typed_errors() {
    use streamcore::memory::{LayoutError, MAX_REQUEST};
    let mut s = TestStorage::new();
    s.alignment = 1 << 63;
    let mut m = MemoryManager::new(s, default_layout());
    for size in [1, 1000, 3 * MIB] {
        match m.reserve(size) {
            Err(MemoryError::Layout(LayoutError::BadAlignment { alignment })) => {
                assert_eq!(alignment, 1 << 63)
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(m.storage().alloc_calls, 0);
    assert_eq!(m.report().total().reserved, 0);
    assert!(format!("{}", m.reserve(1).unwrap_err()).contains("alignment"));

    for max_page_size in [u64::MAX, 1 << 63] {
        let props = DeviceProperties {
            total_memory: u64::MAX,
            max_page_size,
            alignment: 256,
            integrated: false,
        };
        let mut m = MemoryManager::new(
            TestStorage::with_capacity(1 << 40),
            MemoryLayout::for_device(&props),
        );
        let mut live = Vec::new();
        for size in [1, 1000, 300 * KIB, 3 * MIB, 1 << 38] {
            let (h, r) = m.reserve(size).unwrap();
            assert_eq!(r.len, size);
            live.push(h);
        }
        assert!(matches!(
            m.reserve(MAX_REQUEST),
            Err(MemoryError::OutOfMemory { .. })
        ));
        for size in [MAX_REQUEST + 1, u64::MAX - 1, u64::MAX] {
            assert!(matches!(
                m.reserve(size),
                Err(MemoryError::InvalidSize { size: s }) if s == size
            ));
        }
        for h in live {
            m.free(h).unwrap();
        }
        let t = m.report().total();
        assert_eq!((t.in_use, t.padding, t.slices), (0, 0, 0));
        assert!(t.reserved <= m.storage().held());
    }
}

/// `close` gives every page, chunk and reservation back, live slices
/// included (the storage's contract checks each call: no reservation is
/// released with chunks still committed), and leaves a manager as new:
/// earlier handles stale, nothing held, reserving works again.
#[test]
fn close_gives_everything_back_and_leaves_a_fresh_manager() {
    for storage in [TestStorage::new(), TestStorage::resizable(2 * MIB, 1 << 30)] {
        let carved = storage.resizable.is_some();
        let mut m = MemoryManager::new(storage, default_layout());
        let sizes = [16, 512, 100 * KIB, 3 * MIB, 40 * MIB, 900 * MIB];
        let handles: Vec<_> = sizes.iter().map(|&s| m.reserve(s).unwrap().0).collect();
        // Some freed (idle pages and chunks), some still live.
        m.free(handles[1]).unwrap();
        m.free(handles[4]).unwrap();
        assert!(m.storage().held() > 0);
        m.close().unwrap();
        let s = m.storage();
        assert_eq!(s.held(), 0, "carved {carved}: bytes still held");
        assert!(s.live.is_empty() && s.ranges.is_empty(), "carved {carved}");
        assert_eq!(m.held_bytes(), 0);
        let report = m.report();
        assert!(report.pools.iter().all(|p| p.pages == 0 && p.in_use == 0));
        for h in handles {
            assert!(matches!(m.free(h), Err(MemoryError::StaleHandle(_))));
        }
        // As new: the same sizes again, then everything back once more.
        let again: Vec<_> = sizes.iter().map(|&s| m.reserve(s).unwrap().0).collect();
        for h in again {
            m.free(h).unwrap();
        }
        m.close().unwrap();
        assert_eq!(
            m.storage().held(),
            0,
            "carved {carved}: after the second close"
        );
    }
}

/// A decommit that fails in `close` is reported (the first error, after
/// every other call was made) and its reservation is not released: the
/// storage keeps only what failed.
#[test]
fn close_reports_a_failed_decommit_and_releases_the_rest() {
    let mut m = MemoryManager::new(TestStorage::resizable(2 * MIB, 64 * MIB), default_layout());
    // Two reservations: pages larger than one can hold side by side.
    let a = m.reserve(40 * MIB).unwrap().0;
    let b = m.reserve(40 * MIB).unwrap().0;
    assert_eq!(m.storage().ranges.len(), 2);
    m.storage_mut().fail_decommit = Some(ErrorKind::Other);
    let err = m.close().unwrap_err();
    assert!(
        matches!(err, MemoryError::Storage { op: "decommit", .. }),
        "{err:?}"
    );
    let s = m.storage();
    assert_eq!(s.ranges.len(), 1, "only the reservation that failed stays");
    assert!(s.live.is_empty());
    for h in [a, b] {
        assert!(matches!(m.free(h), Err(MemoryError::StaleHandle(_))));
    }
}

/// A storage that never refuses (a lazily backed or counting storage)
/// cannot overflow the books: the manager holds at most `MAX_HELD` bytes
/// and refuses past it with a typed out-of-memory (the sums once wrapped,
/// or panicked in a debug build).
#[test]
fn a_storage_that_never_refuses_cannot_overflow_the_books() {
    #[derive(Debug, Default)]
    struct Endless(u64);
    impl Storage for Endless {
        type Error = TestError;
        fn alignment(&self) -> u64 {
            256
        }
        fn alloc(&mut self, _: u64) -> Result<PageId, TestError> {
            self.0 += 1;
            Ok(PageId(self.0))
        }
        fn dealloc(&mut self, _: PageId) {}
        fn flush(&mut self) -> Result<(), TestError> {
            Ok(())
        }
    }
    let mut m = MemoryManager::new(Endless::default(), default_layout());
    let mut held = Vec::new();
    let refused = loop {
        match m.reserve(MAX_REQUEST) {
            Ok((h, _)) => held.push(h),
            Err(e) => break e,
        }
        assert!(held.len() <= 1 << 10, "never refused");
    };
    assert!(
        matches!(
            refused,
            MemoryError::OutOfMemory {
                cause: OomCause::HeldLimit { limit: MAX_HELD },
                ..
            }
        ),
        "{refused:?}"
    );
    assert!(m.held_bytes() <= MAX_HELD);
    assert_eq!(held.len() as u64, MAX_HELD / MAX_REQUEST);
    assert!(refused.to_string().contains("at most"), "{refused}");
    // Freed, the room comes back.
    m.free(held.pop().unwrap()).unwrap();
    m.cleanup().unwrap();
    held.push(m.reserve(MAX_REQUEST).unwrap().0);
}
