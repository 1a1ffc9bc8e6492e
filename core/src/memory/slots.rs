//! The slice table: one entry per live slice in a generational
//! [`Arena`], addressed by [`SliceHandle`]s.
//!
//! A slice stays in the table while any *hold* keeps it: its owner (until
//! `free`), an open capture window (capture priming), a graph's pin (until
//! `unpin`). It leaves the table, and its handle goes stale, when the last
//! hold drops.

use crate::arena::{Arena, Key};
use crate::platform::DeviceRange;

use super::handle::SliceHandle;

/// The owner has not freed the slice.
pub(super) const OWNER: u8 = 1;
/// An open capture window retains the slice.
pub(super) const WINDOW: u8 = 2;
/// A graph pins the slice.
pub(super) const PIN: u8 = 4;

/// One live slice.
#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    /// Which of [`OWNER`], [`WINDOW`], [`PIN`] keep the slice.
    pub holds: u8,
    /// The pool it came from.
    pub pool: u8,
    /// How many graphs pin it ([`PIN`] is set while any does): at most two,
    /// the capture it was reserved in and the capture it was freed in.
    pub pins: u8,
    /// Sliced and segment pools: the engine's block; other pools: unused.
    pub block: u32,
    /// The page (index in the page table).
    pub page: u32,
    /// Bytes the slice keeps from its page (rounded size, or the page).
    pub held: u64,
    /// Its bytes.
    pub range: DeviceRange,
    /// The stream cursor at which it was last bound.
    pub cursor: u64,
}

/// The table.
pub(super) type SliceTable = Arena<Slot>;

/// The arena key of a handle.
#[inline]
pub(super) const fn key(h: SliceHandle) -> Key {
    Key {
        index: h.index,
        generation: h.generation,
    }
}

/// The handle of an arena key.
#[inline]
pub(super) const fn handle(k: Key) -> SliceHandle {
    SliceHandle {
        index: k.index,
        generation: k.generation,
    }
}
