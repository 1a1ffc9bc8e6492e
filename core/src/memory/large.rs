//! Where a large page is carved: at the start of an empty large-page
//! reservation, or behind a live page where every granule it spans is
//! committed already; the spot whose committed granules cover most of the
//! page.
//!
//! Large pages (at least `large_page_granules`) come and go whole: a
//! growing buffer allocates its next, larger page, then frees the old one.
//! (With `MemoryPolicy::large_page_space`, the default, only such a
//! buffer's steps come here, see [`growth`](super::growth); other large
//! pages are carved in the shared lane like the rest.)
//! Carved best fit, the next page lands in whichever reservation's free
//! tail fits it tightest, often behind a live page and over granules never
//! committed, so each step commits the whole page again while trimming
//! decommits the old reservation (two caches growing side by side:
//! 286 GiB committed for a live peak of 8.4 GiB). Carved at the start of
//! the empty reservation that has most of the page committed already, a
//! step commits only its growth.
//!
//! Ties go to the reservation just vacated (the page freed last is taken
//! back where it was, see `MemoryManager::take_recent`), then to an empty
//! reservation's start, then to the smallest reservation (the larger ones
//! stay for larger pages).
//!
//! Behind a live page (`MemoryPolicy::share_large_reservations`): a
//! reservation sized for one page of twice the size, or left by a larger
//! page, holds committed granules behind a smaller page that took its
//! start. Pages of mixed large sizes coming and going (a network trained
//! at several resolutions: 768 MiB to 6 GiB transients) then found no
//! empty reservation long enough, reserved a new one and committed the
//! page whole, while trimming gave the idle granules behind the smaller
//! page back. A page that fits on committed granules behind a live page
//! takes them instead, on a granule boundary, so no granule is shared by
//! two pages (a chunk committed across the boundary is: the page that
//! lives on keeps it committed); never over a granule not committed, so a
//! page's own reservation still grows only at its start.
//!
//! The other pages share lane 0, best fit; a page of whole granules (at
//! least `MemoryPolicy::aligned_page_granules`) goes on its block's first
//! granule boundary (see `Segment::aligned`).

use core::cmp::Reverse;

use super::rounding::round_up;
use super::segment::Segment;
use super::tlsf::{Carved, FreeBlock};
use crate::arena::NIL;

/// Free blocks of one large reservation looked at for a page behind a
/// live one (a large reservation holds a few pages at most).
const LOOKED_BLOCKS: usize = 8;

/// How good a spot for a large page is, the greater the better: its
/// committed granules, in the reservation just vacated (where the page
/// freed last was: it is taken back as it is), at an empty reservation's
/// start, in a smaller reservation.
type Rank = (u32, bool, bool, Reverse<u64>);

/// The lane of large pages.
pub(super) const LARGE_LANE: usize = 1;

/// Granules a free block must have beyond an aligned page and the bytes
/// before its boundary for the page to go on the boundary
/// (`MemoryPolicy::aligned_page_granules`).
const ALIGN_SPARE_GRANULES: u64 = 8;

impl Segment {
    /// Where a large page of `bytes` is carved: the start of a large-page
    /// reservation holding no page (`vacated`, whose page has just given
    /// its space back, counts one page fewer) and at least `bytes` long,
    /// or, when `share_large` is set, a granule boundary in a free block
    /// behind a live page where all the page's granules are committed; the
    /// spot with the most of the page's granules committed, ties as
    /// [`Rank`] orders them. `None` when there is no such spot.
    pub(super) fn large_home(&self, bytes: u64, vacated: u32) -> Option<FreeBlock> {
        let g = self.chunks.granule();
        let (lo, hi) = self.chunks.span(0, bytes);
        let whole = hi - lo;
        let mut best: Option<(FreeBlock, Rank)> = None;
        let mut offer = |spot: FreeBlock, committed: u32, empty: bool, size: u64| {
            let r: Rank = (committed, spot.page == vacated, empty, Reverse(size));
            if best.is_none_or(|(_, b)| r > b) {
                best = Some((spot, r));
            }
        };
        let mut free = [(NIL, 0u64, 0u64); LOOKED_BLOCKS];
        for (key, r) in self.reservations.iter() {
            if usize::from(r.lane) != LARGE_LANE || r.size < bytes {
                continue;
            }
            let pages = r.pages - u32::from(key.index == vacated && r.pages > 0);
            if pages == 0 {
                let spot = FreeBlock {
                    block: r.first_block,
                    page: key.index,
                    offset: 0,
                };
                offer(spot, self.chunks.committed_in(r.map, lo, hi), true, r.size);
                continue;
            }
            if !self.share_large {
                continue;
            }
            let n = self.engines[LARGE_LANE].free_in_page(r.first_block, &mut free);
            for &(block, offset, size) in &free[..n] {
                let Some(start) = round_up(offset, g) else {
                    continue;
                };
                if start.saturating_add(bytes) > offset.saturating_add(size) {
                    continue;
                }
                let (a, b) = self.chunks.span(start, bytes);
                if !self.chunks.covers(r.map, a, b) {
                    continue;
                }
                let spot = FreeBlock {
                    block,
                    page: key.index,
                    offset: start,
                };
                offer(spot, whole, false, r.size);
            }
        }
        best.map(|(spot, ..)| spot)
    }

    /// The free block a new page of `bytes` in `lane` would be carved
    /// from, and where in it (`offset`): the best fit in the shared lane
    /// (at its start, or on the first granule boundary in it, see
    /// [`aligned`](Self::aligned)), [`large_home`](Self::large_home) in the
    /// large one (`vacated` as there).
    pub(super) fn placement(&self, lane: usize, bytes: u64, vacated: u32) -> Option<FreeBlock> {
        if lane != LARGE_LANE {
            let f = self.engines[lane].peek(bytes)?;
            return Some(self.aligned(lane, f, bytes));
        }
        self.large_home(bytes, vacated)
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
