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
//!
//! The other pages share lane 0, best fit; a page of whole granules (at
//! least `MemoryPolicy::aligned_page_granules`) goes on its block's first
//! granule boundary (see `Segment::aligned`).

use super::rounding::round_up;
use super::segment::Segment;
use super::tlsf::{Carved, FreeBlock};
use crate::arena::NIL;

/// The lane of large pages.
pub(super) const LARGE_LANE: usize = 1;

/// Granules a free block must have beyond an aligned page and the bytes
/// before its boundary for the page to go on the boundary
/// (`MemoryPolicy::aligned_page_granules`).
const ALIGN_SPARE_GRANULES: u64 = 8;

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

    /// The free block a new page of `bytes` in `lane` would be carved
    /// from, and where in it (`offset`): the best fit in the shared lane
    /// (at its start, or on the first granule boundary in it, see
    /// [`aligned`](Self::aligned)), the start of
    /// [`large_home`](Self::large_home) in the large one (`vacated` as
    /// there).
    pub(super) fn placement(&self, lane: usize, bytes: u64, vacated: u32) -> Option<FreeBlock> {
        if lane != LARGE_LANE {
            let f = self.engines[lane].peek(bytes)?;
            return Some(self.aligned(lane, f, bytes));
        }
        let r = self.large_home(bytes, vacated)?;
        Some(FreeBlock {
            block: self.reservations[r].first_block,
            page: r,
            offset: 0,
        })
    }

    /// Where in free block `f` of the shared lane a page of `bytes` goes:
    /// a page of whole granules, at least `aligned_granules` of them,
    /// starts on the block's first granule boundary when the block holds it
    /// there with [`ALIGN_SPARE_GRANULES`] to spare (a page that fills its
    /// block tightly takes the start: the bytes before it could serve
    /// nothing larger than a granule); otherwise at the block's start.
    fn aligned(&self, lane: usize, f: FreeBlock, bytes: u64) -> FreeBlock {
        if self.aligned_granules == 0 {
            return f;
        }
        // A power of two (the chunk table's).
        let g = self.chunks.granule();
        let least = g.saturating_mul(u64::from(self.aligned_granules));
        if bytes & (g - 1) != 0 || bytes < least {
            return f;
        }
        let Some(start) = round_up(f.offset, g) else {
            return f;
        };
        let spare = g.saturating_mul(ALIGN_SPARE_GRANULES);
        let needed = (start - f.offset)
            .saturating_add(bytes)
            .saturating_add(spare);
        if start == f.offset || self.engines[lane].block_size(f.block) < needed {
            return f;
        }
        FreeBlock { offset: start, ..f }
    }

    /// Carves `bytes` in `lane` where [`placement`](Self::placement) puts
    /// a new page.
    pub(super) fn take_in(&mut self, lane: usize, bytes: u64) -> Option<Carved> {
        let f = self.placement(lane, bytes, NIL)?;
        Some(self.engines[lane].carve_at(f.block, f.offset, bytes))
    }
}
