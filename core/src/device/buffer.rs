//! The device's table of buffers: where each lives, who wrote it last, and
//! which streams used it — the facts the multi-stream sync and the taint
//! graph need.
//!
//! Slots live in the core's generational arena: reused, each with a
//! generation, so a stale id is detected instead of aliasing a newer
//! buffer. A removed buffer's per-stream use vector is kept for the next
//! one: steady state allocates nothing.

use alloc::vec::Vec;
use core::fmt;

use alloc::sync::Arc;

use super::handle::BufferInner;
use crate::arena::{Arena, Key};
use crate::platform::DeviceRange;
use crate::stream::{Cursor, StreamId, WriteMark};

/// Identifies a buffer of a device: slot index and generation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId {
    index: u32,
    generation: u32,
}

impl BufferId {
    /// The id as one number (unique among every buffer the device ever had,
    /// until a slot's generation wraps after 2^32 reuses).
    pub const fn as_u64(self) -> u64 {
        ((self.generation as u64) << 32) | self.index as u64
    }
}

impl fmt::Display for BufferId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "buffer {}.{}", self.index, self.generation)
    }
}

/// Where a buffer's bytes are.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Location<H> {
    /// A slice of the owner stream's pools.
    Placed {
        /// The pool handle, to free it.
        handle: H,
        /// The device bytes.
        range: DeviceRange,
    },
    /// The reservation failed; the buffer has no bytes and is claimed by the
    /// failure that recorded why.
    Unplaced,
}

/// One buffer.
#[derive(Debug)]
pub struct BufferSlot<H> {
    /// Requested size in bytes.
    pub size: u64,
    /// The stream whose pools own the bytes.
    pub owner: StreamId,
    /// Where the bytes are.
    pub location: Location<H>,
    /// The last write, if any.
    pub last_write: Option<WriteMark>,
    /// Per stream, the cursor of its last submission that used the buffer
    /// (0: never).
    pub last_use: Vec<Cursor>,
    /// The device's own reference to the user handles' allocation (reused
    /// once the buffer is freed).
    pub(crate) kept: Option<Arc<BufferInner>>,
}

impl<H> BufferSlot<H> {
    /// The device range, if placed.
    pub fn range(&self) -> Option<DeviceRange> {
        match self.location {
            Location::Placed { range, .. } => Some(range),
            Location::Unplaced => None,
        }
    }
}

/// A stale or unknown buffer id.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct StaleBuffer(pub BufferId);

impl fmt::Display for StaleBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} was freed or never existed on this device", self.0)
    }
}

impl core::error::Error for StaleBuffer {}

/// Every index of the table is taken (2^32 − 1 live buffers).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TableFull;

/// The buffers, in the core's generational arena. Use vectors of removed
/// buffers are kept for the next insert: steady state allocates nothing.
#[derive(Debug)]
pub struct BufferTable<H> {
    slots: Arena<BufferSlot<H>>,
    spare_uses: Vec<Vec<Cursor>>,
    streams: usize,
}

impl<H: Copy> BufferTable<H> {
    /// An empty table for a device of `streams` streams.
    pub fn new(streams: usize) -> Self {
        Self {
            slots: Arena::new(),
            spare_uses: Vec::new(),
            streams,
        }
    }

    /// Tracks uses by streams `0..streams` (never shrinks): every live and
    /// spare use vector grows now, so marking a use never allocates.
    pub fn grow(&mut self, streams: usize) {
        if streams <= self.streams {
            return;
        }
        self.streams = streams;
        // Stream creation only, never per operation: collecting the keys
        // may allocate.
        let keys: Vec<Key> = self.slots.iter().map(|(k, _)| k).collect();
        for k in keys {
            if let Some(slot) = self.slots.get_mut(k) {
                slot.last_use.resize(streams, 0);
            }
        }
        for spare in &mut self.spare_uses {
            spare.reserve(streams.saturating_sub(spare.len()));
        }
    }

    /// Number of live buffers.
    pub fn live(&self) -> usize {
        self.slots.len()
    }

    /// Inserts a buffer and returns its id.
    pub fn insert(
        &mut self,
        size: u64,
        owner: StreamId,
        location: Location<H>,
    ) -> Result<BufferId, TableFull> {
        let mut uses = self.spare_uses.pop().unwrap_or_default();
        uses.clear();
        uses.resize(self.streams, 0);
        let key = self
            .slots
            .insert(BufferSlot {
                size,
                owner,
                location,
                last_write: None,
                last_use: uses,
                kept: None,
            })
            .map_err(|_| TableFull)?;
        Ok(BufferId {
            index: key.index,
            generation: key.generation,
        })
    }

    /// The buffer, if `id` is live.
    #[inline]
    pub fn get(&self, id: BufferId) -> Result<&BufferSlot<H>, StaleBuffer> {
        self.slots.get(key(id)).ok_or(StaleBuffer(id))
    }

    /// The buffer, mutably, if `id` is live.
    #[inline]
    pub fn get_mut(&mut self, id: BufferId) -> Result<&mut BufferSlot<H>, StaleBuffer> {
        self.slots.get_mut(key(id)).ok_or(StaleBuffer(id))
    }

    /// Bytes of the live buffers that have memory (O(slots): for rare
    /// checks such as `install_pools`).
    pub fn placed_bytes(&self) -> u64 {
        self.slots
            .iter()
            .map(|(_, s)| s)
            .filter(|s| matches!(s.location, Location::Placed { .. }))
            .map(|s| s.size)
            .sum()
    }

    /// Removes a buffer, returning what it was. The id becomes stale.
    pub fn remove(&mut self, id: BufferId) -> Result<BufferSlot<H>, StaleBuffer> {
        let mut slot = self.slots.remove(key(id)).ok_or(StaleBuffer(id))?;
        // Hand back the facts the caller needs without the use vector, which
        // is kept for reuse.
        self.spare_uses.push(core::mem::take(&mut slot.last_use));
        Ok(slot)
    }
}

fn key(id: BufferId) -> Key {
    Key {
        index: id.index,
        generation: id.generation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::PageId;

    fn placed(o: u64) -> Location<u32> {
        Location::Placed {
            handle: o as u32,
            range: DeviceRange {
                page: PageId(1),
                offset: o,
                len: 8,
            },
        }
    }

    #[test]
    fn stale_ids_are_rejected_after_reuse() {
        let mut t = BufferTable::new(2);
        let a = t.insert(8, StreamId(0), placed(0)).unwrap();
        assert_eq!(t.live(), 1);
        t.remove(a).unwrap();
        assert_eq!(t.get(a).unwrap_err(), StaleBuffer(a));
        assert_eq!(t.remove(a).unwrap_err(), StaleBuffer(a));
        let b = t.insert(8, StreamId(1), placed(8)).unwrap();
        assert_ne!(a, b);
        assert_ne!(a.as_u64(), b.as_u64());
        assert_eq!(t.get(b).unwrap().owner, StreamId(1));
        assert_eq!(t.get(b).unwrap().last_use, [0, 0]);
        assert_eq!(t.live(), 1);
    }
}
