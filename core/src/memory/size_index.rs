//! The idle-page index of exclusive, persistent and dedicated pools.
//!
//! - An exact-size map (`size → list of idle pages of that size`): the
//!   common case, a request the same size as a page freed earlier, is one
//!   hash lookup and a list pop.
//! - Distinct sizes with idle pages are also linked into size classes (the
//!   same two-level classes as the sliced engine) with bitmaps, so a close
//!   fit is found by looking at a bounded number of sizes in the request's
//!   class and the next non-empty class above: O(1).
//!
//! Every structure lives in slabs or a hash table that keep their capacity,
//! so a warm index inserts and removes without touching the heap.

use alloc::vec::Vec;

use super::tlsf::{FL, Heads, NIL, SL, mapping};
use crate::hash::FxHashMap;

/// How many distinct sizes of one class a fit lookup examines.
const CLASS_PROBE: usize = 8;

#[derive(Clone, Copy, Debug)]
struct Entry {
    size: u64,
    /// Idle pages of this size (doubly linked through `PageNode`).
    head: u32,
    /// Class-list links (distinct sizes of one class), or the vacant chain.
    prev: u32,
    next: u32,
}

#[derive(Clone, Copy, Debug)]
struct PageNode {
    entry: u32,
    prev: u32,
    next: u32,
}

const UNLISTED: PageNode = PageNode {
    entry: NIL,
    prev: NIL,
    next: NIL,
};

/// The index.
#[derive(Debug)]
pub(crate) struct SizeIndex {
    shift: u32,
    by_size: FxHashMap<u64, u32>,
    entries: Vec<Entry>,
    vacant: u32,
    /// Indexed by the manager's page index.
    nodes: Vec<PageNode>,
    heads: Heads,
    len: usize,
}

impl SizeIndex {
    /// An empty index for sizes that are multiples of `alignment`.
    pub fn new(alignment: u64) -> Self {
        Self {
            shift: alignment.trailing_zeros(),
            by_size: FxHashMap::default(),
            entries: Vec::new(),
            vacant: NIL,
            nodes: Vec::new(),
            heads: Heads::default(),
            len: 0,
        }
    }

    /// Number of idle pages.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    fn class(&self, size: u64) -> (usize, usize) {
        mapping(size >> self.shift)
    }

    fn link_class(&mut self, e: u32) {
        let (fl, sl) = self.class(self.entries[e as usize].size);
        self.heads.reach(fl);
        let head = self.heads.push_front(fl, sl, e);
        self.entries[e as usize].prev = NIL;
        self.entries[e as usize].next = head;
        if head != NIL {
            self.entries[head as usize].prev = e;
        }
    }

    fn unlink_class(&mut self, e: u32) {
        let Entry {
            size, prev, next, ..
        } = self.entries[e as usize];
        if prev != NIL {
            self.entries[prev as usize].next = next;
        } else {
            let (fl, sl) = self.class(size);
            self.heads.pop_front(fl, sl, next);
        }
        if next != NIL {
            self.entries[next as usize].prev = prev;
        }
    }

    /// Adds an idle page of `size` bytes (`page` must not be listed).
    pub fn insert(&mut self, size: u64, page: u32) {
        let e = match self.by_size.get(&size) {
            Some(&e) => e,
            None => {
                let entry = Entry {
                    size,
                    head: NIL,
                    prev: NIL,
                    next: NIL,
                };
                let e = if self.vacant != NIL {
                    let e = self.vacant;
                    self.vacant = self.entries[e as usize].next;
                    self.entries[e as usize] = entry;
                    e
                } else {
                    self.entries.push(entry);
                    (self.entries.len() - 1) as u32
                };
                self.by_size.insert(size, e);
                self.link_class(e);
                e
            }
        };
        if self.nodes.len() <= page as usize {
            self.nodes.resize(page as usize + 1, UNLISTED);
        }
        let head = self.entries[e as usize].head;
        self.nodes[page as usize] = PageNode {
            entry: e,
            prev: NIL,
            next: head,
        };
        if head != NIL {
            self.nodes[head as usize].prev = page;
        }
        self.entries[e as usize].head = page;
        self.len += 1;
    }

    /// Removes an idle page; returns whether it was listed.
    pub fn remove(&mut self, page: u32) -> bool {
        let Some(&node) = self.nodes.get(page as usize) else {
            return false;
        };
        if node.entry == NIL {
            return false;
        }
        if node.prev != NIL {
            self.nodes[node.prev as usize].next = node.next;
        } else {
            self.entries[node.entry as usize].head = node.next;
        }
        if node.next != NIL {
            self.nodes[node.next as usize].prev = node.prev;
        }
        self.nodes[page as usize] = UNLISTED;
        self.len -= 1;
        let e = node.entry;
        if self.entries[e as usize].head == NIL {
            let size = self.entries[e as usize].size;
            self.unlink_class(e);
            self.by_size.remove(&size);
            self.entries[e as usize].next = self.vacant;
            self.vacant = e;
        }
        true
    }

    /// The smallest size among up to [`CLASS_PROBE`] distinct sizes of a
    /// class list that lies in `lo..=hi`.
    fn probe(&self, mut e: u32, lo: u64, hi: u64) -> Option<u32> {
        let mut best: Option<u32> = None;
        for _ in 0..CLASS_PROBE {
            if e == NIL {
                break;
            }
            let s = self.entries[e as usize].size;
            if s >= lo && s <= hi && best.is_none_or(|b| s < self.entries[b as usize].size) {
                best = Some(e);
            }
            e = self.entries[e as usize].next;
        }
        best
    }

    /// An idle page of `size..=max` bytes: the exact size when one is idle,
    /// else a close fit from the size's class or the next class above.
    /// Returns (page size, page) without removing it.
    pub fn find(&self, size: u64, max: u64) -> Option<(u64, u32)> {
        if self.len == 0 {
            return None;
        }
        let e = match self.by_size.get(&size) {
            Some(&e) => Some(e),
            None => self.find_loose(size, max),
        }?;
        let entry = &self.entries[e as usize];
        Some((entry.size, entry.head))
    }

    fn find_loose(&self, size: u64, max: u64) -> Option<u32> {
        if max <= size {
            return None;
        }
        let (fl, sl) = self.class(size);
        if let Some(e) = self.probe(self.heads.get(fl, sl), size, max) {
            return Some(e);
        }
        // The next non-empty class above.
        let above_sl = if sl + 1 >= SL {
            0
        } else {
            self.heads.listed(fl) & (!0u32 << (sl + 1))
        };
        let (fl, sl) = if above_sl != 0 {
            (fl, above_sl.trailing_zeros() as usize)
        } else {
            let above = if fl + 1 >= FL {
                0
            } else {
                self.heads.levels() & (!0u64 << (fl + 1))
            };
            if above == 0 {
                return None;
            }
            let fl = above.trailing_zeros() as usize;
            (fl, self.heads.listed(fl).trailing_zeros() as usize)
        };
        self.probe(self.heads.get(fl, sl), size, max)
    }

    /// Any idle page (for releasing them all).
    pub fn first(&self) -> Option<(u64, u32)> {
        if self.heads.levels() == 0 {
            return None;
        }
        let fl = self.heads.levels().trailing_zeros() as usize;
        let sl = self.heads.listed(fl).trailing_zeros() as usize;
        let entry = &self.entries[self.heads.get(fl, sl) as usize];
        Some((entry.size, entry.head))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// Against a sorted set: `find` returns a listed page within the
        /// bounds, the exact size whenever one is listed, and misses only
        /// when no listed size lies in the bounds or every candidate sits
        /// beyond the probe limit.
        #[test]
        fn matches_a_sorted_set(ops in proptest::collection::vec((0u8..3, 1u64..400, 0u32..64, 0u64..40), 1..300)) {
            let mut s = SizeIndex::new(256);
            let mut m: BTreeSet<(u64, u32)> = BTreeSet::new();
            for (op, units, page, slack) in ops {
                let size = units * 256;
                match op {
                    0 => {
                        if !m.iter().any(|&(_, p)| p == page) {
                            m.insert((size, page));
                            s.insert(size, page);
                        }
                    }
                    1 => {
                        let listed = m.iter().find(|&&(_, p)| p == page).copied();
                        prop_assert_eq!(s.remove(page), listed.is_some());
                        if let Some(k) = listed { m.remove(&k); }
                    }
                    _ => {
                        let max = size + slack * 256;
                        let got = s.find(size, max);
                        let fits: Vec<_> = m.range((size, 0)..=(max, u32::MAX)).copied().collect();
                        match got {
                            Some((sz, p)) => {
                                prop_assert!(m.contains(&(sz, p)));
                                prop_assert!(sz >= size && sz <= max);
                                if m.range((size, 0)..=(size, u32::MAX)).next().is_some() {
                                    prop_assert_eq!(sz, size, "exact size listed");
                                }
                            }
                            None => {
                                // Sizes below 512 units have at most 8 per class, so a
                                // probe sees whole classes: a miss means no fit.
                                prop_assert!(fits.is_empty(), "missed {:?}", fits);
                            }
                        }
                    }
                }
                prop_assert_eq!(s.len(), m.len());
                prop_assert_eq!(s.first().is_some(), !m.is_empty());
                if let Some(f) = s.first() { prop_assert!(m.contains(&f)); }
            }
        }
    }

    #[test]
    fn close_fit_from_the_next_class() {
        let mut s = SizeIndex::new(256);
        s.insert(256 * 1000, 3);
        s.insert(256 * 1100, 4);
        assert_eq!(s.find(256 * 990, 256 * 1010), Some((256 * 1000, 3)));
        assert_eq!(s.find(256 * 900, 256 * 950), None);
        assert_eq!(s.find(256 * 1050, 256 * 1200), Some((256 * 1100, 4)));
        assert!(s.remove(3));
        assert!(!s.remove(3));
        assert_eq!(s.first(), Some((256 * 1100, 4)));
    }
}
