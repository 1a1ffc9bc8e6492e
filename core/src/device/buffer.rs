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

use alloc::vec::Vec;
use core::fmt;

use super::handle::{Buffer, HandleShare, ReleaseQueue};
use crate::arena::{Arena, Key};
use crate::platform::{DeviceRange, PageId};
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

/// The buffers, in the core's generational arena. What belongs to a slot
/// index rather than to one buffer stays with the index across reuse, so
/// steady state allocates nothing and moves little: past
/// [`NEAR_STREAMS`] streams the per-stream use cursors (one flat row per
/// index), and the allocation its user handles share.
#[derive(Debug)]
// In declaration order (`repr(C)`): what a launch reads (the slots and
// the stream count) first.
#[repr(C)]
pub struct BufferTable<H> {
    slots: Arena<BufferSlot<H>>,
    streams: usize,
    /// Only past [`NEAR_STREAMS`] streams (empty before):
    /// `uses[index * streams + s]` is the last use by stream `s` of the
    /// buffer at `index` (rows are cleared when their buffer goes).
    uses: Vec<Cursor>,
    /// Per index, the allocation the user handles of its buffers share
    /// (from the device's release queue).
    shares: Vec<&'static HandleShare>,
}

impl<H: Copy> BufferTable<H> {
    /// An empty table for a device of `streams` streams.
    pub fn new(streams: usize) -> Self {
        Self {
            slots: Arena::new(),
            uses: Vec::new(),
            shares: Vec::new(),
            streams,
        }
    }

    /// Tracks uses by streams `0..streams` (never shrinks). Past
    /// [`NEAR_STREAMS`] the use rows are (re-)laid out now (stream creation
    /// only), so marking a use never allocates.
    pub fn grow(&mut self, streams: usize) {
        let (n, m) = (self.streams, streams);
        if m <= n {
            return;
        }
        self.streams = m;
        if m <= NEAR_STREAMS {
            // The slots' entries past `n` were never marked: still 0.
            return;
        }
        let rows = self.shares.len();
        let mut uses = alloc::vec![0; rows * m];
        if n <= NEAR_STREAMS {
            // The uses move out of the slots (a vacant index's row is 0).
            for (k, slot) in self.slots.iter() {
                let r = k.index as usize;
                if let (Some(dst), Some(src)) = (uses.get_mut(r * m..r * m + n), slot.near.get(..n))
                {
                    dst.copy_from_slice(src);
                }
            }
        } else {
            for (r, row) in self.uses.chunks_exact(n).enumerate().take(rows) {
                uses[r * m..r * m + n].copy_from_slice(row);
            }
        }
        self.uses = uses;
    }

    /// Whether the uses live in a row beside the arena.
    #[inline]
    fn rows(&self) -> bool {
        self.streams > NEAR_STREAMS
    }

    /// Number of live buffers.
    pub fn live(&self) -> usize {
        self.slots.len()
    }

    /// Inserts a buffer and returns its first user handle.
    #[inline(always)]
    pub(crate) fn insert(
        &mut self,
        size: u64,
        owner: StreamId,
        location: Location<H>,
        device: u64,
        releases: &'static ReleaseQueue,
    ) -> Result<Buffer, TableFull> {
        let key = self
            .slots
            .insert(BufferSlot {
                size,
                owner,
                location,
                last_write: None,
                users: NO_USER,
                near: [0; NEAR_STREAMS],
            })
            .map_err(|_| TableFull)?;
        let i = key.index as usize;
        let id = BufferId {
            index: key.index,
            generation: key.generation,
        };
        let share = match self.shares.get(i) {
            Some(&s) => s,
            None => self.add_index(i, releases),
        };
        Ok(Buffer::issue(share, id, size, owner, device))
    }

    /// Makes room for index `i`, new (the arena hands indices out in
    /// order): its handle allocation, and its use row, clean as `remove`
    /// leaves every row.
    #[cold]
    fn add_index(&mut self, i: usize, releases: &'static ReleaseQueue) -> &'static HandleShare {
        // Called when `i` has none yet: `i` is at or past the end.
        while self.shares.len() < i {
            self.shares.push(releases.share());
        }
        let share = releases.share();
        self.shares.push(share);
        if self.rows() {
            self.uses.resize(self.shares.len() * self.streams, 0);
        }
        share
    }

    /// The handle allocations of every index, and whether index `i` holds
    /// a live buffer (for closing the release queue).
    pub(crate) fn shares(&self) -> (&[&'static HandleShare], impl Fn(u32) -> bool + '_) {
        (&self.shares, |i| self.slots.key_at(i).is_some())
    }

    /// [`insert`](Self::insert) of a buffer over `handle`'s bytes, the
    /// range passed field by field: they arrive in registers and go
    /// straight into the slot (copying the reservation's result as one
    /// block stalled on its freshly written parts).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn insert_placed(
        &mut self,
        page: PageId,
        offset: u64,
        len: u64,
        handle: H,
        size: u64,
        owner: StreamId,
        device: u64,
        releases: &'static ReleaseQueue,
    ) -> Result<Buffer, TableFull> {
        let range = DeviceRange { page, offset, len };
        self.insert(
            size,
            owner,
            Location::Placed { handle, range },
            device,
            releases,
        )
    }

    /// The id of the live buffer at slot `index`, if any.
    #[inline]
    pub fn live_id(&self, index: u32) -> Option<BufferId> {
        self.slots.key_at(index).map(|k| BufferId {
            index: k.index,
            generation: k.generation,
        })
    }

    /// The buffer, if `id` is live.
    #[inline]
    pub fn get(&self, id: BufferId) -> Result<BufferRef<'_, H>, StaleBuffer> {
        let slot = self.slots.get(key(id)).ok_or(StaleBuffer(id))?;
        let n = self.streams;
        let uses = if n > NEAR_STREAMS {
            let start = id.index as usize * n;
            self.uses.get(start..start + n)
        } else {
            slot.near.get(..n)
        };
        Ok(BufferRef {
            slot,
            uses: uses.unwrap_or(&[]),
        })
    }

    /// The buffer, to change, if `id` is live.
    #[inline]
    pub fn get_mut(&mut self, id: BufferId) -> Result<BufferMut<'_, H>, StaleBuffer> {
        let slot = self.slots.get_mut(key(id)).ok_or(StaleBuffer(id))?;
        let n = self.streams;
        let row = if n > NEAR_STREAMS {
            let start = id.index as usize * n;
            self.uses.get_mut(start..start + n)
        } else {
            None
        };
        Ok(BufferMut {
            slot,
            row,
            streams: n,
        })
    }

    /// Sets the last uses of `id` (tests).
    #[cfg(test)]
    pub fn set_uses(&mut self, id: BufferId, uses: &[Cursor]) {
        let n = self.streams;
        let i = id.index as usize;
        let rows = self.rows();
        if rows {
            self.uses[i * n..i * n + n].copy_from_slice(uses);
        }
        if let Some(slot) = self.slots.get_mut(key(id)) {
            if !rows {
                slot.near[..n].copy_from_slice(uses);
            }
            slot.users = MANY_USERS;
        }
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

    /// Removes buffer `id` when it has memory and no queued work uses it:
    /// every stream's last use of it is at or before that stream's entry
    /// in `completed` (never used counts as 0). Returns its owner, its
    /// pool handle and its size; `None` (and nothing removed) otherwise.
    #[inline(always)]
    pub fn remove_if_idle(
        &mut self,
        id: BufferId,
        completed: &[Cursor],
    ) -> Option<(StreamId, H, u64)> {
        let slot = self.slots.get(key(id))?;
        let Location::Placed { handle, .. } = slot.location else {
            return None;
        };
        let (owner, size) = (slot.owner, slot.size);
        let n = self.streams;
        let start = id.index as usize * n;
        let uses = if n > NEAR_STREAMS {
            self.uses.get(start..start + n)?
        } else {
            slot.near.get(..n)?
        };
        match slot.users {
            NO_USER => {}
            MANY_USERS => {
                let row = uses;
                if row.len() > completed.len() {
                    return None;
                }
                let mut idle = true;
                for (&used, &done) in row.iter().zip(completed) {
                    idle &= used <= done;
                }
                if !idle {
                    return None;
                }
            }
            one => {
                let s = one as usize;
                if uses.get(s)? > completed.get(s)? {
                    return None;
                }
            }
        }
        // Idle: every use is complete, so the row goes back clean.
        let users = slot.users;
        self.slots.remove(key(id))?;
        self.clear_row(id.index, users);
        Some((owner, handle, size))
    }

    /// Removes a buffer. The id becomes stale; its index (with its use row,
    /// cleared, and its handle allocation) serves a later buffer.
    pub fn remove(&mut self, id: BufferId) -> Result<(), StaleBuffer> {
        let slot = self.slots.remove(key(id)).ok_or(StaleBuffer(id))?;
        self.clear_row(id.index, slot.users);
        Ok(())
    }

    /// Clears the use row of slot `index`, whose buffer had `users` (the
    /// uses a slot holds go with it).
    #[inline]
    fn clear_row(&mut self, index: u32, users: u32) {
        if !self.rows() {
            return;
        }
        let start = index as usize * self.streams;
        match users {
            NO_USER => {}
            MANY_USERS => {
                if let Some(row) = self.uses.get_mut(start..start + self.streams) {
                    row.fill(0);
                }
            }
            one => {
                if let Some(u) = self.uses.get_mut(start + one as usize) {
                    *u = 0;
                }
            }
        }
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
        // A queue no device here uses.
        let q = ReleaseQueue::open(u64::MAX);
        let mut t = BufferTable::new(2);
        let a = t.insert(8, StreamId(0), placed(0), u64::MAX, q).unwrap();
        assert_eq!(t.live(), 1);
        t.set_uses(a.id(), &[0, 7]);
        t.remove(a.id()).unwrap();
        assert_eq!(t.get(a.id()).unwrap_err(), StaleBuffer(a.id()));
        assert_eq!(t.remove(a.id()).unwrap_err(), StaleBuffer(a.id()));
        let b = t.insert(8, StreamId(1), placed(8), u64::MAX, q).unwrap();
        assert_ne!(a.id(), b.id());
        assert_ne!(a.id().as_u64(), b.id().as_u64());
        assert_eq!(t.get(b.id()).unwrap().owner, StreamId(1));
        assert_eq!(
            t.get(b.id()).unwrap().last_use(),
            [0, 0],
            "a reused row starts clean"
        );
        assert_eq!(t.live(), 1);
        drop((a, b));
        let (shares, live) = t.shares();
        q.close(shares, live);
    }

    #[test]
    fn growing_keeps_every_row() {
        // A queue no device here uses.
        let q = ReleaseQueue::open(u64::MAX);
        let mut t = BufferTable::new(0);
        t.grow(2);
        let a = t.insert(8, StreamId(0), placed(0), u64::MAX, q).unwrap();
        let b = t.insert(8, StreamId(1), placed(8), u64::MAX, q).unwrap();
        t.set_uses(a.id(), &[1, 2]);
        t.set_uses(b.id(), &[3, 4]);
        t.grow(3);
        assert_eq!(t.get(a.id()).unwrap().last_use(), [1, 2, 0]);
        assert_eq!(t.get(b.id()).unwrap().last_use(), [3, 4, 0]);
        t.remove(a.id()).unwrap();
        let c = t.insert(8, StreamId(2), placed(16), u64::MAX, q).unwrap();
        assert_eq!(t.get(c.id()).unwrap().last_use(), [0, 0, 0]);
        assert_eq!(t.get(b.id()).unwrap().last_use(), [3, 4, 0]);
        drop((a, b, c));
        let (shares, live) = t.shares();
        q.close(shares, live);
    }

    #[test]
    fn uses_move_from_the_slots_to_rows_past_near_streams() {
        // A queue no device here uses.
        let q = ReleaseQueue::open(u64::MAX);
        let mut t = BufferTable::new(2);
        let a = t.insert(8, StreamId(0), placed(0), u64::MAX, q).unwrap();
        let b = t.insert(8, StreamId(1), placed(8), u64::MAX, q).unwrap();
        let c = t.insert(8, StreamId(1), placed(16), u64::MAX, q).unwrap();
        t.get_mut(a.id()).unwrap().mark_use(StreamId(1), 5, true);
        t.set_uses(b.id(), &[3, 4]);
        t.remove(c.id()).unwrap();
        t.grow(NEAR_STREAMS);
        assert_eq!(t.get(a.id()).unwrap().last_use(), [0, 5, 0, 0]);
        t.get_mut(a.id()).unwrap().mark_use(StreamId(3), 9, false);
        t.grow(NEAR_STREAMS + 2);
        let six = [0, 5, 0, 9, 0, 0];
        assert_eq!(t.get(a.id()).unwrap().last_use(), six);
        assert_eq!(t.get_mut(a.id()).unwrap().last_use(), six);
        assert_eq!(t.get(b.id()).unwrap().last_use(), [3, 4, 0, 0, 0, 0]);
        // Marks go to the rows now; a stream's own use needs no other.
        t.get_mut(b.id()).unwrap().mark_use(StreamId(5), 11, true);
        assert_eq!(t.get(b.id()).unwrap().last_use(), [3, 4, 0, 0, 0, 11]);
        assert!(!t.get_mut(b.id()).unwrap().used_only_by(StreamId(5)));
        // Idle only once every stream's use is complete; the row comes
        // back clean for the index's next buffer.
        assert!(t.remove_if_idle(b.id(), &[3, 4, 0, 0, 0, 10]).is_none());
        assert!(t.remove_if_idle(b.id(), &[3, 4, 0, 0, 0, 11]).is_some());
        let d = t.insert(8, StreamId(0), placed(24), u64::MAX, q).unwrap();
        let e = t.insert(8, StreamId(0), placed(32), u64::MAX, q).unwrap();
        assert_eq!(t.get(d.id()).unwrap().last_use(), [0; 6]);
        assert_eq!(t.get(e.id()).unwrap().last_use(), [0; 6]);
        assert_eq!(t.get(a.id()).unwrap().last_use(), six);
        drop((a, b, c, d, e));
        let (shares, live) = t.shares();
        q.close(shares, live);
    }

    #[test]
    fn a_buffer_used_by_one_stream_is_idle_once_that_use_completes() {
        let q = ReleaseQueue::open(u64::MAX);
        let mut t = BufferTable::new(2);
        let a = t.insert(8, StreamId(0), placed(0), u64::MAX, q).unwrap();
        t.get_mut(a.id()).unwrap().mark_use(StreamId(1), 4, false);
        assert!(t.get_mut(a.id()).unwrap().used_only_by(StreamId(1)));
        assert!(t.remove_if_idle(a.id(), &[9, 3]).is_none());
        assert_eq!(t.remove_if_idle(a.id(), &[0, 4]).map(|r| r.2), Some(8));
        let b = t.insert(8, StreamId(0), placed(0), u64::MAX, q).unwrap();
        assert_eq!(t.get(b.id()).unwrap().last_use(), [0, 0]);
        drop((a, b));
        let (shares, live) = t.shares();
        q.close(shares, live);
    }
}
