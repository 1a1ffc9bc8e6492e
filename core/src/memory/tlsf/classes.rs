//! The size classes of the engine: a size in alignment units maps to a
//! first level (its power of two) and a second level (one of `SL` equal
//! parts of it); the list heads of the classes, grown on demand.

use alloc::boxed::Box;

pub(crate) const NIL: u32 = u32::MAX;

const SL_BITS: u32 = 5;
pub(crate) const SL: usize = 1 << SL_BITS;
pub(crate) const FL: usize = 64;

/// One first level's classes: their list heads and the bitmap of those
/// that list a block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Row {
    heads: [u32; SL],
    /// Bit `sl` set: class `sl` of this level lists a block.
    pub(crate) listed: u32,
}

impl Row {
    const EMPTY: Row = Row {
        heads: [NIL; SL],
        listed: 0,
    };

    /// The head of class `sl` (`sl < SL`, as [`mapping`] gives it: the
    /// mask costs no bounds check and changes no index).
    #[inline]
    pub(crate) fn head(&self, sl: usize) -> u32 {
        self.heads[sl % SL]
    }

    /// Puts block `i` at the head of class `sl`: the class lists a block.
    #[inline]
    fn list(&mut self, sl: usize, i: u32) {
        self.heads[sl % SL] = i;
        self.listed |= 1 << (sl % SL);
    }

    /// Makes block `i` the head of class `sl`, which lists a block before
    /// and after (its bit stays).
    #[inline]
    fn replace(&mut self, sl: usize, i: u32) {
        self.heads[sl % SL] = i;
    }

    /// Class `sl` lists no block any more; returns the level's bitmap.
    #[inline]
    fn unlist(&mut self, sl: usize) -> u32 {
        self.heads[sl % SL] = NIL;
        self.listed &= !(1 << (sl % SL));
        self.listed
    }
}

/// The list heads of the classes, by first level, each level with its
/// bitmap, and the bitmap of the first levels that list a block: the rows
/// are grown up to the highest first level ever listed, so a pool of
/// small pages keeps a table of a few hundred bytes (the full table is
/// 8 KiB), and an engine never used keeps none (nor the 256 bytes a bitmap
/// of every first level held inline would take: a manager has up to five
/// engines, most of them idle on a small device). The engine and the size
/// index link their own lists; the heads and both bitmaps change only here.
#[derive(Clone, Debug, Default)]
pub(crate) struct Heads {
    /// Exactly as many rows as reached (a boxed slice: with the bitmap of
    /// levels beside it, no larger than the `Vec` alone was, on a 32-bit
    /// target too).
    rows: Box<[Row]>,
    /// Bit `fl` set: first level `fl` lists a block.
    levels: u64,
}

impl Heads {
    /// The head of class `(fl, sl)` (`NIL` when empty or never listed).
    #[inline]
    pub(crate) fn get(&self, fl: usize, sl: usize) -> u32 {
        self.rows.get(fl).map_or(NIL, |row| row.head(sl))
    }

    /// First level `fl`'s classes (`None` for a level never reached).
    #[inline]
    pub(crate) fn row(&self, fl: usize) -> Option<&Row> {
        self.rows.get(fl)
    }

    /// The bitmap of first level `fl`'s classes that list a block (0 for a
    /// level never reached).
    #[inline]
    pub(crate) fn listed(&self, fl: usize) -> u32 {
        self.rows.get(fl).map_or(0, |row| row.listed)
    }

    /// The bitmap of the first levels that list a block.
    #[inline]
    pub(crate) const fn levels(&self) -> u64 {
        self.levels
    }

    /// Puts `i` at the head of class `(fl, sl)`; returns the head it
    /// goes in front of (`NIL`: the class was empty).
    ///
    /// # Panics
    /// On a first level not [`reach`](Self::reach)ed (a broken invariant).
    #[inline]
    pub(crate) fn push_front(&mut self, fl: usize, sl: usize, i: u32) -> u32 {
        let row = &mut self.rows[fl];
        let head = row.head(sl);
        row.list(sl, i);
        self.levels |= 1 << fl;
        head
    }

    /// The head of class `(fl, sl)` leaves it: `next` (`NIL`: none, the
    /// class is empty) becomes its head.
    ///
    /// # Panics
    /// As [`push_front`](Self::push_front).
    #[inline]
    pub(crate) fn pop_front(&mut self, fl: usize, sl: usize, next: u32) {
        let row = &mut self.rows[fl];
        if next != NIL {
            row.replace(sl, next);
        } else if row.unlist(sl) == 0 {
            self.levels &= !(1 << fl);
        }
    }

    /// Makes `i` the head of class `(fl, sl)` in place of a head that is
    /// not its only block (the class lists a block before and after).
    ///
    /// # Panics
    /// As [`push_front`](Self::push_front).
    #[inline]
    pub(crate) fn replace(&mut self, fl: usize, sl: usize, i: u32) {
        self.rows[fl].replace(sl, i);
    }

    /// Grows the table to reach first level `fl` (at most `FL` rows).
    #[inline]
    pub(crate) fn reach(&mut self, fl: usize) {
        if fl >= self.rows.len() {
            self.grow(fl + 1);
        }
    }

    /// Grows the table to `len` rows (rare: once per new highest level).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, len: usize) {
        let mut rows = core::mem::take(&mut self.rows).into_vec();
        rows.resize(len, Row::EMPTY);
        self.rows = rows.into_boxed_slice();
    }
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
pub(super) fn mapping_up(units: u64) -> (usize, usize) {
    if units < SL as u64 {
        (0, units as usize)
    } else {
        let f = 63 - units.leading_zeros();
        mapping(units + (1u64 << (f - SL_BITS)) - 1)
    }
}
