//! Which reservations a new page is carved from: its lane. Each lane has
//! its own reservations and its own best-fit engine; a page never moves
//! between lanes, and idle chunks of one lane serve only that lane's pages.
//!
//! - The **shared** lane holds the pages of every size that no other lane
//!   takes.
//! - The **large** lane (see [`large`](super::large)) holds large pages
//!   (`MemoryPolicy::large_page_granules`) in reservations of their own, or
//!   with `MemoryPolicy::large_page_space` only growing buffers' steps (see
//!   [`growth`](super::growth)).
//! - The **small** lane, with `MemoryPolicy::small_page_lane`, holds pages
//!   smaller than one granule. Carved among larger pages, a long-lived small
//!   page keeps the chunk under it committed, and the free space around it
//!   with it, long after the pages beside it went (pinned fragments: 1.16x
//!   the peak live on a workload where the best peer needs 1.02x; PyTorch
//!   keeps small blocks in segments of their own). In their own
//!   reservations small pages pin only each other. The price is driver
//!   calls: the small lane commits and gives back its own chunks, and a
//!   lane's idle chunks are given back free of the churn budget when
//!   another lane's commit would pass the trim floor (they could not serve
//!   it).

use super::large::LARGE_LANE;
use super::segment::Segment;

/// How many lanes a segment has.
pub(super) const LANES: usize = 3;

/// The lane pages share.
pub(super) const SHARED_LANE: usize = 0;

/// The lane of pages below one granule, with `MemoryPolicy::small_page_lane`.
pub(super) const SMALL_LANE: usize = 2;

impl Segment {
    /// The lane a new page of `bytes` goes to: below one granule, the small
    /// lane when the policy has one; from the large-page size, the large
    /// lane, or with `large_space` the shared lane unless the page is taken
    /// for a growing buffer's next step (see [`growth`](super::growth));
    /// the shared lane otherwise.
    pub(super) fn lane_for(&self, bytes: u64) -> usize {
        if bytes < self.small {
            return SMALL_LANE;
        }
        let own = bytes >= self.large && (!self.large_space || self.growth.is_next_step(bytes));
        if own { LARGE_LANE } else { SHARED_LANE }
    }

    /// The lane of the reservation chunk map `map` belongs to.
    pub(super) fn lane_of(&self, map: u32) -> usize {
        usize::from(self.reservations[self.chunks.owner_of(map)].lane)
    }
}

/// Whether idle chunks in a reservation of lane `owner` cannot serve a new
/// page of lane `lane`: every lane's reservations are its own, and a large
/// page of the large lane is always carved where its own reservation's
/// chunks are (see [`large`](super::large)), so it can use none that sits
/// idle elsewhere.
pub(super) fn unusable_by(owner: usize, lane: usize) -> bool {
    lane == LARGE_LANE || owner != lane
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_uses_only_its_own_idle_chunks() {
        for owner in 0..LANES {
            for lane in [SHARED_LANE, SMALL_LANE] {
                assert_eq!(unusable_by(owner, lane), owner != lane, "{owner} {lane}");
            }
            assert!(unusable_by(owner, LARGE_LANE));
        }
    }
}
