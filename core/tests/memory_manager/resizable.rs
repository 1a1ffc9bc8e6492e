//! Pages carved from reservations over a storage with resizable pages:
//! shared granules, commits, no commit in a capture, typed storage errors,
//! the strand guard.

use super::*;

/// A storage with resizable pages of 2 MiB granules.
fn resizable() -> MemoryManager<TestStorage> {
    MemoryManager::new(TestStorage::resizable(2 * MIB, 1 << 30), default_layout())
}

#[test]
fn carved_pages_share_granules_and_grow_by_commits() {
    let mut m = resizable();
    let (a, ra) = m.reserve(3 * MIB).unwrap();
    let (b, rb) = m.reserve(MIB).unwrap();
    assert_eq!(ra.page, rb.page, "both carved from one reservation");
    assert!(ra.offset + ra.len <= rb.offset || rb.offset + rb.len <= ra.offset);
    let s = m.storage();
    assert_eq!(
        (s.reserve_calls, s.alloc_calls, s.commit_calls),
        (1, 0, 1),
        "one reservation, one commit, no page of its own"
    );
    // 4 MiB of pages in two granules, not 3 + 1 rounded to 6 MiB.
    assert_eq!(s.committed(), 4 * MIB);
    assert_eq!(m.held_bytes(), 4 * MIB);
    assert!(s.is_committed(ra.page.0, ra.offset, ra.len));
    assert!(s.is_committed(rb.page.0, rb.offset, rb.len));
    m.free(a).unwrap();
    m.free(b).unwrap();
    // Freed pages go back to their reservation; nothing is synchronized or
    // given back before it is needed.
    assert_eq!(m.storage().decommit_calls, 0);
    assert_eq!(m.storage().flushes, 0);
    let (c, rc) = m.reserve(3 * MIB).unwrap();
    assert_eq!(m.storage().commit_calls, 1, "the freed space is reused");
    assert!(m.storage().is_committed(rc.page.0, rc.offset, rc.len));
    m.free(c).unwrap();
    m.cleanup().unwrap();
    let s = m.storage();
    assert_eq!((s.committed(), m.held_bytes()), (0, 0));
    assert!(s.decommit_calls >= 1);
    assert!(s.ranges.is_empty(), "the empty reservation is given back");
    assert!(s.live.is_empty());
}

#[test]
fn nothing_is_committed_in_a_capture_nor_decommitted_while_flushes_are_held() {
    let mut m = resizable();
    m.prepare().unwrap();
    // The warm-up: what the window will need, freed again (and retained).
    let (w, _) = m.reserve(5 * MIB).unwrap();
    m.free(w).unwrap();
    m.begin_capture().unwrap();
    let commits = m.storage().commit_calls;
    // The warm-up's bytes serve the capture; more would need a commit.
    let (x, _) = m.reserve(5 * MIB).unwrap();
    assert!(matches!(
        m.reserve(64 * MIB),
        Err(MemoryError::AllocationInCapture { .. })
    ));
    assert_eq!(
        m.storage().commit_calls,
        commits,
        "no commit inside the capture"
    );
    m.free(x).unwrap();
    assert!(matches!(m.cleanup(), Err(MemoryError::WindowOpen { .. })));
    let mut pinned = Vec::new();
    m.end_capture(|s| pinned.push(s.handle)).unwrap();
    for h in pinned {
        m.unpin(h).unwrap();
    }
    // Another stream records: the device holds every manager's flushes.
    m.hold_flushes(true).unwrap();
    m.cleanup().unwrap();
    assert_eq!(
        m.storage().decommit_calls,
        0,
        "nothing unmapped during a capture"
    );
    assert!(m.storage().committed() > 0);
    m.hold_flushes(false).unwrap();
    m.cleanup().unwrap();
    assert!(m.storage().decommit_calls > 0);
    assert_eq!((m.storage().committed(), m.held_bytes()), (0, 0));
}

#[test]
fn storage_errors_on_resizable_pages_are_typed_and_keep_the_books() {
    let mut m = resizable();
    let (a, _) = m.reserve(6 * MIB).unwrap();
    m.free(a).unwrap();
    m.storage_mut().fail_decommit = Some(ErrorKind::Other);
    match m.cleanup() {
        Err(MemoryError::Storage { op, .. }) => assert_eq!(op, "decommit"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        m.held_bytes(),
        m.storage().held(),
        "the chunk stays counted"
    );
    m.cleanup().unwrap();
    assert_eq!((m.held_bytes(), m.storage().held()), (0, 0));

    // Out of memory on a commit: idle memory goes back and the commit is
    // retried once, then a typed out-of-memory.
    let mut m = MemoryManager::new(
        TestStorage {
            capacity: 8 * MIB,
            ..TestStorage::resizable(2 * MIB, 1 << 30)
        },
        default_layout(),
    );
    let (a, _) = m.reserve(6 * MIB).unwrap();
    let (b, _) = m.reserve(2 * MIB).unwrap();
    m.free(a).unwrap();
    let (c, _) = m.reserve(4 * MIB).unwrap();
    m.free(c).unwrap();
    assert!(matches!(
        m.reserve(8 * MIB),
        Err(MemoryError::OutOfMemory {
            cause: OomCause::Storage(_),
            ..
        })
    ));
    assert_eq!(m.held_bytes(), m.storage().held());
    m.free(b).unwrap();
    let (d, _) = m.reserve(8 * MIB).unwrap();
    assert_eq!(m.storage().committed(), 8 * MIB);
    m.free(d).unwrap();
}

/// Stranded memory: a 10 MiB page's chunk, idle once it is freed, serves a
/// 4 MiB page placed in its hole. Without the guard the chunk wakes whole
/// and 6 MiB of it are stranded while the small page lives (nothing can
/// give them back); with the guard the idle chunk is decommitted and only
/// the small page's granules are committed. The adaptive guard turns on
/// only once stranding made the manager grow.
#[test]
fn the_strand_guard_decommits_an_idle_chunk_a_page_would_use_in_part() {
    use streamcore::memory::StrandGuard;
    for guard in [StrandGuard::Off, StrandGuard::On] {
        let policy = MemoryPolicy {
            strand_guard: guard,
            commit_step_shift: 64,
            ..MemoryPolicy::default()
        };
        let mut m = MemoryManager::new(TestStorage::resizable(2 * MIB, 1 << 30), layout(policy));
        // A neighbour keeps the hole from merging with the free tail.
        let (a, ra) = m.reserve(10 * MIB).unwrap();
        let (_n, _) = m.reserve(2 * MIB).unwrap();
        m.free(a).unwrap();
        let (b, rb) = m.reserve(4 * MIB).unwrap();
        assert_eq!(rb.offset, ra.offset, "the small page lands in the hole");
        assert!(m.storage().is_committed(rb.page.0, rb.offset, rb.len));
        let stranded = m.stranded_bytes();
        match guard {
            StrandGuard::Off => {
                assert_eq!(stranded, 6 * MIB, "the big chunk woke for a part");
                assert_eq!(m.storage().decommit_calls, 0);
            }
            _ => {
                assert_eq!(stranded, 0, "only the small page's granules");
                assert_eq!(m.storage().decommit_calls, 1);
            }
        }
        m.free(b).unwrap();
        m.cleanup().unwrap();
        assert_eq!((m.stranded_bytes(), m.idle_committed_bytes()), (0, 0));
    }
    assert_eq!(MemoryPolicy::default().strand_guard, StrandGuard::Adaptive);
}

#[test]
fn a_page_larger_than_any_reservation_is_refused_before_the_storage_is_asked() {
    // 64 KiB granules: a chunk map addresses 2^31 of them (2^47 bytes), less
    // than the storage would reserve.
    let g = 64 * KIB;
    let mut m = MemoryManager::new(TestStorage::resizable(g, 1 << 62), default_layout());
    let (kept, _) = m.reserve(MIB).unwrap();
    let reservations = m.address_space();
    for size in [(1u64 << 47) + 1, 1 << 48, 1 << 52] {
        match m.reserve(size) {
            Err(MemoryError::OutOfMemory {
                cause: OomCause::LargerThanReservation { page, max },
                ..
            }) => assert!(page >= size && max == g << 31, "{page} {max}"),
            Err(e) => panic!("{size} bytes: {e}"),
            Ok((_, r)) => panic!(
                "{size} bytes placed at {r:?} with {} bytes committed",
                m.storage().committed()
            ),
        }
        assert_eq!(m.address_space(), reservations, "nothing reserved");
    }
    // A reservation may hold it: placed only with every byte committed.
    let (h, r) = m.reserve(1 << 30).unwrap();
    assert!(m.storage().is_committed(r.page.0, r.offset, r.len));
    m.free(h).unwrap();
    m.free(kept).unwrap();
}

/// Pages carved from reservations take their exact size (the alignment
/// only): a carved page's space goes back to its reservation when it is
/// freed and serves any size there, so a size class would only pad. Pages
/// of their own keep their class (1/128 of their size), so nearby sizes
/// reuse idle pages.
#[test]
fn carved_pages_take_their_exact_size_and_pages_of_their_own_their_class() {
    let size = 3 * MIB + 256;
    let mut carved = resizable();
    let (a, _) = carved.reserve(size).unwrap();
    assert_eq!(carved.report().total().padding, 0);
    let mut own = MemoryManager::new(TestStorage::new(), default_layout());
    let (b, _) = own.reserve(size).unwrap();
    // 3 MiB rounds by 16 KiB steps at 1/128.
    assert_eq!(own.report().total().padding, 16 * KIB - 256);
    carved.free(a).unwrap();
    own.free(b).unwrap();
    // A free and a reserve of the same size take the same bytes back.
    let (c, r1) = carved.reserve(size).unwrap();
    carved.free(c).unwrap();
    let (_, r2) = carved.reserve(size).unwrap();
    assert_eq!((r1.page, r1.offset), (r2.page, r2.offset));
}

/// A commit reaches ahead over free space only as far as pages and live
/// data have already needed, not into the trim headroom: memory committed
/// ahead that no page comes to use stays stranded beside the page that
/// does, for as long as that page lives. A workload that only grows commits
/// no granule past its last page.
#[test]
fn a_growing_workload_commits_no_granule_past_its_last_page() {
    let mut m = MemoryManager::new(TestStorage::resizable(2 * MIB, 1 << 34), default_layout());
    let size = 12 * MIB + 256;
    let mut carved = 0;
    let mut kept = Vec::new();
    for i in 0..80 {
        let (h, r) = m.reserve(size).unwrap();
        assert_eq!(r.offset, carved, "pages are carved one after the other");
        carved += size;
        kept.push(h);
        assert_eq!(
            m.storage().committed(),
            carved.next_multiple_of(2 * MIB),
            "after page {i}: committed past the last page"
        );
    }
    // Every page is a new peak: it commits what it needs, no more.
    assert_eq!(m.storage().commit_calls, 80);
    for h in kept {
        m.free(h).unwrap();
    }
}

/// Large pages (reservations of their own) take whole granules: two
/// buffers that grow (a new, larger one, then the old one freed) place
/// their next pages in each other's reservations, and a page ending inside
/// a granule left that granule to the page carved after it, whose chunk
/// then kept the whole chunk of the page before committed, freed or not.
/// In whole granules no two large pages share a granule: nothing is
/// stranded, and the padding stays under a granule per page.
#[test]
fn growing_large_pages_take_whole_granules_and_strand_nothing() {
    let g = 2 * MIB;
    let mut m = MemoryManager::new(TestStorage::resizable(g, 1 << 36), default_layout());
    let large = g * u64::from(MemoryPolicy::default().large_page_granules);
    let mut size = [large + 100 * MIB + 256, 2 * large + 256];
    let steps = [48 * MIB + 256, 24 * MIB + 256];
    let mut cache = [m.reserve(size[0]).unwrap().0, m.reserve(size[1]).unwrap().0];
    for step in 0..40 {
        for k in 0..2 {
            if k == 1 && step % 3 != 0 {
                continue;
            }
            size[k] += steps[k];
            let (next, r) = m.reserve(size[k]).unwrap();
            assert_eq!(
                r.offset % g,
                0,
                "step {step}: a large page starts on a granule"
            );
            m.free(cache[k]).unwrap();
            cache[k] = next;
            assert_eq!(m.stranded_bytes(), 0, "step {step}, buffer {k}");
        }
        assert!(m.report().total().padding < 2 * g);
    }
    for h in cache {
        m.free(h).unwrap();
    }
}

/// Two caches growing side by side (each step a new page a few tens of
/// MiB larger, then the old one freed; back to the first size past
/// 3 GiB), with activations of 1-96 MiB coming and going between them,
/// commit little more than their growth: a large page is carved at the
/// start of the empty reservation with most of it committed already (the
/// one the cache left a step before), never over fresh granules behind
/// another live page, and a reservation holds twice the page that opened
/// it. A cycle from the first size to 3 GiB then commits each cache's
/// pages afresh only where the size doubles: under twice its largest page
/// per cycle (here 35.7 GB committed in all for a peak of 9.7 GB). Carved
/// best fit into reservations 1.5x their first page, the pages outgrew
/// their reservations within a few steps and were committed whole again:
/// 61.6 GB here, 22x the peak on the mock's synthetic growing pair.
#[test]
fn two_growing_caches_commit_their_growth_not_their_pages() {
    let g = 2 * MIB;
    // Pages of their own up to 32 GiB, as on a large device.
    let layout = MemoryLayout::new(
        &[
            PoolSpec::small(64 * KIB, KIB),
            PoolSpec::sliced(MIB, 64 * KIB),
            PoolSpec::exclusive(32 << 30),
        ],
        256,
        MemoryPolicy::default(),
    )
    .unwrap();
    let mut m = MemoryManager::new(TestStorage::resizable(g, 1 << 40), layout);
    let (starts, steps, every, max) = (
        [256 * MIB, 1 << 30],
        [48 * MIB, 24 * MIB],
        [1, 3],
        3u64 << 30,
    );
    let mut size = starts;
    let mut cycles = [1u64; 2];
    let mut cache = [m.reserve(size[0]).unwrap().0, m.reserve(size[1]).unwrap().0];
    let (mut committed_total, mut peak) = (m.storage().committed(), 0);
    let mut reserve = |m: &mut MemoryManager<TestStorage>, bytes: u64| {
        let before = m.storage().committed();
        let (h, _) = m.reserve(bytes).unwrap();
        let after = m.storage().committed();
        committed_total += after.saturating_sub(before);
        peak = peak.max(after);
        h
    };
    for step in 0..240u64 {
        let acts: Vec<_> = (0..6)
            .map(|i| reserve(&mut m, (1 + (step * 7 + i * 13) % 96) * MIB + 256))
            .collect();
        for k in 0..2 {
            if step % every[k] != 0 {
                continue;
            }
            size[k] += steps[k];
            if size[k] > max {
                size[k] = starts[k];
                cycles[k] += 1;
            }
            let next = reserve(&mut m, size[k]);
            m.free(cache[k]).unwrap();
            cache[k] = next;
        }
        for h in acts {
            m.free(h).unwrap();
        }
    }
    let (committed_total, peak) = (committed_total, peak);
    let bound = (cycles[0] + cycles[1]) * 2 * max + peak;
    assert!(
        committed_total <= bound,
        "{committed_total} bytes committed over the run (bound {bound}), for a peak of {peak}"
    );
    // The page freed last is taken back in place when the same size comes
    // again: nothing is committed.
    let calls = m.storage().commit_calls;
    let last = m.storage().committed();
    m.free(cache[1]).unwrap();
    let (again, _) = m.reserve(size[1]).unwrap();
    assert_eq!(m.storage().commit_calls, calls, "taken back, not committed");
    assert_eq!(m.storage().committed(), last);
    for h in [cache[0], again] {
        m.free(h).unwrap();
    }
}

/// The mirror of the test below: idle chunks of the shared lane do not sit
/// in the trim headroom while a large page (which never uses them: it gets
/// a reservation of its own) commits past what was ever held. They go back
/// first, free of the churn budget, so the memory held stays at the trim
/// floor; with a headroom of 1/8 of the live peak, trimming to the limit
/// alone would have kept up to 192 MiB of them.
#[test]
fn a_large_page_past_the_floor_takes_the_shared_lanes_idle_chunks_first() {
    let g = 2 * MIB;
    // Large pages from 512 MiB (the mechanism, not the default's size).
    let policy = MemoryPolicy {
        trim_headroom_shift: 3,
        large_page_granules: 256,
        // Large pages in reservations of their own (what this test is
        // about), not in the shared lane.
        large_page_space: false,
        ..MemoryPolicy::default()
    };
    let layout = MemoryLayout::new(
        &[
            PoolSpec::small(64 * KIB, KIB),
            PoolSpec::sliced(MIB, 64 * KIB),
            PoolSpec::exclusive(32 << 30),
        ],
        256,
        policy,
    )
    .unwrap();
    let mut m = MemoryManager::new(TestStorage::resizable(g, 1 << 40), layout);
    // A steady set of 1 GiB and a transient of 512 MiB beside it, in pages
    // of 16 MiB (the shared lane), then the transient freed: its chunks
    // stay committed, idle.
    let steady: Vec<_> = (0..64).map(|_| m.reserve(16 * MIB).unwrap().0).collect();
    let transient: Vec<_> = (0..32).map(|_| m.reserve(16 * MIB).unwrap().0).collect();
    let floor = m.storage().committed();
    assert_eq!(floor, 96 * 16 * MIB, "every page committed exactly");
    for h in transient {
        m.free(h).unwrap();
    }
    // (All of it but what shares a chunk with the steady set.)
    assert!(
        m.idle_committed_bytes() >= 31 * 16 * MIB,
        "the transient's memory stays"
    );
    // A large page of 512 MiB (256 granules): past the floor, well past it
    // with the headroom (the live peak / 8 = 192 MiB) too.
    let decommits = m.storage().decommit_calls;
    let (h, _) = m.reserve(512 * MIB).unwrap();
    assert!(
        m.storage().decommit_calls > decommits,
        "idle shared chunks went back"
    );
    assert!(
        m.storage().committed() <= floor,
        "{} bytes held, over the most ever held ({floor})",
        m.storage().committed()
    );
    // What went is what the large page needed, no more than a piece
    // (64 granules) over it: the steady set and the large page are in
    // place.
    assert!(m.storage().committed() + 64 * g >= floor);
    m.free(h).unwrap();
    for h in steady {
        m.free(h).unwrap();
    }
}

/// A large page's reservation left idle does not sit in the trim headroom
/// while the other pages grow past what was ever held: a commit that would
/// pass the trim floor (the most held, the live peak) gives the idle large
/// chunks back first, as many as it needs, so the memory held stays at the
/// floor; the large page coming back commits what went.
#[test]
fn an_idle_large_reservation_goes_back_before_others_grow_past_the_floor() {
    let g = 2 * MIB;
    let layout = MemoryLayout::new(
        &[
            PoolSpec::small(64 * KIB, KIB),
            PoolSpec::sliced(MIB, 64 * KIB),
            PoolSpec::exclusive(32 << 30),
        ],
        256,
        MemoryPolicy {
            // Large pages in reservations of their own (what this test is
            // about), not in the shared lane.
            large_page_space: false,
            ..MemoryPolicy::default()
        },
    )
    .unwrap();
    let mut m = MemoryManager::new(TestStorage::resizable(g, 1 << 40), layout);
    // A steady set of 64 pages of 16 MiB, then a transient of 1 GiB (a
    // large page: at least 256 granules) on top of it.
    let steady: Vec<_> = (0..64).map(|_| m.reserve(16 * MIB).unwrap().0).collect();
    let large = 1u64 << 30;
    let (h, _) = m.reserve(large).unwrap();
    let floor = m.storage().committed();
    assert_eq!(floor, 64 * 16 * MIB + large, "every page committed exactly");
    m.free(h).unwrap();
    assert_eq!(
        m.storage().committed(),
        floor,
        "the transient's memory stays"
    );
    // The steady set grows by 8 MiB a page, 12 MiB in all: well inside the
    // headroom (the live peak / 128 = 16 MiB), past the floor.
    let decommits = m.storage().decommit_calls;
    let more: Vec<_> = (0..3).map(|_| m.reserve(4 * MIB).unwrap().0).collect();
    assert!(
        m.storage().committed() <= floor,
        "{} bytes held, over the most ever held ({floor})",
        m.storage().committed()
    );
    let went = m.storage().decommit_calls - decommits;
    assert!(went >= 1, "an idle chunk of the large page went back");
    // Only pieces of the large reservation went: the steady pages and the
    // new ones are all in place, and the idle large memory left is what
    // was not needed (a piece is at most 64 granules).
    assert!(m.idle_committed_bytes() >= large - 12 * MIB - 64 * g);
    // The transient again: it commits what went back, and no more than the
    // floor plus the growth is held.
    let commits = m.storage().commit_calls;
    let (h, _) = m.reserve(large).unwrap();
    assert!(
        m.storage().commit_calls > commits,
        "the pieces that went come back"
    );
    assert!(
        m.storage().committed() <= floor + 12 * MIB,
        "{} bytes held, floor {floor}",
        m.storage().committed()
    );
    m.free(h).unwrap();
    for h in steady.into_iter().chain(more) {
        m.free(h).unwrap();
    }
}

/// Memory a commit reached ahead of a page, in pieces wholly past the page,
/// was booked as used by a page that never releases it: it outlived every
/// page and every cleanup (16 KiB with 4 KiB granules, 16 MiB with the
/// driver's 2 MiB granules, and its reservation with it).
#[test]
fn memory_reached_ahead_of_a_page_goes_back_with_nothing_live() {
    for (granule, big) in [(4 * KIB, 17 * MIB), (2 * MIB, 9u64 << 30)] {
        let mut m = MemoryManager::new(TestStorage::resizable(granule, 1 << 40), default_layout());
        let (a, _) = m.reserve(big).unwrap();
        let (b, _) = m.reserve(big).unwrap();
        // What is held drops; the high-water mark stays: room to reach ahead.
        m.free(b).unwrap();
        let (c, _) = m.reserve(1).unwrap();
        m.free(c).unwrap();
        m.free(a).unwrap();
        m.cleanup().unwrap();
        assert_eq!(m.report().total().pages, 0);
        assert_eq!(
            (m.held_bytes(), m.storage().committed(), m.address_space()),
            (0, 0, 0),
            "granule {granule}: memory left with nothing live: {:?}",
            m.storage().ranges
        );
        // Nothing holds the layout in place either.
        assert!(m.install(default_layout()).is_ok());
    }
}

/// Inside a capture, and while another stream records (flushes held), the
/// storage is asked for nothing: no commit, no page and no new address
/// reservation either (a reservation was once asked for before the commit
/// that was refused).
#[test]
fn no_reservation_is_asked_for_inside_a_capture_or_while_flushes_are_held() {
    for (held, first) in [(false, 0), (true, 0), (false, MIB), (true, MIB)] {
        let mut m = resizable();
        // With and without a reservation already there.
        let a = (first > 0).then(|| m.reserve(first).unwrap().0);
        if held {
            m.hold_flushes(true).unwrap();
        } else {
            m.prepare().unwrap();
            m.begin_capture().unwrap();
        }
        let s = m.storage();
        let before = (s.reserve_calls, s.alloc_calls, s.commit_calls);
        for size in [1000, 3 * MIB, 64 * MIB, 600 * MIB, 2 << 30] {
            match m.reserve(size) {
                Err(MemoryError::AllocationInCapture { .. }) if !held => {}
                Err(MemoryError::CaptureElsewhere { .. }) if held => {}
                // Past any reservation: refused before the storage too.
                Err(MemoryError::OutOfMemory { .. }) => {}
                // Served by what the manager holds (the storage unasked,
                // checked below).
                Ok((h, _)) if first > 0 => m.free(h).unwrap(),
                other => panic!("held {held}, {size} B: {other:?}"),
            }
            let s = m.storage();
            assert_eq!(
                (s.reserve_calls, s.alloc_calls, s.commit_calls),
                before,
                "held {held}, first {first}: {size} B asked the storage"
            );
        }
        if let Some(a) = a {
            m.free(a).unwrap();
        }
    }
}

/// Resuming flushes while the manager's own stream records would
/// synchronize inside the capture: what is pending waits for the next
/// flush outside it.
#[test]
fn resuming_flushes_inside_the_managers_own_capture_flushes_nothing() {
    let mut m = MemoryManager::new(TestStorage::new(), default_layout());
    // Past every pool: a dedicated page, handed back at its free.
    let (h, _) = m.reserve(1 << 30).unwrap();
    m.free(h).unwrap();
    m.hold_flushes(true).unwrap();
    m.cleanup().unwrap();
    let pending = m.storage().pending_bytes();
    assert!(pending > 0, "the page waits for a flush");
    let flushes = m.storage().flushes;
    m.prepare().unwrap();
    m.begin_capture().unwrap();
    m.hold_flushes(false).unwrap();
    assert_eq!(m.storage().flushes, flushes, "flushed inside the capture");
    assert_eq!(m.storage().pending_bytes(), pending);
    m.end_capture(|_| {}).unwrap();
    m.cleanup().unwrap();
    assert_eq!(m.storage().pending_bytes(), 0);
    assert_eq!(m.held_bytes(), 0);
}
