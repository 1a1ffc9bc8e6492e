//! The table itself: the slots in the core's generational arena, and what
//! belongs to a slot index rather than to one buffer (past
//! [`NEAR_STREAMS`] streams the use rows; the handles' shared allocation).

use alloc::vec::Vec;

use super::{
    BufferId, BufferMut, BufferRef, BufferSlot, Location, MANY_USERS, NEAR_STREAMS, NO_USER,
    PoolHandle, StaleBuffer, TableFull,
};
use crate::arena::{Arena, Key, LineAligned};
use crate::device::handle::Buffer;
use crate::device::release_queue::{HandleShare, ReleaseQueue};
use crate::platform::{DeviceRange, PageId};
use crate::stream::{Cursor, StreamId};

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
    slots: Arena<BufferSlot<H>, LineAligned>,
    streams: usize,
    /// Only past [`NEAR_STREAMS`] streams (empty before):
    /// `uses[index * streams + s]` is the last use by stream `s` of the
    /// buffer at `index` (rows are cleared when their buffer goes).
    uses: Vec<Cursor>,
    /// Per index, the allocation the user handles of its buffers share
    /// (from the device's release queue).
    shares: Vec<&'static HandleShare>,
}

impl<H: PoolHandle> BufferTable<H> {
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
            .insert(BufferSlot::new(size, owner, location))
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
            .filter(|s| s.range().is_some())
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
        let handle = slot.handle()?;
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
    fn clear_row(&mut self, index: u32, users: u16) {
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
