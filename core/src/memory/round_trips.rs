//! Round trips: memory trimmed by choice that the same pages keep needing
//! again.
//!
//! Trimming (`decommit_to_fit`) gives idle chunks back, oldest first, so a
//! commit stays under the trim limit. On a workload that cycles through
//! the same pages in a layout that shifts a little every step (a diffusion
//! sampler's steps), the oldest idle chunk is the one the cycle needs
//! next: each step trims a chunk and commits it again a few reserves
//! later, and that commit trims the next, every step for as long as the
//! workload runs: two driver calls per chunk and step to keep the peak
//! about one percent lower. The manager remembers the last [`KEPT`]
//! chunks it trimmed by choice; once one of them has come back [`TRIPS`]
//! times, each within the policy's window
//! ([`MemoryPolicy::round_trip_window`](super::MemoryPolicy)), the bytes
//! held with the commit that takes it back become the level trimming
//! keeps (`Trimming::settled` in the books, as when the churn budget runs
//! out), so the cycle stops. Settling is bounded: never more than
//! `peak_live >> CAP_SHIFT` above the trim limit the pages and the live
//! data set (settling aside), so a workload whose pages come back in ever
//! new places cannot ratchet the level up. A chunk that came back once
//! only (a phase's pages taken again after a pause) changes nothing.

use alloc::vec::Vec;

use super::bounded::push_bounded;
use super::manager::MemoryManager;
use super::rounding::shr;
use crate::platform::Storage;

/// How many trimmed chunks are remembered.
const KEPT: usize = 8;

/// Round trips of one chunk that prove its trims buy nothing.
const TRIPS: u32 = 2;

/// Settling raises the trim level by at most the live peak over
/// `2^CAP_SHIFT` (1/32) above the limit set by the live data and the pages.
const CAP_SHIFT: u32 = 5;

/// One chunk trimmed by choice: its map, its granules, when, and how often
/// it came back.
#[derive(Copy, Clone, Debug, Default)]
struct Trim {
    map: u32,
    lo: u32,
    hi: u32,
    /// The reserve count at its last trim; 0 once it came back (or for an
    /// empty entry).
    at: u64,
    /// Times it came back within the window.
    trips: u32,
}

impl Trim {
    /// Whether the entry holds a chunk (a chunk has granules: `hi > lo`,
    /// so an empty entry's `hi` of 0 names none).
    fn used(&self) -> bool {
        self.hi != 0
    }
}

/// The chunks trimmed last, by choice (a ring, the oldest replaced).
/// Room for the ring is taken with the first trim, not with the manager:
/// a manager that never trims by choice (over a storage that declares no
/// costs, every firmware target's null platform among them) holds a few
/// words for it. If that one allocation fails, trims are not remembered
/// and trimming never settles on round trips, as with the window off.
#[derive(Clone, Debug, Default)]
pub(super) struct RoundTrips {
    /// At most [`KEPT`]; full once the ring came round.
    trims: Vec<Trim>,
    /// The entry the next new chunk replaces, once the ring is full.
    next: usize,
}

impl RoundTrips {
    /// Notes chunk `[lo, hi)` of `map` trimmed by choice at reserve `now`
    /// (`now > 0`: a trim happens inside a reserve).
    pub(super) fn trimmed(&mut self, map: u32, lo: u32, hi: u32, now: u64) {
        if let Some(t) = self
            .trims
            .iter_mut()
            .find(|t| t.used() && t.map == map && t.lo == lo && t.hi == hi)
        {
            t.at = now;
            return;
        }
        let t = Trim {
            map,
            lo,
            hi,
            at: now,
            trips: 0,
        };
        if self.trims.len() < KEPT {
            // The ring fills in order before it comes round: the oldest is
            // entry 0 then, as `next` says.
            push_bounded(&mut self.trims, KEPT, t);
            return;
        }
        if let Some(slot) = self.trims.get_mut(self.next) {
            *slot = t;
        }
        self.next = (self.next + 1) % KEPT;
    }

    /// A page spanning granules `[lo, hi)` of `map` is committed at reserve
    /// `now`: counts a round trip for every remembered chunk inside the
    /// span trimmed at most `window` reserves before; whether one of them
    /// has now come back [`TRIPS`] times.
    pub(super) fn came_back(&mut self, map: u32, lo: u32, hi: u32, now: u64, window: u64) -> bool {
        let mut proven = false;
        for t in &mut self.trims {
            let inside = t.map == map && lo <= t.lo && t.hi <= hi;
            if t.used() && t.at != 0 && inside && now.saturating_sub(t.at) <= window {
                t.at = 0;
                t.trips = t.trips.saturating_add(1);
                proven |= t.trips >= TRIPS;
            }
        }
        proven
    }

    /// Forgets the chunks of `map` (its reservation went: the index may
    /// name another one next).
    pub(super) fn forget_map(&mut self, map: u32) {
        for t in &mut self.trims {
            if t.used() && t.map == map {
                *t = Trim::default();
            }
        }
    }
}

impl<S: Storage> MemoryManager<S> {
    /// Before trimming for a commit of `need` bytes to a page spanning
    /// granules `[lo, hi)` of `map`: when that commit takes back a chunk
    /// whose trims proved to buy nothing, settles trimming at the bytes
    /// held with the commit, within the cap.
    pub(super) fn settle_round_trip(&mut self, map: u32, lo: u32, hi: u32, need: u64) {
        let window = u64::from(self.layout.policy().round_trip_window);
        if window == 0 {
            return;
        }
        let now = self.books.reserves;
        if !self.books.trims.came_back(map, lo, hi, now, window) {
            return;
        }
        let cap = self
            .needed_bytes()
            .saturating_add(self.trim_headroom())
            .saturating_add(shr(self.books.peak_live, CAP_SHIFT));
        let level = self.held_bytes().saturating_add(need);
        if level <= cap {
            self.books.trimming.settled = self.books.trimming.settled.max(level);
            self.books.trimming.round_trip_settles += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manager that never trims by choice holds no ring: nothing is
    /// allocated until the first trim, and then room for all of it at once.
    #[test]
    fn the_ring_is_allocated_with_the_first_trim() {
        let mut r = RoundTrips::default();
        assert!(!r.came_back(0, 0, 4, 10, 64));
        r.forget_map(0);
        assert_eq!(r.trims.capacity(), 0);
        r.trimmed(0, 1, 2, 5);
        assert_eq!(r.trims.capacity(), KEPT);
        for i in 0..3 * KEPT as u32 {
            r.trimmed(1, i, i + 1, 6 + u64::from(i));
        }
        assert_eq!(r.trims.len(), KEPT);
        assert_eq!(r.trims.capacity(), KEPT, "the ring came round in place");
    }

    #[test]
    fn a_chunk_proves_a_round_trip_on_its_second_return_within_the_window() {
        let mut r = RoundTrips::default();
        r.trimmed(3, 10, 14, 100);
        // Back once, inside a wider span: counted, not yet proven.
        assert!(!r.came_back(3, 8, 20, 110, 64));
        // Not trimmed again: a second commit counts nothing.
        assert!(!r.came_back(3, 10, 14, 111, 64));
        r.trimmed(3, 10, 14, 200);
        assert!(r.came_back(3, 10, 14, 230, 64));
    }

    #[test]
    fn other_maps_partial_spans_and_late_returns_count_nothing() {
        let mut r = RoundTrips::default();
        for round in 0..4u64 {
            let t = 100 + round * 1000;
            r.trimmed(3, 10, 14, t);
            assert!(!r.came_back(4, 10, 14, t + 1, 64), "another map");
            assert!(
                !r.came_back(3, 11, 14, t + 1, 64),
                "only a part of the chunk"
            );
            assert!(!r.came_back(3, 10, 14, t + 65, 64), "past the window");
        }
    }

    #[test]
    fn a_forgotten_map_and_the_oldest_of_a_full_ring_are_gone() {
        let mut r = RoundTrips::default();
        r.trimmed(3, 0, 1, 1);
        assert!(!r.came_back(3, 0, 1, 2, 64));
        r.trimmed(3, 0, 1, 3);
        r.forget_map(3);
        assert!(!r.came_back(3, 0, 1, 4, 64), "forgotten with its map");
        // KEPT other chunks push the first out of the ring.
        r.trimmed(5, 0, 1, 10);
        assert!(!r.came_back(5, 0, 1, 11, 64));
        for k in 0..KEPT as u32 {
            r.trimmed(6, k, k + 1, 12);
        }
        r.trimmed(5, 0, 1, 13);
        assert!(
            !r.came_back(5, 0, 1, 14, 64),
            "its first trip was forgotten"
        );
    }

    /// The ring against a naive model: every trim ever noted, in order,
    /// the ring holding the last `KEPT` new chunks (a trim of a chunk it
    /// holds refreshes it in place; a forgotten map's entries stay gone).
    #[test]
    fn the_ring_matches_a_list_of_every_trim() {
        #[derive(Clone, Copy)]
        struct Noted {
            key: (u32, u32, u32),
            at: u64,
            trips: u32,
            gone: bool,
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..50 {
            let mut ring = RoundTrips::default();
            let mut noted: Vec<Noted> = Vec::new();
            let mut now = 1u64;
            for _ in 0..400 {
                now += 1 + next(20);
                let map = next(3) as u32;
                let lo = next(6) as u32;
                let hi = lo + 1 + next(3) as u32;
                match next(10) {
                    0..=3 => {
                        ring.trimmed(map, lo, hi, now);
                        // In the ring: among the last KEPT new chunks.
                        let held = noted.len().saturating_sub(KEPT);
                        match noted[held..]
                            .iter_mut()
                            .find(|n| !n.gone && n.key == (map, lo, hi))
                        {
                            Some(n) => n.at = now,
                            None => noted.push(Noted {
                                key: (map, lo, hi),
                                at: now,
                                trips: 0,
                                gone: false,
                            }),
                        }
                    }
                    4 => {
                        ring.forget_map(map);
                        for n in &mut noted {
                            if n.key.0 == map {
                                n.gone = true;
                            }
                        }
                    }
                    _ => {
                        let (wlo, whi) = (lo.saturating_sub(1), hi + next(2) as u32);
                        let window = 10 + next(80);
                        let got = ring.came_back(map, wlo, whi, now, window);
                        let held = noted.len().saturating_sub(KEPT);
                        let mut want = false;
                        for n in &mut noted[held..] {
                            let (m, l, h) = n.key;
                            if !n.gone
                                && n.at != 0
                                && m == map
                                && wlo <= l
                                && h <= whi
                                && now - n.at <= window
                            {
                                n.at = 0;
                                n.trips += 1;
                                want |= n.trips >= TRIPS;
                            }
                        }
                        assert_eq!(got, want);
                    }
                }
            }
        }
    }
}
