//! A bounded pool of streams, created lazily, with reserved special streams.
//!
//! Ordinary streams are addressed by a [`StreamId`] below the pool's
//! capacity; special streams (e.g. a staging stream) live after them and are
//! addressed by [`StreamPool::special`]. Each slot holds the platform stream
//! and whatever per-stream state the caller keeps with it (`T`).

use alloc::vec::Vec;
use core::fmt;

/// Identifies one stream of a device: an index into its stream pool.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId(pub u16);

impl StreamId {
    /// The slot index.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stream {}", self.0)
    }
}

/// A stream id outside the pool.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct StreamOutOfRange {
    /// The id asked for.
    pub id: StreamId,
    /// Number of slots (ordinary + special).
    pub capacity: usize,
}

impl fmt::Display for StreamOutOfRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} does not exist: the pool has {} stream slots",
            self.id, self.capacity
        )
    }
}

impl core::error::Error for StreamOutOfRange {}

/// A lazily filled, bounded table of streams. The table itself grows to
/// the highest stream created, so memory follows the streams in use, not
/// the bound.
#[derive(Debug)]
pub struct StreamPool<T> {
    slots: Vec<Option<T>>,
    ordinary: usize,
    capacity: usize,
}

impl<T> StreamPool<T> {
    /// A pool of `ordinary` user streams plus `special` reserved streams.
    /// Allocates nothing: streams and their slots are created lazily.
    /// Every slot has a [`StreamId`]: special streams past id `u16::MAX`
    /// are not made.
    pub fn new(ordinary: u16, special: u16) -> Self {
        let total = (usize::from(ordinary) + usize::from(special)).min(usize::from(u16::MAX) + 1);
        Self {
            slots: Vec::new(),
            ordinary: ordinary as usize,
            capacity: total,
        }
    }

    /// Total number of slots (ordinary + special).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Slots held in memory: up to the highest stream created.
    pub fn slots_in_use(&self) -> usize {
        self.slots.len()
    }

    /// Number of ordinary slots.
    pub fn ordinary(&self) -> usize {
        self.ordinary
    }

    /// The id of the `n`-th special stream, if it exists.
    pub fn special(&self, n: u16) -> Option<StreamId> {
        let idx = self.ordinary + usize::from(n);
        // Every index below the capacity fits a `u16` (see `new`).
        (idx < self.capacity).then_some(StreamId(idx as u16))
    }

    /// Checks that `id` addresses a slot.
    pub fn check(&self, id: StreamId) -> Result<(), StreamOutOfRange> {
        if id.index() < self.capacity {
            Ok(())
        } else {
            Err(StreamOutOfRange {
                id,
                capacity: self.capacity,
            })
        }
    }

    /// The stream at `id` if it was created.
    pub fn get(&self, id: StreamId) -> Option<&T> {
        self.slots.get(id.index())?.as_ref()
    }

    /// The stream at `id` if it was created, mutably.
    pub fn get_mut(&mut self, id: StreamId) -> Option<&mut T> {
        self.slots.get_mut(id.index())?.as_mut()
    }

    /// The stream at `id`, creating it with `create` on first use. A failed
    /// creation leaves the slot empty (a later call tries again).
    pub fn get_or_create<E>(
        &mut self,
        id: StreamId,
        create: impl FnOnce() -> Result<T, E>,
    ) -> Result<&mut T, GetOrCreateError<E>> {
        self.check(id).map_err(GetOrCreateError::OutOfRange)?;
        if self.slots.len() <= id.index() {
            self.slots.resize_with(id.index() + 1, || None);
        }
        let capacity = self.capacity;
        let slot = self
            .slots
            .get_mut(id.index())
            .ok_or(GetOrCreateError::OutOfRange(StreamOutOfRange {
                id,
                capacity,
            }))?;
        if slot.is_none() {
            *slot = Some(create().map_err(GetOrCreateError::Create)?);
        }
        // The slot was just filled if it was empty.
        slot.as_mut()
            .ok_or(GetOrCreateError::OutOfRange(StreamOutOfRange {
                id,
                capacity,
            }))
    }

    /// Every created stream with its id, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (StreamId, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (StreamId(i as u16), s)))
    }

    /// Every created stream with its id, in id order, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (StreamId, &mut T)> {
        self.slots
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| s.as_mut().map(|s| (StreamId(i as u16), s)))
    }
}

/// Why [`StreamPool::get_or_create`] failed.
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GetOrCreateError<E> {
    /// The id is outside the pool.
    OutOfRange(StreamOutOfRange),
    /// Creating the stream failed.
    Create(E),
}

impl<E: core::fmt::Display> core::fmt::Display for GetOrCreateError<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            GetOrCreateError::OutOfRange(e) => write!(f, "{e}"),
            GetOrCreateError::Create(e) => write!(f, "creating the stream failed: {e}"),
        }
    }
}

impl<E: core::fmt::Debug + core::fmt::Display> core::error::Error for GetOrCreateError<E> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_or_create_errors_read_as_text() {
        let mut pool: StreamPool<u32> = StreamPool::new(1, 0);
        let e = pool
            .get_or_create(StreamId(5), || Ok::<u32, &str>(1))
            .unwrap_err();
        assert!(alloc::format!("{e}").contains('5'), "{e}");
        let e = pool
            .get_or_create(StreamId(0), || Err::<u32, &str>("no stream"))
            .unwrap_err();
        assert_eq!(
            alloc::format!("{e}"),
            "creating the stream failed: no stream"
        );
        let _: &dyn core::error::Error = &e;
    }

    #[test]
    fn lazily_creates_and_bounds_ids() {
        let mut pool: StreamPool<u32> = StreamPool::new(2, 1);
        assert_eq!(pool.capacity(), 3);
        assert!(pool.get(StreamId(0)).is_none());
        let mut calls = 0;
        for _ in 0..3 {
            let s = pool
                .get_or_create(StreamId(1), || {
                    calls += 1;
                    Ok::<_, ()>(41)
                })
                .unwrap();
            *s += 0;
        }
        assert_eq!(calls, 1, "created once");
        assert_eq!(pool.special(0), Some(StreamId(2)));
        assert_eq!(pool.special(1), None);
        assert_eq!(
            pool.get_or_create(StreamId(3), || Ok::<_, ()>(0))
                .unwrap_err(),
            GetOrCreateError::OutOfRange(StreamOutOfRange {
                id: StreamId(3),
                capacity: 3
            })
        );
        assert_eq!(
            pool.iter().map(|(id, v)| (id.0, *v)).collect::<Vec<_>>(),
            [(1, 41)]
        );
    }

    /// Special streams past id `u16::MAX` do not exist (their index used to
    /// be cast to `u16`, so `special(1)` of a full pool named stream 0).
    #[test]
    fn special_ids_never_wrap() {
        let pool: StreamPool<u8> = StreamPool::new(u16::MAX, 2);
        assert_eq!(pool.special(0), Some(StreamId(u16::MAX)));
        assert_eq!(pool.special(1), None);
        assert_eq!(pool.capacity(), usize::from(u16::MAX) + 1);
    }

    #[test]
    fn failed_creation_leaves_slot_empty_for_retry() {
        let mut pool: StreamPool<u32> = StreamPool::new(1, 0);
        assert_eq!(
            pool.get_or_create(StreamId(0), || Err("driver said no"))
                .unwrap_err(),
            GetOrCreateError::Create("driver said no")
        );
        assert!(pool.get(StreamId(0)).is_none());
        assert_eq!(
            *pool
                .get_or_create(StreamId(0), || Ok::<_, &str>(7))
                .unwrap(),
            7
        );
    }
}
