//! Where a large page is carved in the one address space large pages
//! share (`MemoryPolicy::large_page_space`): on a granule boundary in any
//! free block of that space's reservations that holds it, the spot with
//! the most of the page's granules committed, ties to the tightest fit.
//!
//! In reservations of their own (see [`large`](super::large)) large pages
//! of mixed sizes coming and going (a network trained at several
//! resolutions: transients of 768 MiB to 6 GiB, several live at once)
//! keep committing and decommitting inside their reservations: a page
//! finds no spot where its granules are committed and commits itself
//! whole while trimming gives back what another page left (the held-out
//! CNN committed 108 GB for a 16 GB peak, and took 1.5x the driver pool's
//! wall on the GPU). In one space a page lands over whatever committed
//! granules another page left, wherever they are. Growing buffers keep
//! reservations of their own (see [`growth`](super::growth)): in the one
//! space their next step would land behind the live ones and commit
//! itself whole.

use super::rounding::round_up;
use super::segment::Segment;
use super::tlsf::FreeBlock;
use crate::arena::NIL;

/// The lane of the one space large pages share.
pub(super) const SPACE_LANE: usize = 2;

/// Free blocks of one space reservation looked at for a page (the space
/// holds large pages only, of at least `large_page_granules` each: a few
/// dozen at most).
const LOOKED_BLOCKS: usize = 64;

impl Segment {
    /// Where a large page of `bytes` is carved in the space lane: a granule
    /// boundary in a free block of a space reservation, with the most of
    /// the page's granules committed, ties to the block with the least
    /// room left after the page. `None` when no free block holds it.
    pub(super) fn space_home(&self, bytes: u64) -> Option<FreeBlock> {
        let g = self.chunks.granule();
        let mut best: Option<(FreeBlock, (u32, u64))> = None;
        let mut free = [(NIL, 0u64, 0u64); LOOKED_BLOCKS];
        for (key, r) in self.reservations.iter() {
            if usize::from(r.lane) != SPACE_LANE || r.size < bytes {
                continue;
            }
            let n = self.engines[SPACE_LANE].free_in_page(r.first_block, &mut free);
            for &(block, offset, size) in &free[..n] {
                let Some(start) = round_up(offset, g) else {
                    continue;
                };
                let end = offset.saturating_add(size);
                if start.saturating_add(bytes) > end {
                    continue;
                }
                let (a, b) = self.chunks.span(start, bytes);
                let committed = self.chunks.committed_in(r.map, a, b);
                let rank = (committed, u64::MAX - (end - start - bytes));
                if best.is_none_or(|(_, b)| rank > b) {
                    let spot = FreeBlock {
                        block,
                        page: key.index,
                        offset: start,
                    };
                    best = Some((spot, rank));
                }
            }
        }
        best.map(|(spot, _)| spot)
    }
}
