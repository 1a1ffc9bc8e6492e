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

pub(crate) const NIL: u32 = u32::MAX;

const SL_BITS: u32 = 5;
pub(crate) const SL: usize = 1 << SL_BITS;
pub(crate) const FL: usize = 64;

/// The list heads of the classes, by first level: grown up to the highest
/// first level ever listed, so a pool of small pages keeps a table of a few
/// hundred bytes (the full table is 8 KiB), and a pool never used keeps
/// none.
#[derive(Clone, Debug, Default)]
pub(crate) struct Heads(Vec<[u32; SL]>);

impl Heads {
    /// The head of class `(fl, sl)` (`NIL` when empty or never listed).
    #[inline]
    pub(crate) fn get(&self, fl: usize, sl: usize) -> u32 {
        self.0.get(fl).map_or(NIL, |row| row[sl])
    }

    /// The head of class `(fl, sl)` within the rows reached.
    ///
    /// # Panics
    /// On a first level not [`reach`](Self::reach)ed (a broken invariant).
    #[inline]
    pub(crate) fn at(&self, fl: usize, sl: usize) -> u32 {
        self.0[fl][sl]
    }

    /// Grows the table to reach first level `fl` (at most `FL` rows).
    pub(crate) fn reach(&mut self, fl: usize) {
        if fl >= self.0.len() {
            self.0.resize(fl + 1, [NIL; SL]);
        }
    }

    /// The head of class `(fl, sl)`, for writing, within the rows reached.
    ///
    /// # Panics
    /// On a first level not [`reach`](Self::reach)ed (a broken invariant).
    #[inline]
    pub(crate) fn slot(&mut self, fl: usize, sl: usize) -> &mut u32 {
        &mut self.0[fl][sl]
    }
}

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
    fl_map: u64,
    sl_map: [u32; FL],
    heads: Heads,
}

/// The class (first level, second level) of a size in alignment units.
#[inline]
pub(crate) fn mapping(units: u64) -> (usize, usize) {
    if units < SL as u64 {
        (0, units as usize)
    } else {
        let f = 63 - units.leading_zeros();
        (
            (f - SL_BITS + 1) as usize,
            ((units >> (f - SL_BITS)) as usize) - SL,
        )
    }
}

/// The smallest class whose every block holds `units`.
#[inline]
fn mapping_up(units: u64) -> (usize, usize) {
    if units < SL as u64 {
        (0, units as usize)
    } else {
        let f = 63 - units.leading_zeros();
        mapping(units + (1u64 << (f - SL_BITS)) - 1)
    }
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
            fl_map: 0,
            sl_map: [0; FL],
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
        let head = self.heads.at(fl, sl);
        {
            let b = &mut self.blocks[i as usize];
            b.free = true;
            b.free_prev = NIL;
            b.free_next = head;
        }
        if head != NIL {
            self.blocks[head as usize].free_prev = i;
        }
        *self.heads.slot(fl, sl) = i;
        self.sl_map[fl] |= 1 << sl;
        self.fl_map |= 1 << fl;
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
            *self.heads.slot(fl, sl) = free_next;
            if free_next == NIL {
                self.sl_map[fl] &= !(1 << sl);
                if self.sl_map[fl] == 0 {
                    self.fl_map &= !(1 << fl);
                }
            }
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
        let mut bits = self.sl_map[fl] & (!0u32 << sl);
        let mut fl = fl;
        if bits == 0 {
            let above = if fl + 1 >= FL {
                0
            } else {
                self.fl_map & (!0u64 << (fl + 1))
            };
            if above == 0 {
                return None;
            }
            fl = above.trailing_zeros() as usize;
            bits = self.sl_map[fl];
        }
        let head = self.heads.at(fl, bits.trailing_zeros() as usize);
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
            let rest = self.new_block(Block {
                page: b.page,
                prev_phys: i,
                next_phys: b.next_phys,
                free_prev: NIL,
                free_next: NIL,
                free: false,
                offset: b.offset + size,
                size: b.size - size,
            });
            if b.next_phys != NIL {
                self.blocks[b.next_phys as usize].prev_phys = rest;
            }
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

    /// If free block `old` heads its list and (not yet listed) block `new`
    /// maps to the same class, puts `new` in its place; whether it did.
    /// The lists end up as removing `old` and listing `new` would leave
    /// them, for less work.
    fn take_head(&mut self, old: u32, new: u32) -> bool {
        let (fl, sl) = mapping(self.blocks[old as usize].size >> self.shift);
        if self.heads.get(fl, sl) != old
            || mapping(self.blocks[new as usize].size >> self.shift) != (fl, sl)
        {
            return false;
        }
        *self.heads.slot(fl, sl) = new;
        let after = self.blocks[old as usize].free_next;
        self.blocks[old as usize].free = false;
        if after != NIL {
            self.blocks[after as usize].free_prev = new;
        }
        let n = &mut self.blocks[new as usize];
        n.free = true;
        n.free_prev = NIL;
        n.free_next = after;
        true
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

    /// Returns a carved block, coalescing it with free neighbours.
    pub fn give(&mut self, i: u32) {
        if self.best_fit {
            self.give_in_place(i);
        } else {
            self.give_relisted(i);
        }
    }

    /// `give`: the merged block is listed anew.
    fn give_relisted(&mut self, i: u32) {
        let mut i = i;
        let next = self.blocks[i as usize].next_phys;
        if next != NIL && self.blocks[next as usize].free {
            self.remove_free(next);
            let n = self.blocks[next as usize];
            let b = &mut self.blocks[i as usize];
            b.size += n.size;
            b.next_phys = n.next_phys;
            if n.next_phys != NIL {
                self.blocks[n.next_phys as usize].prev_phys = i;
            }
            self.drop_block(next);
        }
        let prev = self.blocks[i as usize].prev_phys;
        if prev != NIL && self.blocks[prev as usize].free {
            self.remove_free(prev);
            let b = self.blocks[i as usize];
            let p = &mut self.blocks[prev as usize];
            p.size += b.size;
            p.next_phys = b.next_phys;
            if b.next_phys != NIL {
                self.blocks[b.next_phys as usize].prev_phys = prev;
            }
            self.drop_block(i);
            i = prev;
        }
        self.insert_free(i);
    }

    /// `give` for the best-fit engines (reservations, where one large free
    /// block heads its class): a merged block that stays in the class of
    /// the list head it grows from keeps that place, as listing it anew
    /// would leave it.
    fn give_in_place(&mut self, i: u32) {
        let mut i = i;
        let next = self.blocks[i as usize].next_phys;
        // Whether block `i` already holds its final place in the lists.
        let mut listed = false;
        if next != NIL && self.blocks[next as usize].free {
            let n = self.blocks[next as usize];
            let b = &mut self.blocks[i as usize];
            b.size += n.size;
            b.next_phys = n.next_phys;
            if n.next_phys != NIL {
                self.blocks[n.next_phys as usize].prev_phys = i;
            }
            // `take_head` reads the sizes: the merged block's is set, the
            // absorbed one's is still its own.
            listed = self.take_head(next, i);
            if !listed {
                self.remove_free(next);
            }
            self.drop_block(next);
        }
        let prev = self.blocks[i as usize].prev_phys;
        if prev != NIL && self.blocks[prev as usize].free {
            if listed {
                self.remove_free(i);
            }
            let b = self.blocks[i as usize];
            let old = self.blocks[prev as usize].size;
            let grown = old + b.size;
            let class = mapping(old >> self.shift);
            // A head that stays in its class keeps its place, as removing
            // and listing it again would leave it.
            listed =
                self.heads.get(class.0, class.1) == prev && mapping(grown >> self.shift) == class;
            if !listed {
                self.remove_free(prev);
            }
            let p = &mut self.blocks[prev as usize];
            p.size = grown;
            p.next_phys = b.next_phys;
            if b.next_phys != NIL {
                self.blocks[b.next_phys as usize].prev_phys = prev;
            }
            self.drop_block(i);
            i = prev;
        }
        if !listed {
            self.insert_free(i);
        }
    }

    /// The size of a block.
    #[cfg(test)]
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
                    self.sl_map[fl] & (1 << sl) != 0,
                    "bitmap out of step"
                );
            }
            assert_eq!(self.sl_map[fl] != 0, self.fl_map & (1 << fl) != 0);
        }
        out.sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn mapping_classes_grow_and_round_up_fits() {
        let mut last = (0, 0);
        for u in 1..5000u64 {
            let m = mapping(u);
            assert!(m >= last, "classes ordered");
            last = m;
            let up = mapping_up(u);
            assert!(up >= m);
            // Every size in the class `up` (or above) is at least u.
            for v in u.saturating_sub(64)..u {
                assert!(mapping(v) < up || v >= u, "{v} < {u} in class {up:?}");
            }
        }
    }

    #[test]
    fn split_and_coalesce_restore_the_page() {
        let mut e = SlicedEngine::new(256);
        let first = e.add_page(0, 1 << 20);
        let a = e.take(1024).unwrap();
        let b = e.take(4096).unwrap();
        let c = e.take(256).unwrap();
        assert_eq!((a.offset, b.offset, c.offset), (0, 1024, 5120));
        assert_eq!(a.block, first);
        e.give(b.block);
        // The hole is reused by a fitting request.
        let d = e.take(2048).unwrap();
        assert_eq!(d.offset, 1024);
        e.give(a.block);
        e.give(c.block);
        e.give(d.block);
        assert_eq!(e.free_blocks(), vec![(0, 0, 1 << 20)]);
        assert_eq!(e.block_size(first), 1 << 20);
        e.remove_page(first);
        assert!(e.free_blocks().is_empty());
        assert!(e.take(256).is_none());
    }

    proptest! {
        /// Against a naive model (byte ranges in a map): carved blocks never
        /// overlap, lie inside their page, and frees coalesce fully.
        #[test]
        fn model_check(ops in proptest::collection::vec((0u8..3, 1u64..40, any::<u16>()), 1..200)) {
            let page = 64 * 256;
            let mut e = SlicedEngine::new(256);
            let mut pages = 0u32;
            let mut firsts = Vec::new();
            let mut live: BTreeMap<(u32, u64), (u64, u32)> = BTreeMap::new();
            for (op, units, pick) in ops {
                match op {
                    0 | 1 => {
                        let size = (units % 64 + 1) * 256;
                        match e.take(size) {
                            Some(c) => {
                                prop_assert!(c.offset + size <= page);
                                let key = (c.page, c.offset);
                                if let Some((&(p, o), &(s, _))) = live.range(..key).next_back() {
                                    prop_assert!(p != c.page || o + s <= c.offset, "overlap");
                                }
                                if let Some((&(p, o), _)) = live.range(key..).next() {
                                    prop_assert!(p != c.page || c.offset + size <= o, "overlap");
                                }
                                live.insert(key, (size, c.block));
                            }
                            None => {
                                // Only fails when no free block is big enough.
                                prop_assert!(e.free_blocks().iter().all(|b| b.2 < size));
                                firsts.push(e.add_page(pages, page));
                                pages += 1;
                            }
                        }
                    }
                    _ => {
                        if !live.is_empty() {
                            let k = *live.keys().nth(pick as usize % live.len()).unwrap();
                            let (_, block) = live.remove(&k).unwrap();
                            e.give(block);
                        }
                    }
                }
                let free: u64 = e.free_blocks().iter().map(|b| b.2).sum();
                let used: u64 = live.values().map(|v| v.0).sum();
                prop_assert_eq!(free + used, u64::from(pages) * page);
            }
            for (_, (_, block)) in core::mem::take(&mut live) {
                e.give(block);
            }
            let expect: Vec<_> = (0..pages).map(|p| (p, 0, page)).collect();
            prop_assert_eq!(e.free_blocks(), expect);
            for f in firsts {
                e.remove_page(f);
            }
            prop_assert!(e.free_blocks().is_empty());
        }
    }
}
