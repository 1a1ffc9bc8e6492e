//! A generational arena: values in a `Vec`, addressed by a `u32` index and
//! a generation, vacant entries chained for reuse.
//!
//! The one slot map of the core (memory slices and pages, info-cache
//! entries, device buffers): inserting into a warm arena reuses a vacant
//! entry and allocates nothing; every operation is O(1). Removing a value
//! bumps its entry's generation, so a [`Key`] kept past the removal is
//! *stale*: every lookup by it fails until the generation wraps (after 2^32
//! reuses of one entry).
//!
//! Values that own heap buffers worth reusing hand them to a spare list of
//! their own on removal; the arena only moves values.

use alloc::vec::Vec;

/// "No entry": the end of the vacant chain, and an index no entry has.
pub(crate) const NIL: u32 = u32::MAX;

/// The address of a value: its entry's index and the generation the entry
/// had when the value was inserted.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Key {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

/// How an arena's entries are aligned: `()` packs them as their values
/// need; [`LineAligned`] starts each on a 64-byte cache line.
pub(crate) trait EntryAlign: Copy + core::fmt::Debug {}

impl EntryAlign for () {}

/// Entries start on 64-byte cache lines: an entry's generation and the
/// first 56 bytes of its value share one line, so a lookup that reads only
/// those (see `BufferSlot`) touches one line, wherever the entry sits.
#[derive(Copy, Clone, Debug)]
#[repr(align(64))]
pub(crate) struct LineAligned;

impl EntryAlign for LineAligned {}

/// Laid out in declaration order: the generation a lookup checks first,
/// then the value (at offset 8 for a value aligned to at most 8 bytes).
#[derive(Clone, Debug)]
#[repr(C)]
struct Entry<T, A: EntryAlign> {
    /// Aligns the entry as `A` (no bytes).
    align: [A; 0],
    generation: u32,
    /// The next vacant entry while vacant.
    next_vacant: u32,
    /// The value; `None` while vacant.
    value: Option<T>,
}

/// The arena, its entries aligned as `A`.
#[derive(Clone, Debug)]
pub(crate) struct Arena<T, A: EntryAlign = ()> {
    entries: Vec<Entry<T, A>>,
    vacant: u32,
    len: u32,
}

impl<T, A: EntryAlign> Default for Arena<T, A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, A: EntryAlign> Arena<T, A> {
    /// An empty arena.
    pub(crate) const fn new() -> Self {
        Self {
            entries: Vec::new(),
            vacant: NIL,
            len: 0,
        }
    }

    /// An empty arena with room for `n` values before it allocates.
    pub(crate) fn with_capacity(n: usize) -> Self {
        let mut entries = Vec::new();
        // A hint: as much of it as the allocator grants (indices are `u32`:
        // more could never be used), never a panic or an abort.
        let _ = entries.try_reserve_exact(n.min(u32::MAX as usize));
        Self {
            entries,
            vacant: NIL,
            len: 0,
        }
    }

    /// Values held.
    pub(crate) const fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether no value is held.
    #[allow(dead_code, reason = "part of the arena's surface; used by tests")]
    pub(crate) const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Stores `value`, reusing the most recently vacated entry. Hands the
    /// value back when every index is taken (2^32 − 1 values).
    #[inline]
    pub(crate) fn insert(&mut self, value: T) -> Result<Key, T> {
        if self.vacant != NIL {
            let index = self.vacant;
            let e = &mut self.entries[index as usize];
            self.vacant = e.next_vacant;
            e.value = Some(value);
            e.next_vacant = NIL;
            self.len += 1;
            return Ok(Key {
                index,
                generation: e.generation,
            });
        }
        let index = self.entries.len();
        if index >= NIL as usize {
            return Err(value);
        }
        self.entries.push(Entry {
            align: [],
            generation: 0,
            value: Some(value),
            next_vacant: NIL,
        });
        self.len += 1;
        Ok(Key {
            index: index as u32,
            generation: 0,
        })
    }

    /// The value of a live key.
    #[inline]
    pub(crate) fn get(&self, key: Key) -> Option<&T> {
        match self.entries.get(key.index as usize) {
            Some(e) if e.generation == key.generation => e.value.as_ref(),
            _ => None,
        }
    }

    /// The value of a live key, mutably.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: Key) -> Option<&mut T> {
        match self.entries.get_mut(key.index as usize) {
            Some(e) if e.generation == key.generation => e.value.as_mut(),
            _ => None,
        }
    }

    /// The value at `index`, whatever its generation (for indices the
    /// owner keeps internally and knows to be live).
    #[inline]
    pub(crate) fn at(&self, index: u32) -> Option<&T> {
        self.entries
            .get(index as usize)
            .and_then(|e| e.value.as_ref())
    }

    /// The value at `index`, mutably, whatever its generation.
    #[inline]
    pub(crate) fn at_mut(&mut self, index: u32) -> Option<&mut T> {
        self.entries
            .get_mut(index as usize)
            .and_then(|e| e.value.as_mut())
    }

    /// The key of the live value at `index`.
    #[inline]
    pub(crate) fn key_at(&self, index: u32) -> Option<Key> {
        let e = self.entries.get(index as usize)?;
        e.value.as_ref().map(|_| Key {
            index,
            generation: e.generation,
        })
    }

    /// Removes the value of a live key; the key (and every copy of it)
    /// becomes stale.
    #[inline]
    pub(crate) fn remove(&mut self, key: Key) -> Option<T> {
        let e = self.entries.get_mut(key.index as usize)?;
        if e.generation != key.generation {
            return None;
        }
        let value = e.value.take()?;
        e.generation = e.generation.wrapping_add(1);
        e.next_vacant = self.vacant;
        self.vacant = key.index;
        self.len -= 1;
        Some(value)
    }

    /// Removes the value at `index`, whatever its generation.
    #[inline]
    pub(crate) fn remove_at(&mut self, index: u32) -> Option<T> {
        let e = self.entries.get_mut(index as usize)?;
        let value = e.value.take()?;
        e.generation = e.generation.wrapping_add(1);
        e.next_vacant = self.vacant;
        self.vacant = index;
        self.len -= 1;
        Some(value)
    }

    /// Removes every value; every key becomes stale. Keeps the entries'
    /// memory.
    pub(crate) fn clear(&mut self) {
        for i in 0..self.entries.len() {
            self.remove_at(i as u32);
        }
    }

    /// The live values with their keys, by index.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Key, &T)> + '_ {
        self.entries.iter().enumerate().filter_map(|(i, e)| {
            e.value.as_ref().map(|v| {
                (
                    Key {
                        index: i as u32,
                        generation: e.generation,
                    },
                    v,
                )
            })
        })
    }
}

/// Where an entry of `Arena<T, A>` keeps its value, and the entry's size
/// and alignment (for layout checks).
#[cfg(test)]
pub(crate) const fn entry_layout<T, A: EntryAlign>() -> (usize, usize, usize) {
    (
        core::mem::offset_of!(Entry<T, A>, value),
        core::mem::size_of::<Entry<T, A>>(),
        core::mem::align_of::<Entry<T, A>>(),
    )
}

/// The value at an index the owner keeps internally.
///
/// # Panics
/// On a vacant entry or an index past the end: the owner's bookkeeping is
/// broken (a bug of the core, never an outside input).
impl<T, A: EntryAlign> core::ops::Index<u32> for Arena<T, A> {
    type Output = T;
    #[inline]
    fn index(&self, index: u32) -> &T {
        match self.at(index) {
            Some(v) => v,
            None => panic!("arena entry {index} is vacant"),
        }
    }
}

/// The value at an index the owner keeps internally, mutably.
///
/// # Panics
/// As [`Index`](core::ops::Index).
impl<T, A: EntryAlign> core::ops::IndexMut<u32> for Arena<T, A> {
    #[inline]
    fn index_mut(&mut self, index: u32) -> &mut T {
        match self.at_mut(index) {
            Some(v) => v,
            None => panic!("arena entry {index} is vacant"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeMap;
    use proptest::prelude::*;

    #[test]
    fn line_aligned_entries_start_on_lines_with_the_generation_first() {
        // A value of 104 bytes, aligned to 8: generation and vacant link in
        // the first 8 bytes, the value after them, two whole lines.
        assert_eq!(entry_layout::<[u64; 13], LineAligned>(), (8, 128, 64));
        assert_eq!(
            core::mem::offset_of!(Entry<[u64; 13], LineAligned>, generation),
            0
        );
        // Packed as the value needs by default (a `u64` is aligned to 4
        // bytes on a 32-bit x86 host, to 8 elsewhere).
        let (value, size, align) = entry_layout::<u64, ()>();
        let a = core::mem::align_of::<Option<u64>>();
        assert_eq!((value, align), (8, a.max(4)));
        assert_eq!(size, 8 + core::mem::size_of::<Option<u64>>());
        // A value whose `Option` keeps its tag in a niche (as a buffer
        // slot's does) starts 8 bytes into a line.
        type Wide = (core::num::NonZeroU64, [u64; 12]);
        let mut a: Arena<Wide, LineAligned> = Arena::new();
        let one = core::num::NonZeroU64::MIN;
        let keys: alloc::vec::Vec<Key> =
            (0..5).map(|i| a.insert((one, [i; 12])).unwrap()).collect();
        for (i, &k) in keys.iter().enumerate() {
            let v = a.get(k).unwrap();
            assert_eq!(v.1[11], i as u64);
            assert_eq!(core::ptr::from_ref(v) as usize % 64, 8);
        }
    }

    #[test]
    fn a_removed_key_goes_stale_and_its_entry_is_reused() {
        let mut a: Arena<u32> = Arena::new();
        let k1 = a.insert(10u32).unwrap();
        let k2 = a.insert(20).unwrap();
        assert_eq!((a.len(), a.get(k1), a.get(k2)), (2, Some(&10), Some(&20)));
        assert_eq!(a.remove(k1), Some(10));
        assert_eq!(a.get(k1), None);
        assert_eq!((a.remove(k1), a.len()), (None, 1));
        let k3 = a.insert(30).unwrap();
        assert_eq!(k3.index, k1.index, "the vacant entry is reused");
        assert_ne!(k3, k1);
        assert_eq!((a.get(k1), a.get(k3)), (None, Some(&30)));
        assert_eq!(a.at(k1.index), Some(&30));
        *a.get_mut(k3).unwrap() += 1;
        assert_eq!(a.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [31, 20]);
        a.clear();
        assert!(a.is_empty() && a.get(k2).is_none() && a.get(k3).is_none());
    }

    #[test]
    fn a_warm_arena_does_not_grow() {
        let mut a: Arena<i32> = Arena::with_capacity(4);
        let keys: Vec<Key> = (0..4).map(|i| a.insert(i).unwrap()).collect();
        let cap = a.entries.capacity();
        for round in 0..100 {
            for &k in &keys {
                a.remove(Key {
                    generation: k.generation.wrapping_add(round),
                    ..k
                });
            }
            for i in 0..4 {
                a.insert(i).unwrap();
            }
        }
        assert_eq!((a.entries.capacity(), a.entries.len()), (cap, 4));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u16),
        Remove(usize),
        RemoveStale(usize),
        Get(usize),
        Clear,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => any::<u16>().prop_map(Op::Insert),
            3 => any::<usize>().prop_map(Op::Remove),
            1 => any::<usize>().prop_map(Op::RemoveStale),
            2 => any::<usize>().prop_map(Op::Get),
            1 => Just(Op::Clear),
        ]
    }

    proptest! {
        /// Against a map from key to value and the set of keys ever handed
        /// out: live keys find their value, every other key finds nothing,
        /// no key is handed out twice.
        #[test]
        fn matches_a_map_of_keys(ops in proptest::collection::vec(op(), 1..300)) {
            let mut a: Arena<u16, LineAligned> = Arena::new();
            let mut live: BTreeMap<Key, u16> = BTreeMap::new();
            let mut dead: Vec<Key> = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(v) => {
                        let k = a.insert(v).unwrap();
                        prop_assert!(!live.contains_key(&k) && !dead.contains(&k));
                        live.insert(k, v);
                    }
                    Op::Remove(i) if !live.is_empty() => {
                        let k = *live.keys().nth(i % live.len()).unwrap();
                        prop_assert_eq!(a.remove(k), live.remove(&k));
                        dead.push(k);
                    }
                    Op::RemoveStale(i) if !dead.is_empty() => {
                        let k = dead[i % dead.len()];
                        prop_assert_eq!(a.remove(k), None);
                    }
                    Op::Get(i) if !dead.is_empty() => {
                        prop_assert_eq!(a.get(dead[i % dead.len()]), None);
                    }
                    Op::Clear => {
                        a.clear();
                        dead.extend(live.keys().copied());
                        live.clear();
                    }
                    _ => {}
                }
                prop_assert_eq!(a.len(), live.len());
                for (k, v) in &live {
                    prop_assert_eq!(a.get(*k), Some(v));
                    prop_assert_eq!(a.key_at(k.index), Some(*k));
                }
                let listed: Vec<(Key, u16)> = a.iter().map(|(k, v)| (k, *v)).collect();
                let expected: Vec<(Key, u16)> = live.iter().map(|(k, v)| (*k, *v)).collect();
                prop_assert_eq!(listed, expected);
            }
        }
    }
}
