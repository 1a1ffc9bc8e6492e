//! The size classes of the engine: a size in alignment units maps to a
//! first level (its power of two) and a second level (one of `SL` equal
//! parts of it); the list heads of the classes, grown on demand.

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
