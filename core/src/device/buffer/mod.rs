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

/// One buffer. Laid out (`repr(C)`) so that what a launch on a device of
/// at most two streams reads and writes (who used it, where the bytes
/// are, the last write, the first two streams' last uses) fills the 56
/// bytes its arena entry's line holds after the generation: its table's
/// entries start on cache lines ([`LineAligned`](crate::arena::LineAligned)),
/// so such a launch touches one line per buffer. The rest (further
/// streams' uses, the pool handle, the size) is on the entry's second
/// line.
#[derive(Debug)]
#[repr(C)]
pub struct BufferSlot<H> {
    /// Which streams' submissions used it: none, one (its index), or
    /// several ([`NO_USER`], [`MANY_USERS`]); the uses have marks only
    /// for these.
    users: u16,
    /// The stream whose pools own the bytes.
    pub owner: StreamId,
    /// The stream of the last write (meaningful when `written` is not 0).
    writer: StreamId,
    /// Whether the buffer has bytes (`range` and `handle` are set). Two
    /// bytes of which two values are used: the largest niche of the slot,
    /// so the arena's `Option` keeps its tag here, on the first line (a
    /// lookup reads it), not in `handle`'s on the second.
    placed: Placement,
    /// The device bytes, when placed.
    range: DeviceRange,
    /// The cursor of the last write (0: never written; submissions'
    /// cursors start at 1).
    written: Cursor,
    /// Per stream, its last use, on a device of at most [`NEAR_STREAMS`]
    /// streams (0: never; entries past the device's streams stay 0).
    near: [Cursor; NEAR_STREAMS],
    /// The pool handle, to free the bytes, when placed (else
    /// [`PoolHandle::NONE`]). Not an `Option`: its tag would be a larger
    /// niche than `placed`'s and take the arena's tag to this line.
    handle: H,
    /// Requested size in bytes.
    pub size: u64,
}

/// Whether a buffer has bytes (see [`BufferSlot`]'s `placed`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u16)]
enum Placement {
    Unplaced = 0,
    Placed = 1,
}

/// No submission used the buffer.
const NO_USER: u16 = u16::MAX;
/// Submissions of several streams used the buffer.
const MANY_USERS: u16 = u16::MAX - 1;

/// A pool handle a buffer slot keeps.
pub(crate) trait PoolHandle: Copy {
    /// What an unplaced slot holds (never handed out: `placed` says).
    const NONE: Self;
}

impl PoolHandle for crate::memory::SliceHandle {
    const NONE: Self = Self {
        index: u32::MAX,
        generation: 0,
    };
}

#[cfg(test)]
impl PoolHandle for u32 {
    const NONE: Self = u32::MAX;
}

impl<H: PoolHandle> BufferSlot<H> {
    /// A buffer of `size` bytes owned by `owner`, where `location` says,
    /// never used.
    fn new(size: u64, owner: StreamId, location: Location<H>) -> Self {
        let (placed, range, handle) = match location {
            Location::Placed { handle, range } => (Placement::Placed, range, handle),
            Location::Unplaced => {
                let none = DeviceRange {
                    page: crate::platform::PageId(0),
                    offset: 0,
                    len: 0,
                };
                (Placement::Unplaced, none, H::NONE)
            }
        };
        Self {
            users: NO_USER,
            owner,
            writer: owner,
            placed,
            range,
            written: 0,
            near: [0; NEAR_STREAMS],
            handle,
            size,
        }
    }

    /// The device range, if placed.
    #[inline]
    pub fn range(&self) -> Option<DeviceRange> {
        (self.placed == Placement::Placed).then_some(self.range)
    }

    /// The pool handle, if placed.
    #[inline]
    pub fn handle(&self) -> Option<H> {
        (self.placed == Placement::Placed).then_some(self.handle)
    }

    /// The last write, if any.
    #[inline]
    pub fn last_write(&self) -> Option<WriteMark> {
        if self.written == 0 {
            return None;
        }
        Some(WriteMark {
            stream: self.writer,
            cursor: self.written,
        })
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
        self.slot.users == NO_USER || self.slot.users == sid.0
    }

    /// Records that submission `cursor` on `sid` used the buffer, and wrote
    /// it when `writes`.
    #[inline]
    pub fn mark_use(&mut self, sid: StreamId, cursor: Cursor, writes: bool) {
        // (Cursor 0 is no submission: every caller passes a submitted one.)
        debug_assert!(cursor != 0, "a use at cursor 0");
        if writes {
            self.slot.writer = sid;
            self.slot.written = cursor;
        }
        if sid.index() < self.streams {
            let u = match &mut self.row {
                Some(row) => row.get_mut(sid.index()),
                None => self.slot.near.get_mut(sid.index()),
            };
            if let Some(u) = u {
                *u = (*u).max(cursor);
                // At most MAX_STREAMS (256): below both markers.
                let me = sid.0;
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
