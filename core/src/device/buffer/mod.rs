//! The device's table of buffers: where each lives, who wrote it last, and
//! which streams used it — the facts the multi-stream sync and the taint
//! graph need.
//!
//! Slots live in the core's generational arena: reused, each with a
//! generation, so a stale id is detected instead of aliasing a newer
//! buffer. On a device of at most [`NEAR_STREAMS`] streams a slot holds its
//! per-stream last uses itself (one buffer use reads one place); beyond, a
//! slot index keeps a use row in a table beside the arena. A slot index
//! also keeps its handle allocation for the next buffer: steady state
//! allocates nothing.

use core::fmt;

use crate::platform::DeviceRange;
use crate::stream::{Cursor, StreamId, WriteMark};

/// Identifies a buffer of a device: slot index and generation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId {
    index: u32,
    generation: u32,
}

impl BufferId {
    /// The slot index.
    pub(crate) const fn index(self) -> u32 {
        self.index
    }

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

/// Devices of at most this many streams keep each buffer's per-stream
/// last uses in its slot (the default configuration's four streams).
pub(crate) const NEAR_STREAMS: usize = 4;

/// One buffer. Laid out in the order a launch reads it: who used it, the
/// last write, the last uses, then where the bytes are.
#[derive(Debug)]
#[repr(C)]
pub struct BufferSlot<H> {
    /// Which streams' submissions used it: none, one (its index), or
    /// several ([`NO_USER`], [`MANY_USERS`]); the uses have marks only
    /// for these.
    users: u32,
    /// The stream whose pools own the bytes.
    pub owner: StreamId,
    /// The last write, if any.
    pub last_write: Option<WriteMark>,
    /// Per stream, its last use, on a device of at most [`NEAR_STREAMS`]
    /// streams (0: never; entries past the device's streams stay 0).
    near: [Cursor; NEAR_STREAMS],
    /// Where the bytes are.
    pub location: Location<H>,
    /// Requested size in bytes.
    pub size: u64,
}

/// No submission used the buffer.
const NO_USER: u32 = u32::MAX;
/// Submissions of several streams used the buffer.
const MANY_USERS: u32 = u32::MAX - 1;

impl<H> BufferSlot<H> {
    /// The device range, if placed.
    pub fn range(&self) -> Option<DeviceRange> {
        match self.location {
            Location::Placed { range, .. } => Some(range),
            Location::Unplaced => None,
        }
    }
}

/// A live buffer: its slot, and per stream the cursor of that stream's
/// last submission that used it.
#[derive(Debug)]
pub struct BufferRef<'a, H> {
    slot: &'a BufferSlot<H>,
    uses: &'a [Cursor],
}

impl<'a, H> BufferRef<'a, H> {
    /// Per stream, the cursor of its last submission that used the buffer
    /// (0: never).
    #[inline]
    pub fn last_use(&self) -> &'a [Cursor] {
        self.uses
    }
}

/// A live buffer, to change: its slot, and its use row when it has one
/// beside the arena (`None`: the uses are in the slot).
#[derive(Debug)]
pub struct BufferMut<'a, H> {
    slot: &'a mut BufferSlot<H>,
    row: Option<&'a mut [Cursor]>,
    streams: usize,
}

impl<H> BufferMut<'_, H> {
    /// Per stream, the cursor of its last submission that used the buffer
    /// (0: never).
    #[inline]
    pub fn last_use(&self) -> &[Cursor] {
        match &self.row {
            Some(row) => row,
            None => self.slot.near.get(..self.streams).unwrap_or(&[]),
        }
    }

    /// Whether no stream but `sid` ever used the buffer (then no other
    /// stream's use can need a wait).
    #[inline]
    pub fn used_only_by(&self, sid: StreamId) -> bool {
        self.slot.users == NO_USER || self.slot.users == u32::from(sid.0)
    }

    /// Records that submission `cursor` on `sid` used the buffer, and wrote
    /// it when `writes`.
    #[inline]
    pub fn mark_use(&mut self, sid: StreamId, cursor: Cursor, writes: bool) {
        if writes {
            self.slot.last_write = Some(WriteMark {
                stream: sid,
                cursor,
            });
        }
        if sid.index() < self.streams {
            let u = match &mut self.row {
                Some(row) => row.get_mut(sid.index()),
                None => self.slot.near.get_mut(sid.index()),
            };
            if let Some(u) = u {
                *u = (*u).max(cursor);
                let me = u32::from(sid.0);
                if self.slot.users != me {
                    self.slot.users = if self.slot.users == NO_USER {
                        me
                    } else {
                        MANY_USERS
                    };
                }
            }
        }
    }
}

impl<H> core::ops::Deref for BufferMut<'_, H> {
    type Target = BufferSlot<H>;
    fn deref(&self) -> &BufferSlot<H> {
        self.slot
    }
}

impl<H> core::ops::Deref for BufferRef<'_, H> {
    type Target = BufferSlot<H>;
    fn deref(&self) -> &BufferSlot<H> {
        self.slot
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

mod table;
#[cfg(test)]
mod tests;

pub use table::BufferTable;
