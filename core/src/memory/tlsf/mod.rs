//! The sliced-pool engine: pages split into blocks, free blocks indexed by
//! two-level segregated free lists with bitmaps (TLSF), neighbours coalesced
//! on free.
//!
//! - The first level is the power of two of a block's size (in alignment
//!   units), the second splits each power of two into `SL` equal classes.
//! - A request looks at the head of its own class first (a hit is often an
//!   exact fit), then at the first non-empty class whose every block is large
//!   enough (two bit scans): O(1), no scan over pages or blocks.
//! - Blocks live in a slab (`Vec`) with a free list of vacant entries, so a
//!   warm pool reserves and frees without touching the heap.
//!
//! The engine knows nothing of storage: the manager adds and removes whole
//! pages and keeps the page table.

use alloc::vec::Vec;

mod classes;
mod give;
#[cfg(test)]
mod tests;

use classes::mapping_up;
pub(crate) use classes::{FL, Heads, NIL, SL, mapping};

/// How many free blocks of one class a best-fit lookup examines.
const PROBE: usize = 8;

#[derive(Clone, Copy, Debug)]
struct Block {
    /// The manager's page index.
    page: u32,
    prev_phys: u32,
    next_phys: u32,
    /// Free-list links (free blocks) or the vacant-entry chain (`next_free`).
    free_prev: u32,
    free_next: u32,
    free: bool,
    offset: u64,
    size: u64,
}

/// One carved block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Carved {
    pub block: u32,
    pub page: u32,
    pub offset: u64,
}

/// A free block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FreeBlock {
    pub block: u32,
    pub page: u32,
    pub offset: u64,
}

/// The TLSF index and the blocks of one sliced pool.
#[derive(Debug)]
pub(crate) struct SlicedEngine {
    blocks: Vec<Block>,
    vacant: u32,
    shift: u32,
    /// Look for the best of a few blocks instead of the first good one.
    best_fit: bool,
    heads: Heads,
}

impl SlicedEngine {
    /// An empty engine; every size and offset is a multiple of `alignment`
    /// (a power of two).
    pub fn new(alignment: u64) -> Self {
        Self {
            blocks: Vec::new(),
            vacant: NIL,
            shift: alignment.trailing_zeros(),
            best_fit: false,
            heads: Heads::default(),
        }
    }

    fn new_block(&mut self, b: Block) -> u32 {
        if self.vacant != NIL {
            let i = self.vacant;
            self.vacant = self.blocks[i as usize].free_next;
            self.blocks[i as usize] = b;
            i
        } else {
            self.blocks.push(b);
            (self.blocks.len() - 1) as u32
        }
    }

    fn drop_block(&mut self, i: u32) {
        let b = &mut self.blocks[i as usize];
        b.free = false;
        b.size = 0;
        b.free_next = self.vacant;
        self.vacant = i;
    }

    fn insert_free(&mut self, i: u32) {
        let size = self.blocks[i as usize].size;
        let (fl, sl) = mapping(size >> self.shift);
        let head = self.heads.push_front(fl, sl, i);
        {
            let b = &mut self.blocks[i as usize];
            b.free = true;
            b.free_prev = NIL;
            b.free_next = head;
        }
        if head != NIL {
            self.blocks[head as usize].free_prev = i;
        }
    }

    fn remove_free(&mut self, i: u32) {
        let Block {
            size,
            free_prev,
            free_next,
            ..
        } = self.blocks[i as usize];
        if free_prev != NIL {
            self.blocks[free_prev as usize].free_next = free_next;
        } else {
            let (fl, sl) = mapping(size >> self.shift);
            self.heads.pop_front(fl, sl, free_next);
        }
        if free_next != NIL {
            self.blocks[free_next as usize].free_prev = free_prev;
        }
        self.blocks[i as usize].free = false;
    }

    /// The same engine looking, in each class it visits, at up to
    /// [`PROBE`] free blocks for the smallest that fits (the lowest offset
    /// among equals): tighter packing of mixed sizes for a bounded cost.
    pub fn best_fit(mut self) -> Self {
        self.best_fit = true;
        self
    }

    /// The best of up to [`PROBE`] blocks of a free list holding `size`.
    fn probe(&self, mut i: u32, size: u64) -> Option<u32> {
        let mut best: Option<(u64, u64, u32)> = None;
        for _ in 0..PROBE {
            if i == NIL {
                break;
            }
            let b = &self.blocks[i as usize];
            if b.size >= size {
                let key = (b.size, b.offset, i);
                if best.is_none_or(|k| (key.0, key.1) < (k.0, k.1)) {
                    best = Some(key);
                }
                if b.size == size {
                    // An exact fit cannot be beaten by more than an offset.
                }
            }
            i = b.free_next;
        }
        best.map(|k| k.2)
    }

    #[inline(always)]
    fn find(&self, size: u64) -> Option<u32> {
        let units = size >> self.shift;
        let (fl, sl) = mapping(units);
        let head = self.heads.get(fl, sl);
        if self.best_fit {
            if let Some(i) = self.probe(head, size) {
                return Some(i);
            }
        } else if head != NIL && self.blocks[head as usize].size >= size {
            return Some(head);
        }
        let (fl, sl) = mapping_up(units);
        if fl >= FL {
            return None;
        }
        let mut row = self.heads.row(fl);
        let mut bits = row.map_or(0, |r| r.listed) & (!0u32 << sl);
        if bits == 0 {
            let above = if fl + 1 >= FL {
                0
            } else {
                self.heads.levels() & (!0u64 << (fl + 1))
            };
            if above == 0 {
                return None;
            }
            row = self.heads.row(above.trailing_zeros() as usize);
            bits = row.map_or(0, |r| r.listed);
        }
        // A level `levels` names was reached: `row` is `Some`.
        let head = row?.head(bits.trailing_zeros() as usize);
        if self.best_fit {
            return self.probe(head, size).or(Some(head));
        }
        Some(head)
    }

    /// Adds a page of `size` bytes as one free block; returns that block
    /// (which keeps covering offset 0 of the page for the page's life).
    pub fn add_page(&mut self, page: u32, size: u64) -> u32 {
        // No block is ever larger than a page: every class a block can map
        // to is reached now, and listing never grows the table.
        self.heads.reach(mapping(size >> self.shift).0);
        let i = self.new_block(Block {
            page,
            prev_phys: NIL,
            next_phys: NIL,
            free_prev: NIL,
            free_next: NIL,
            free: false,
            offset: 0,
            size,
        });
        self.insert_free(i);
        i
    }

    /// Removes an idle page given its first block (which must be free and
    /// cover the whole page).
    pub fn remove_page(&mut self, first: u32) {
        debug_assert!(self.blocks[first as usize].free);
        debug_assert_eq!(self.blocks[first as usize].next_phys, NIL);
        self.remove_free(first);
        self.drop_block(first);
    }

    /// Carves `size` bytes (a multiple of the alignment) from a free block.
    pub fn take(&mut self, size: u64) -> Option<Carved> {
        let i = self.find(size)?;
        Some(self.carve(i, size))
    }

    /// The free block a [`take`](Self::take) of `size` bytes would carve
    /// from, without carving.
    pub fn peek(&self, size: u64) -> Option<FreeBlock> {
        let i = self.find(size)?;
        let b = &self.blocks[i as usize];
        Some(FreeBlock {
            block: i,
            page: b.page,
            offset: b.offset,
        })
    }

    /// Carves `size` bytes from the start of free block `i` (what `take`
    /// does with the block `find` chose).
    #[inline]
    pub fn carve(&mut self, i: u32, size: u64) -> Carved {
        debug_assert!(self.blocks[i as usize].free && self.blocks[i as usize].size >= size);
        let b = self.blocks[i as usize];
        if b.size > size {
            let rest = self.split_off(i, b.offset + size);
            // The rest takes the block's place at the head of its list when
            // it stays in the same class (as removing the block and listing
            // the rest would leave it), else it is listed anew.
            if !(self.best_fit && self.take_head(i, rest)) {
                self.remove_free(i);
                self.insert_free(rest);
            }
            let head = &mut self.blocks[i as usize];
            head.next_phys = rest;
            head.size = size;
        } else {
            self.remove_free(i);
        }
        Carved {
            block: i,
            page: b.page,
            offset: b.offset,
        }
    }

    /// A new, unlisted block for the bytes of block `i` from `at` on (inside
    /// it), linked after it physically; block `i`'s own size and next
    /// link are the caller's to set (its lists read its size first).
    fn split_off(&mut self, i: u32, at: u64) -> u32 {
        let b = self.blocks[i as usize];
        let rest = self.new_block(Block {
            page: b.page,
            prev_phys: i,
            next_phys: b.next_phys,
            free_prev: NIL,
            free_next: NIL,
            free: false,
            offset: at,
            size: b.offset + b.size - at,
        });
        if b.next_phys != NIL {
            self.blocks[b.next_phys as usize].prev_phys = rest;
        }
        rest
    }

    /// Carves `size` bytes at `offset` inside free block `i` (`offset` a
    /// multiple of the alignment, the bytes inside the block): the bytes
    /// before `offset` stay free as block `i` (which keeps its offset, so a
    /// page's first block still covers offset 0), the page is a new block,
    /// and the bytes after it stay free.
    pub fn carve_at(&mut self, i: u32, offset: u64, size: u64) -> Carved {
        let b = self.blocks[i as usize];
        debug_assert!(b.free && offset >= b.offset && offset + size <= b.offset + b.size);
        if offset == b.offset {
            return self.carve(i, size);
        }
        let lead = offset - b.offset;
        let rest = self.split_off(i, offset);
        // Unlisted under its old size, listed again under the lead's.
        self.remove_free(i);
        let head = &mut self.blocks[i as usize];
        head.next_phys = rest;
        head.size = lead;
        self.insert_free(i);
        self.insert_free(rest);
        self.carve(rest, size)
    }

    /// The end offset of the free block right after carved block `i`, if
    /// the block after it is free (how far a commit may reach ahead).
    pub fn free_end_after(&self, i: u32) -> Option<u64> {
        let next = self.blocks[i as usize].next_phys;
        if next == NIL {
            return None;
        }
        let n = &self.blocks[next as usize];
        n.free.then_some(n.offset + n.size)
    }

    /// The free blocks of the page whose first block is `first`, in
    /// address order, as (block, offset, size), into `out`; returns how
    /// many (at most `out.len()`: the first ones).
    pub fn free_in_page(&self, first: u32, out: &mut [(u32, u64, u64)]) -> usize {
        let mut n = 0;
        let mut i = first;
        while i != NIL && n < out.len() {
            let b = &self.blocks[i as usize];
            if b.free {
                out[n] = (i, b.offset, b.size);
                n += 1;
            }
            i = b.next_phys;
        }
        n
    }

    /// The size of a block.
    pub fn block_size(&self, i: u32) -> u64 {
        self.blocks[i as usize].size
    }

    /// Every free block as (page, offset, size), for checks.
    #[cfg(test)]
    pub fn free_blocks(&self) -> Vec<(u32, u64, u64)> {
        let mut out = Vec::new();
        for fl in 0..FL {
            for sl in 0..SL {
                let mut i = self.heads.get(fl, sl);
                while i != NIL {
                    let b = self.blocks[i as usize];
                    assert!(b.free);
                    assert_eq!(mapping(b.size >> self.shift), (fl, sl));
                    out.push((b.page, b.offset, b.size));
                    i = b.free_next;
                }
                assert_eq!(
                    self.heads.get(fl, sl) != NIL,
                    self.heads.listed(fl) & (1 << sl) != 0,
                    "bitmap out of step"
                );
            }
            assert_eq!(
                self.heads.listed(fl) != 0,
                self.heads.levels() & (1 << fl) != 0
            );
        }
        out.sort_unstable();
        out
    }
}
