//! Where a large page is carved: at the start of an empty large-page
//! reservation, the one whose committed granules cover most of the page.
//!
//! Large pages (at least `large_page_granules`) come and go whole: a
//! growing buffer allocates its next, larger page, then frees the old one.
//! Carved best fit, the next page lands in whichever reservation's free
//! tail fits it tightest, often behind a live page and over granules never
//! committed, so each step commits the whole page again while trimming
//! decommits the old reservation (two caches growing side by side:
//! 286 GiB committed for a live peak of 8.4 GiB). Carved at the start of
//! the empty reservation that has most of the page committed already, a
//! step commits only its growth.
//!
//! Ties go to the smallest reservation (the larger ones stay for larger
//! pages). A reservation is never shared by two live large pages, so a
//! page's committed granules are its own and go back with it.

use super::segment::Segment;
use super::tlsf::Carved;

/// The lane of large pages.
pub(super) const LARGE_LANE: usize = 1;

impl Segment {
    /// The reservation a large page of `bytes` is carved from: one holding
    /// no page (`vacated`, whose one page has just given its space back,
    /// counts as holding none) and at least `bytes` long, with the most of
    /// the page's granules committed; ties to the smallest. `None` when no
    /// reservation is empty and long enough.
    pub(super) fn large_home(&self, bytes: u64, vacated: u32) -> Option<u32> {
        let (lo, hi) = self.chunks.span(0, bytes);
        let mut best: Option<(u32, u32, u64)> = None;
        for (key, r) in self.reservations.iter() {
            let pages = r.pages - u32::from(key.index == vacated && r.pages > 0);
            if usize::from(r.lane) != LARGE_LANE || pages != 0 || r.size < bytes {
                continue;
            }
            let committed = self.chunks.committed_in(r.map, lo, hi);
            let better = match best {
                None => true,
                Some((_, c, size)) => committed > c || (committed == c && r.size < size),
            };
            if better {
                best = Some((key.index, committed, r.size));
            }
        }
        best.map(|(i, _, _)| i)
    }

    /// Carves `bytes` in `lane`: best fit in the shared lane, at the start
    /// of [`large_home`](Self::large_home) in the large one.
    pub(super) fn take_in(&mut self, lane: usize, bytes: u64) -> Option<Carved> {
        if lane != LARGE_LANE {
            return self.engines[lane].take(bytes);
        }
        let r = self.large_home(bytes, crate::arena::NIL)?;
        let first = self.reservations[r].first_block;
        Some(self.engines[lane].carve(first, bytes))
    }
}
