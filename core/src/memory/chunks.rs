//! The chunk table of a manager over a resizable storage: which granules of
//! each reservation are backed by memory, in which chunk (one storage
//! `commit`), how many carved blocks use each chunk, and the idle LRU of
//! chunks no block uses (what can be decommitted in place).
//!
//! A reservation's granules map to chunk indices (`NIL`: nothing committed).
//! A chunk is a run of granules committed by one call and decommitted by
//! one call. A block carved from a reservation *uses* every chunk it
//! overlaps; a chunk with no user lies wholly inside free space, so no live
//! slice (and, since slices are freed only once no queued work touches them,
//! no queued work) touches it.
//!
//! Frees in stream order (see `MemoryManager::free_ordered`) hand bytes
//! back while work queued on the stream may still touch them: a chunk that
//! goes idle is stamped with the highest stream cursor any free has named so
//! far (its *fence*), and may be decommitted only once the stream has
//! completed that cursor. The stamps only grow, so the idle LRU is ordered
//! by fence too: the chunks that may go are always a prefix of it.
//!
//! Walking the chunks a block overlaps costs one step per chunk, and a
//! chunk is at least one granule (2 MiB on the driver), so the hot path
//! stays O(1) for the slices that fit in a chunk. A run of uncommitted
//! granules costs one step per granule only up to the map's *extent* (the
//! last committed granule): past it every granule is uncommitted and a
//! walk ends in one step, so a request far larger than the memory (whose
//! commit the storage then refuses) costs O(1), not one step per granule.

use alloc::vec::Vec;

use crate::arena::{Arena, NIL};

/// One committed chunk.
#[derive(Clone, Copy, Debug)]
pub(super) struct Chunk {
    /// The reservation's map.
    pub map: u32,
    /// Its first granule and its length in granules.
    pub start: u32,
    pub len: u32,
    /// Carved pages overlapping it.
    pub users: u32,
    in_lru: bool,
    prev: u32,
    next: u32,
    /// The reserve count when it last became idle.
    pub idle_since: u64,
    /// The stream cursor that must complete before it may be decommitted
    /// (the table's fence when it last became idle).
    pub fence: u64,
}

/// The granules of one reservation.
#[derive(Clone, Debug, Default)]
pub(super) struct Map {
    /// The reservation.
    pub owner: u32,
    /// Granule → chunk, grown as far as granules were ever committed.
    granules: Vec<u32>,
}

/// Bytes and chunks that changed state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Moved {
    /// Chunks.
    pub chunks: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Every reservation's granules, the chunks and their idle LRU.
#[derive(Debug)]
pub(super) struct ChunkTable {
    granule: u64,
    shift: u32,
    maps: Arena<Map>,
    chunks: Arena<Chunk>,
    lru_head: u32,
    lru_tail: u32,
    /// The highest stream cursor a free in stream order has named: what a
    /// chunk going idle now must wait for.
    pub fence: u64,
    /// Bytes of the idle chunks.
    pub idle_bytes: u64,
    /// Granules looked up (tests count the steps of a walk).
    #[cfg(test)]
    steps: core::cell::Cell<u64>,
}

impl ChunkTable {
    /// An empty table for chunks of whole `granule`s (a power of two).
    pub(super) fn new(granule: u64) -> Self {
        let granule = if granule.is_power_of_two() {
            granule
        } else {
            1
        };
        Self {
            granule,
            shift: granule.trailing_zeros(),
            maps: Arena::new(),
            chunks: Arena::new(),
            lru_head: NIL,
            lru_tail: NIL,
            fence: 0,
            idle_bytes: 0,
            #[cfg(test)]
            steps: core::cell::Cell::new(0),
        }
    }

    /// The granule in bytes.
    pub(super) const fn granule(&self) -> u64 {
        self.granule
    }

    /// The most bytes one reservation may span (its granules are `u32`).
    pub(super) const fn max_reservation(&self) -> u64 {
        self.granule.saturating_mul(1 << 31)
    }

    /// A map for reservation `owner`; `None` when full.
    pub(super) fn add_map(&mut self, owner: u32) -> Option<u32> {
        self.maps
            .insert(Map {
                owner,
                granules: Vec::new(),
            })
            .ok()
            .map(|k| k.index)
    }

    /// Forgets a reservation's map (every chunk of it decommitted).
    pub(super) fn remove_map(&mut self, map: u32) {
        self.maps.remove_at(map);
    }

    /// The granules `[lo, hi)` that bytes `offset..offset + len` touch.
    pub(super) fn span(&self, offset: u64, len: u64) -> (u32, u32) {
        let lo = offset >> self.shift;
        let hi = (offset + len + self.granule - 1) >> self.shift;
        (lo as u32, hi as u32)
    }

    fn at(&self, map: u32, g: u32) -> u32 {
        #[cfg(test)]
        self.steps.set(self.steps.get() + 1);
        self.maps[map]
            .granules
            .get(g as usize)
            .copied()
            .unwrap_or(NIL)
    }

    /// The end of the map's extent: every granule from it on is
    /// uncommitted.
    fn extent(&self, map: u32) -> u32 {
        self.maps[map].granules.len() as u32
    }

    pub(super) fn at_granule(&self, map: u32, g: u32) -> Option<u32> {
        let c = self.at(map, g);
        (c != NIL).then_some(c)
    }

    /// The chunk at index `c`.
    pub(super) fn chunk(&self, c: u32) -> &Chunk {
        &self.chunks[c]
    }

    /// Adds one use to every chunk over `[lo, hi)`; returns the chunks
    /// that stopped being idle and the granules not committed.
    pub(super) fn use_span(&mut self, map: u32, lo: u32, hi: u32) -> (Moved, u32) {
        let mut woke = Moved::default();
        let mut gaps = 0;
        let extent = self.extent(map);
        let mut g = lo;
        while g < hi {
            if g >= extent {
                gaps += hi - g;
                break;
            }
            let c = self.at(map, g);
            if c == NIL {
                gaps += 1;
                g += 1;
                continue;
            }
            let ch = &mut self.chunks[c];
            ch.users += 1;
            g = ch.start + ch.len;
            if ch.users == 1 {
                woke.chunks += 1;
                woke.bytes += u64::from(ch.len) << self.shift;
                self.lru_unlink(c);
            }
        }
        (woke, gaps)
    }

    /// Drops one use of every chunk over `[lo, hi)`; chunks left without a
    /// user join the idle LRU (youngest) with age `now`. Returns them.
    pub(super) fn release_span(&mut self, map: u32, lo: u32, hi: u32, now: u64) -> Moved {
        let mut idle = Moved::default();
        let hi = hi.min(self.extent(map));
        let mut g = lo;
        while g < hi {
            let c = self.at(map, g);
            if c == NIL {
                g += 1;
                continue;
            }
            let ch = &mut self.chunks[c];
            ch.users -= 1;
            g = ch.start + ch.len;
            if ch.users == 0 {
                ch.idle_since = now;
                ch.fence = self.fence;
                idle.chunks += 1;
                idle.bytes += u64::from(ch.len) << self.shift;
                self.lru_push(c);
            }
        }
        idle
    }

    /// How many of the granules `[lo, hi)` of `map` are committed (one
    /// step per chunk, and per uncommitted granule below the extent).
    pub(super) fn committed_in(&self, map: u32, lo: u32, hi: u32) -> u32 {
        let hi = hi.min(self.extent(map));
        let mut g = lo;
        let mut n = 0;
        while g < hi {
            let c = self.at(map, g);
            if c == NIL {
                g += 1;
                continue;
            }
            let ch = &self.chunks[c];
            let end = (ch.start + ch.len).min(hi);
            n += end - g.max(ch.start);
            g = ch.start + ch.len;
        }
        n
    }

    /// Whether every granule of `[lo, hi)` of `map` is committed (one step
    /// per chunk; the first uncommitted granule ends the walk).
    pub(super) fn covers(&self, map: u32, lo: u32, hi: u32) -> bool {
        if hi > self.extent(map) {
            return lo >= hi;
        }
        let mut g = lo;
        while g < hi {
            let c = self.at(map, g);
            if c == NIL {
                return false;
            }
            let ch = &self.chunks[c];
            g = ch.start + ch.len;
        }
        true
    }

    /// The first run of uncommitted granules in `[from, hi)`.
    pub(super) fn next_gap(&self, map: u32, from: u32, hi: u32) -> Option<(u32, u32)> {
        let extent = self.extent(map);
        let mut g = from;
        while g < hi {
            if g >= extent {
                return Some((g, hi));
            }
            let c = self.at(map, g);
            if c == NIL {
                let mut end = g + 1;
                while end < hi && end < extent && self.at(map, end) == NIL {
                    end += 1;
                }
                if end >= extent {
                    end = hi;
                }
                return Some((g, end));
            }
            g = self.chunks[c].start + self.chunks[c].len;
        }
        None
    }

    /// How far past `end` a commit may reach: over uncommitted granules,
    /// below `limit`, at most `want` granules from `start` in all.
    pub(super) fn reach(&self, map: u32, start: u32, end: u32, limit: u32, want: u32) -> u32 {
        let extent = self.extent(map);
        let mut e = end;
        while e < limit && e - start < want && e < extent && self.at(map, e) == NIL {
            e += 1;
        }
        if e >= extent {
            // Nothing is committed from here on.
            e = e.max(limit.min(start.saturating_add(want)));
        }
        e
    }

    /// Records a chunk committed over `[start, end)` with `users` users.
    /// `None` when the table is full or its map cannot grow that far (the
    /// host is out of memory: 4 bytes a granule up to the map's extent);
    /// nothing is recorded then.
    pub(super) fn add(
        &mut self,
        map: u32,
        start: u32,
        end: u32,
        users: u32,
        now: u64,
    ) -> Option<u32> {
        let granules = &mut self.maps[map].granules;
        let more = (end as usize).saturating_sub(granules.len());
        granules.try_reserve(more).ok()?;
        let c = self
            .chunks
            .insert(Chunk {
                map,
                start,
                len: end - start,
                users,
                in_lru: false,
                prev: NIL,
                next: NIL,
                idle_since: now,
                fence: self.fence,
            })
            .ok()?
            .index;
        let granules = &mut self.maps[map].granules;
        if granules.len() < end as usize {
            granules.resize(end as usize, NIL);
        }
        for g in &mut granules[start as usize..end as usize] {
            *g = c;
        }
        if users == 0 {
            self.lru_push(c);
        }
        Some(c)
    }

    /// Forgets chunk `c` (decommitted); returns it.
    pub(super) fn remove(&mut self, c: u32) -> Chunk {
        self.lru_unlink(c);
        let ch = match self.chunks.remove_at(c) {
            Some(ch) => ch,
            None => panic!("chunk {c} is not in the table"),
        };
        let granules = &mut self.maps[ch.map].granules;
        for g in &mut granules[ch.start as usize..(ch.start + ch.len) as usize] {
            *g = NIL;
        }
        // The extent ends at the last committed granule (the capacity stays).
        while granules.last() == Some(&NIL) {
            granules.pop();
        }
        ch
    }

    /// The bytes of a chunk.
    pub(super) fn bytes(&self, ch: &Chunk) -> u64 {
        u64::from(ch.len) << self.shift
    }

    /// Where chunk `c` lies in its reservation and how long it is, in
    /// bytes: what its commit and its decommit pass to the storage.
    pub(super) fn range_of(&self, c: u32) -> (u64, u64) {
        let ch = self.chunk(c);
        (u64::from(ch.start) << self.shift, self.bytes(ch))
    }

    /// The oldest idle chunk.
    pub(super) fn lru_head(&self) -> Option<u32> {
        (self.lru_head != NIL).then_some(self.lru_head)
    }

    /// The youngest idle chunk.
    pub(super) fn lru_tail(&self) -> Option<u32> {
        (self.lru_tail != NIL).then_some(self.lru_tail)
    }

    /// The idle chunk after `c` (younger).
    pub(super) fn lru_next(&self, c: u32) -> Option<u32> {
        let n = self.chunks[c].next;
        (n != NIL).then_some(n)
    }

    /// Whether no chunk of the reservation `map` is committed. O(1): the
    /// map's extent ends at its last committed granule, so it is empty
    /// exactly when nothing is committed (a walk over the granules here
    /// made giving back a page committed in `n` pieces cost `O(n^2)`).
    pub(super) fn is_bare(&self, map: u32) -> bool {
        self.maps[map].granules.is_empty()
    }

    /// Every chunk of the reservation `map`, by offset (for releasing a
    /// whole reservation; not a hot path).
    pub(super) fn chunks_of(&self, map: u32) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for &c in &self.maps[map].granules {
            if c != NIL && out.last() != Some(&c) {
                out.push(c);
            }
        }
        out
    }

    /// The reservation of `map`.
    pub(super) fn owner_of(&self, map: u32) -> u32 {
        self.maps[map].owner
    }

    fn lru_push(&mut self, c: u32) {
        let tail = self.lru_tail;
        let ch = &mut self.chunks[c];
        self.idle_bytes += u64::from(ch.len) << self.shift;
        ch.in_lru = true;
        ch.prev = tail;
        ch.next = NIL;
        if tail != NIL {
            self.chunks[tail].next = c;
        } else {
            self.lru_head = c;
        }
        self.lru_tail = c;
    }

    fn lru_unlink(&mut self, c: u32) {
        let ch = self.chunks[c];
        if !ch.in_lru {
            return;
        }
        self.idle_bytes -= u64::from(ch.len) << self.shift;
        if ch.prev != NIL {
            self.chunks[ch.prev].next = ch.next;
        } else {
            self.lru_head = ch.next;
        }
        if ch.next != NIL {
            self.chunks[ch.next].prev = ch.prev;
        } else {
            self.lru_tail = ch.prev;
        }
        let ch = &mut self.chunks[c];
        ch.in_lru = false;
        ch.prev = NIL;
        ch.next = NIL;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_past_the_extent_take_one_step_not_one_per_granule() {
        let mut t = ChunkTable::new(64 << 10);
        let map = t.add_map(0).unwrap();
        let far = 1 << 24;
        t.add(map, 2, 4, 1, 0).unwrap();
        t.steps.set(0);
        let (_, gaps) = t.use_span(map, 0, far);
        assert_eq!(gaps, far - 2);
        assert_eq!(t.next_gap(map, 2, far), Some((4, far)));
        assert_eq!(t.next_gap(map, 0, far), Some((0, 2)));
        assert_eq!(t.reach(map, 4, 5, far, far), far);
        assert_eq!(t.reach(map, 4, 5, far, 100), 104);
        assert_eq!(t.reach(map, 0, 1, far, far), 2, "stops at a chunk");
        let idle = t.release_span(map, 0, far, 1);
        assert_eq!(idle.chunks, 0, "the chunk had two users");
        assert!(t.steps.get() < 64, "{} granules looked up", t.steps.get());
    }

    /// `covers` against the naive count: a span is covered exactly when
    /// every one of its granules is committed, and the walk takes one step
    /// per chunk, not one per granule.
    #[test]
    fn a_span_is_covered_when_every_granule_is_committed() {
        let mut t = ChunkTable::new(1);
        let map = t.add_map(0).unwrap();
        // Chunks over 0-2, 3-7, 10-11 and 12-1000; 2, 7-9 and 11 are gaps.
        for (a, b) in [(0, 2), (3, 7), (10, 11), (12, 1000)] {
            t.add(map, a, b, 0, 0).unwrap();
        }
        for lo in 0..40 {
            for hi in lo..40 {
                let naive = t.committed_in(map, lo, hi) == hi - lo;
                assert_eq!(t.covers(map, lo, hi), naive, "[{lo}, {hi})");
            }
        }
        assert!(!t.covers(map, 990, 1001), "past the extent");
        assert!(t.covers(map, 5, 5), "an empty span");
        t.steps.set(0);
        assert!(t.covers(map, 12, 1000));
        assert!(t.steps.get() <= 2, "{} granules looked up", t.steps.get());
    }

    #[test]
    fn the_extent_shrinks_back_to_the_last_committed_granule() {
        let mut t = ChunkTable::new(1);
        let map = t.add_map(0).unwrap();
        let a = t.add(map, 0, 2, 0, 0).unwrap();
        let b = t.add(map, 5, 9, 0, 0).unwrap();
        assert_eq!(t.extent(map), 9);
        assert_eq!(t.next_gap(map, 0, 20), Some((2, 5)));
        t.remove(b);
        assert_eq!(t.extent(map), 2);
        assert_eq!(t.next_gap(map, 0, 20), Some((2, 20)));
        assert_eq!(t.use_span(map, 0, 20).1, 18);
        assert!(!t.is_bare(map));
        t.remove(a);
        assert_eq!(t.extent(map), 0);
        assert!(t.is_bare(map));
        assert_eq!(t.chunks_of(map), Vec::<u32>::new());
    }
}
