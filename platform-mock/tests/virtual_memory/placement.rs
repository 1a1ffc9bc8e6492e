//! Where the manager places pages over resizable storage and what that
//! costs in driver calls and bytes: granule boundaries, large pages behind
//! live ones and in reservations of their own, growing buffers' steps,
//! partial idle chunks shed, commits in pieces, the small lane. What
//! trimming keeps: `trimming.rs`.

use super::*;

/// A manager over the rig's device storage (carved pages) with one
/// exclusive pool, no trim headroom and no reaching ahead (a commit is what
/// a page needs), and commits in pieces of `piece` granules (0: any size).
fn exact_manager(
    r: &Rig,
    piece: u32,
) -> streamcore::memory::MemoryManager<streamcore_mock::MockStorage> {
    exact_manager_with(r, |p| p.commit_piece_granules = piece)
}

/// [`exact_manager`] with chunks of any size and `tweak` applied to its
/// policy.
fn exact_manager_with(
    r: &Rig,
    tweak: impl FnOnce(&mut streamcore::memory::MemoryPolicy),
) -> streamcore::memory::MemoryManager<streamcore_mock::MockStorage> {
    use streamcore::memory::{MemoryLayout, MemoryManager, MemoryPolicy, PoolSpec};
    let mut policy = MemoryPolicy {
        trim_headroom_shift: 64,
        commit_step_shift: 64,
        commit_piece_granules: 0,
        ..MemoryPolicy::default()
    };
    tweak(&mut policy);
    let layout = MemoryLayout::new(&[PoolSpec::exclusive(4 * MIB)], 256, policy).unwrap();
    let m = MemoryManager::new(r.mock.device_storage().unwrap(), layout);
    assert!(m.carves_pages());
    m
}

/// [`exact_manager_with`] where pages of four granules and more are large.
fn large_manager(
    r: &Rig,
    tweak: impl FnOnce(&mut streamcore::memory::MemoryPolicy),
) -> streamcore::memory::MemoryManager<streamcore_mock::MockStorage> {
    exact_manager_with(r, |p| {
        p.large_page_granules = 4;
        tweak(p);
    })
}

/// Gives every idle byte of `m` back and checks the rig holds no device
/// memory and saw no hazard (every page of `m` freed before).
pub(crate) fn cleans_up(
    r: &Rig,
    m: &mut streamcore::memory::MemoryManager<streamcore_mock::MockStorage>,
) {
    m.cleanup().unwrap();
    assert_eq!(r.mock.memory_used(MemoryKind::Device), 0);
    r.mock.assert_no_hazards();
}

/// `aligned_page_granules`: after a page of half a granule, two pages of
/// two granules each. Carved at the first free byte they start mid-granule
/// and share a chunk, so freeing the first strands its bytes in the chunk
/// the second still uses; on granule boundaries each has chunks of its own
/// and the first one's go back whole.
#[test]
fn pages_of_whole_granules_on_granule_boundaries_own_their_chunks() {
    let g = 64 * KIB;
    // (the second and third pages' offsets; device bytes held and bytes
    // stranded once the second is freed and the idle memory given back)
    let run = |aligned: bool| {
        let r = rig(config(17));
        let mut m = exact_manager_with(&r, |p| p.aligned_page_granules = u32::from(aligned) * 2);
        let (s, rs) = m.reserve(g / 2).unwrap();
        let (a, ra) = m.reserve(2 * g).unwrap();
        let (b, rb) = m.reserve(2 * g).unwrap();
        assert_eq!(rb.offset, ra.offset + 2 * g, "side by side");
        m.free(a).unwrap();
        m.cleanup().unwrap();
        let figures = (
            ra.offset - rs.offset,
            r.mock.memory_used(MemoryKind::Device),
            m.stranded_bytes(),
        );
        for h in [s, b] {
            m.free(h).unwrap();
        }
        cleans_up(&r, &mut m);
        figures
    };
    // Off: granules 0 (the small page and the first's head), 1-2 (the
    // first's rest and the second's head), 3-4: all held, 2.5 granules
    // stranded.
    assert_eq!(run(false), (g / 2, 5 * g, 5 * g / 2));
    // On: granule 0 (the small page), 1-2 given back, 3-4 (the second).
    assert_eq!(run(true), (g, 3 * g, g / 2));
}

/// `share_large_reservations`: a large page freed leaves its reservation's
/// granules committed (two chunks of four); a smaller large page takes the
/// reservation's start (its first chunk), and the next one of that size
/// goes behind it over the committed rest (the second),
/// with no call, where without sharing it reserves a reservation of its own
/// and commits its page whole. Behind a live page nothing is committed: a
/// page that needs granules past the committed ones gets a reservation of
/// its own either way.
#[test]
fn a_large_page_goes_behind_a_live_one_over_committed_granules() {
    let g = 64 * KIB;
    // (the second page's reservation is the first's, its offset from the
    // first's, driver calls taking memory or addresses for it; the same for
    // the third page)
    let run = |share: bool| {
        let r = rig(config(23));
        let mut m = large_manager(&r, |p| {
            p.commit_piece_granules = 4;
            p.share_large_reservations = share;
            p.large_page_space = false;
        });
        let (big, _) = m.reserve(8 * g).unwrap();
        m.free(big).unwrap();
        let (a, ra) = m.reserve(4 * g).unwrap();
        let calls = device_allocs(&r.mock);
        let (b, rb) = m.reserve(4 * g).unwrap();
        let second = (
            rb.page == ra.page,
            rb.offset.wrapping_sub(ra.offset),
            device_allocs(&r.mock) - calls,
        );
        let calls = device_allocs(&r.mock);
        let (c, rc) = m.reserve(4 * g).unwrap();
        let third = (rc.page == ra.page, device_allocs(&r.mock) - calls);
        for h in [a, b, c] {
            m.free(h).unwrap();
        }
        cleans_up(&r, &mut m);
        (second, third)
    };
    // Shared: the second page behind the first, over granules 4-7, no
    // call; the third finds nothing committed behind them: a reservation
    // and a commit.
    assert_eq!(run(true), ((true, 4 * g, 0), (false, 2)));
    // Not shared: a reservation and a commit for each.
    let (second, third) = run(false);
    assert!(!second.0, "a reservation of its own");
    assert_eq!((second.2, third), (2, (false, 2)));
}

/// `keep_bare_reservations`: a large page freed, its chunk then trimmed
/// for a shared page, leaves its reservation bare; kept, the next large
/// page starts in it with no reservation call (and commits what it needs);
/// not kept, the reservation went back with its last chunk and the next
/// large page reserves a new one. `cleanup` gives a kept one back.
#[test]
fn a_large_pages_bare_reservation_is_kept_for_the_next_one() {
    let g = 64 * KIB;
    // (the second large page's reservation is the first's, reservation
    // calls it made, device bytes while it lives)
    let run = |keep: bool| {
        let r = rig(config(29));
        let mut m = large_manager(&r, |p| {
            p.keep_bare_reservations = keep;
            p.large_page_space = false;
        });
        let (first, r1) = m.reserve(8 * g).unwrap();
        m.free(first).unwrap();
        // Over the trim floor: the idle large chunk goes back for it.
        let (small, _) = m.reserve(3 * g).unwrap();
        assert_eq!(r.mock.memory_used(MemoryKind::Device), 3 * g, "trimmed");
        let before = reserves(&r.mock);
        let (second, r2) = m.reserve(8 * g).unwrap();
        let figures = (
            r2.page == r1.page,
            reserves(&r.mock) - before,
            r.mock.memory_used(MemoryKind::Device),
        );
        for h in [small, second] {
            m.free(h).unwrap();
        }
        cleans_up(&r, &mut m);
        assert_eq!(m.address_space(), 0, "cleanup gives every reservation back");
        figures
    };
    assert_eq!(run(true), (true, 0, 11 * g));
    assert_eq!(run(false), (false, 1, 11 * g));
}

/// `large_page_space`: two large pages side by side, both freed, leave
/// their granules committed; a page of both their sizes lands over them
/// in the shared space with no call, where in reservations of their own it
/// finds half of it committed at the start of one and commits the rest.
#[test]
fn large_pages_share_the_space_over_what_others_left() {
    let g = 64 * KIB;
    // (the third page starts where the first did, storage commits and
    // reservations for it)
    let run = |space: bool| {
        let r = rig(config(31));
        let mut m = large_manager(&r, |p| {
            p.commit_piece_granules = 4;
            p.large_page_space = space;
        });
        let (a, ra) = m.reserve(4 * g).unwrap();
        let (b, _) = m.reserve(4 * g).unwrap();
        m.free(a).unwrap();
        m.free(b).unwrap();
        let (calls, reserved) = (device_allocs(&r.mock), reserves(&r.mock));
        let (c, rc) = m.reserve(8 * g).unwrap();
        let figures = (
            rc.page == ra.page && rc.offset == ra.offset,
            device_allocs(&r.mock) - calls,
            reserves(&r.mock) - reserved,
        );
        m.free(c).unwrap();
        cleans_up(&r, &mut m);
        figures
    };
    assert_eq!(run(true), (true, 0, 0));
    assert_eq!(run(false), (true, 1, 0));
}

/// `large_page_space`: a buffer growing a page at a time (the next page
/// reserved, then the one before freed) takes its first steps in the
/// shared space; once a live step is two steps deep, its next, larger page gets a
/// reservation of its own, twice its size, and the steps after it take
/// turns in two such reservations as they do without the space (each
/// finding the one the step before last left, committed over what that
/// step used).
#[test]
fn a_growing_buffers_later_steps_get_reservations_of_their_own() {
    let g = 64 * KIB;
    let r = rig(config(37));
    let mut m = large_manager(&r, |p| {
        p.large_page_space = true;
    });
    let (mut live, first) = m.reserve(4 * g).unwrap();
    // (the reservation of each step, and the reservation calls it made)
    let mut steps = Vec::new();
    for granules in 5..=9 {
        let before = reserves(&r.mock);
        let (next, at) = m.reserve(granules * g).unwrap();
        m.free(live).unwrap();
        live = next;
        steps.push((at.page, reserves(&r.mock) - before));
    }
    let pages: Vec<_> = steps.iter().map(|s| s.0).collect();
    let calls: Vec<_> = steps.iter().map(|s| s.1).collect();
    assert_eq!(
        (pages[0], pages[1]),
        (first.page, first.page),
        "5 and 6 granules in the shared space"
    );
    assert!(
        pages[2] != first.page && pages[3] != pages[2] && pages[3] != first.page,
        "7 and 8 granules in reservations of their own: {pages:?}"
    );
    assert_eq!(pages[4], pages[2], "9 granules where 7 were");
    assert_eq!(calls, [0, 0, 1, 1, 0]);
    m.free(live).unwrap();
    cleans_up(&r, &mut m);
}

/// `shed_partial_granules`: a page carved over part of an idle chunk wakes
/// it whole (its rest stranded while the page lives) unless the page
/// would leave at least that many of the chunk's granules unused, when the
/// chunk is decommitted first and the page commits what it needs.
#[test]
fn an_idle_chunk_a_page_uses_in_part_is_shed_past_the_setting() {
    use streamcore::memory::ChurnBudget;
    let g = 64 * KIB;
    // (device bytes held and stranded while the small page lives)
    let run = |shed: u32| {
        let r = rig(config(19));
        let mut m = exact_manager_with(&r, |p| {
            p.shed_partial_granules = shed;
            p.churn_budget = ChurnBudget::UNLIMITED;
        });
        let (big, rbig) = m.reserve(8 * g).unwrap();
        m.free(big).unwrap();
        assert_eq!(
            r.mock.memory_used(MemoryKind::Device),
            8 * g,
            "kept committed"
        );
        let (small, rsmall) = m.reserve(2 * g).unwrap();
        assert_eq!(rsmall.offset, rbig.offset, "carved over the idle chunk");
        let figures = (r.mock.memory_used(MemoryKind::Device), m.stranded_bytes());
        m.free(small).unwrap();
        cleans_up(&r, &mut m);
        figures
    };
    assert_eq!(run(0), (8 * g, 6 * g), "off: woken whole");
    assert_eq!(run(7), (8 * g, 6 * g), "six granules unused, under seven");
    assert_eq!(run(6), (2 * g, 0), "six unused, at the setting: shed");
}

/// Commits made of pieces: each piece is a chunk of its own, so a page
/// that lives on keeps only the pieces it touches, where one whole chunk
/// would strand the rest (the same pages, the same frees, beside the
/// default of chunks of any size).
#[test]
fn a_commit_in_pieces_gives_back_what_no_live_page_touches() {
    let g = 64 * KIB;
    // (device bytes held and bytes stranded once the first page is freed
    // and the idle memory given back; commits made for the two pages)
    let run = |piece: u32| {
        let r = rig(config(11));
        let mut m = exact_manager(&r, piece);
        // Two pages of 2.5 granules side by side: the second starts inside
        // the first one's last granule.
        let (a, ra) = m.reserve(g * 5 / 2).unwrap();
        let (b, rb) = m.reserve(g * 5 / 2).unwrap();
        assert_eq!(rb.offset, ra.offset + g * 5 / 2, "carved side by side");
        let commits = m.commits();
        m.free(a).unwrap();
        m.cleanup().unwrap();
        let stranded = m.stranded_bytes();
        let held = r.mock.memory_used(MemoryKind::Device);
        m.free(b).unwrap();
        cleans_up(&r, &mut m);
        (held, stranded, commits)
    };
    // One chunk per commit: granules 0-2, then 3-4; the first stays whole
    // while the second page uses its last granule (stranded: its first two
    // granules and half of the fifth, the second page's end).
    assert_eq!(run(0), (5 * g, g * 5 / 2, 2));
    // One chunk per granule: granules 0 and 1 go back with the first page.
    assert_eq!(run(1), (3 * g, g / 2, 5));
    // Pieces of two: 0-1, 2, then 3-4.
    assert_eq!(run(2), (3 * g, g / 2, 3));
}

/// A page whose bytes are committed in part (an idle chunk in its middle)
/// commits its gaps and reaches past its end no further than the commit
/// step allows beyond what the page needs: the step is measured against
/// the page's gaps together, not granted again to its last gap (which
/// committed the first gap's size a second time, past the page's end, and
/// stranded it there while the page lived: the growing pairs of the driver
/// model held 1.06 times their live peak where 1.007 was needed).
#[test]
fn a_page_committed_in_two_gaps_reaches_no_further_than_its_step() {
    let g = 64 * KIB;
    let r = rig(config(13));
    let mut m = exact_manager(&r, 0);
    let (a, ra) = m.reserve(2 * g).unwrap();
    let (b, rb) = m.reserve(2 * g).unwrap();
    let (c, rc) = m.reserve(2 * g).unwrap();
    assert_eq!(
        (rb.offset, rc.offset),
        (ra.offset + 2 * g, ra.offset + 4 * g)
    );
    assert_eq!(m.commits(), 3);
    // The outer pages' chunks go back; the middle page is freed in stream
    // order, its work not yet done, so its chunk stays committed.
    m.free(a).unwrap();
    m.free(c).unwrap();
    m.cleanup().unwrap();
    assert_eq!(r.mock.memory_used(MemoryKind::Device), 2 * g);
    m.free_ordered(b, 1).unwrap();
    // Six granules over the idle chunk: two gaps of two granules.
    let (d, rd) = m.reserve(6 * g).unwrap();
    assert_eq!(rd.offset, ra.offset, "carved over the three");
    assert_eq!(m.commits(), 5, "one commit per gap");
    assert_eq!(
        r.mock.memory_used(MemoryKind::Device),
        6 * g,
        "nothing committed past the page"
    );
    m.free(d).unwrap();
    m.complete(1);
    cleans_up(&r, &mut m);
}

/// `small_page_lane`: a page of a granule and a half, then a small page
/// carved after it, in the granule its last half shares. Freed, the large
/// one's chunk stays pinned by the small page in the shared lane (two
/// granules held for 16 KiB); in the small lane the small page has a
/// reservation and a granule of its own, and the large one's chunk goes
/// back whole. A second small page joins the first's reservation with no
/// reservation call, and a page of one whole granule is not small.
#[test]
fn small_pages_in_their_own_lane_pin_no_larger_pages_chunk() {
    let g = 64 * KIB;
    // (the small page shares the large one's reservation, device bytes
    // held after it was freed and idle memory given back, reservation
    // calls for the second small page, the whole granule's page shares
    // the large one's reservation)
    let run = |small: bool| {
        let r = rig(config(41));
        let mut m = exact_manager_with(&r, |p| p.small_page_lane = small);
        let (large, at) = m.reserve(g + g / 2).unwrap();
        let (tiny, tiny_at) = m.reserve(16 * KIB).unwrap();
        let shares = tiny_at.page == at.page;
        m.free(large).unwrap();
        m.cleanup().unwrap();
        let held = r.mock.memory_used(MemoryKind::Device);
        let before = reserves(&r.mock);
        let (second, second_at) = m.reserve(8 * KIB).unwrap();
        assert_eq!(second_at.page, tiny_at.page, "small pages share a lane");
        let second_reserves = reserves(&r.mock) - before;
        let (whole, whole_at) = m.reserve(g).unwrap();
        let (other, other_at) = m.reserve(2 * g).unwrap();
        let whole_shared = whole_at.page == other_at.page;
        for h in [tiny, second, whole, other] {
            m.free(h).unwrap();
        }
        cleans_up(&r, &mut m);
        assert_eq!(m.address_space(), 0, "every lane's reservations went back");
        (shares, held, second_reserves, whole_shared)
    };
    assert_eq!(run(false), (true, 2 * g, 0, true));
    assert_eq!(run(true), (false, g, 0, true));
}

/// `small_page_lane` with trimming: small and larger pages of random sizes
/// and lifetimes come and go, chunks move between the lanes (a lane's idle
/// chunks go back for another lane's commit); after every step the books
/// hold exactly what the device has committed, and everything goes back
/// without a hazard.
#[test]
fn the_small_lanes_books_are_the_devices() {
    use streamcore::memory::{MemoryLayout, MemoryManager, MemoryPolicy, PoolSpec};
    let g = 64 * KIB;
    for seed in 0..8u64 {
        let r = rig(config(50 + seed));
        let policy = MemoryPolicy {
            small_page_lane: true,
            ..MemoryPolicy::default()
        };
        let layout = MemoryLayout::new(&[PoolSpec::exclusive(4 * MIB)], 256, policy).unwrap();
        let mut m = MemoryManager::new(r.mock.device_storage().unwrap(), layout);
        let mut live = Vec::new();
        let mut draw = xorshift(seed);
        for _ in 0..400 {
            let x = draw();
            if live.len() > 12 || (x % 3 == 0 && !live.is_empty()) {
                let h = live.swap_remove((x as usize >> 8) % live.len());
                m.free(h).unwrap();
            } else {
                let bytes = if x & 4 == 0 {
                    256 * (1 + (x >> 20) % 200)
                } else {
                    g / 2 + (x >> 24) % (8 * g)
                };
                live.push(m.reserve(bytes).unwrap().0);
            }
            assert_eq!(
                m.held_bytes(),
                r.mock.memory_used(MemoryKind::Device),
                "seed {seed}: the books are the device's"
            );
        }
        assert!(
            m.decommits() > 0 && reserves(&r.mock) >= 2,
            "seed {seed}: both lanes in use and chunks given back"
        );
        for h in live {
            m.free(h).unwrap();
        }
        cleans_up(&r, &mut m);
        assert_eq!(
            m.address_space(),
            0,
            "seed {seed}: every reservation went back"
        );
    }
}
