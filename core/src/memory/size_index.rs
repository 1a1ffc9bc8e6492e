//! An ordered set of `(size, page)` keys for best-fit lookups among idle
//! exclusive pages: a treap whose nodes live in a slab, so a warm index
//! inserts and removes without touching the heap. Priorities come from a
//! fixed mix of a counter: deterministic, expected O(log n) per operation.

use alloc::vec::Vec;

use super::tlsf::NIL;

#[derive(Clone, Copy, Debug)]
struct Node {
    key: (u64, u32),
    prio: u32,
    left: u32,
    right: u32,
}

/// The ordered set.
#[derive(Debug, Default)]
pub(crate) struct SizeIndex {
    nodes: Vec<Node>,
    root: u32,
    vacant: Vec<u32>,
    len: usize,
    seed: u32,
}

fn mix(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

impl SizeIndex {
    /// An empty set.
    pub fn new() -> Self {
        Self {
            nodes: Vec::new(),
            root: NIL,
            vacant: Vec::new(),
            len: 0,
            seed: 0,
        }
    }

    /// Number of keys.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Splits subtree `t` into keys `< key` and keys `>= key`.
    fn split(&mut self, t: u32, key: (u64, u32)) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.nodes[t as usize].key < key {
            let r = self.nodes[t as usize].right;
            let (a, b) = self.split(r, key);
            self.nodes[t as usize].right = a;
            (t, b)
        } else {
            let l = self.nodes[t as usize].left;
            let (a, b) = self.split(l, key);
            self.nodes[t as usize].left = b;
            (a, t)
        }
    }

    /// Joins two subtrees where every key of `a` is below every key of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.nodes[a as usize].right;
            let m = self.merge(r, b);
            self.nodes[a as usize].right = m;
            a
        } else {
            let l = self.nodes[b as usize].left;
            let m = self.merge(a, l);
            self.nodes[b as usize].left = m;
            b
        }
    }

    /// Inserts a key (which must not be present).
    pub fn insert(&mut self, size: u64, page: u32) {
        self.seed = self.seed.wrapping_add(1);
        let node = Node {
            key: (size, page),
            prio: mix(self.seed),
            left: NIL,
            right: NIL,
        };
        let n = match self.vacant.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let root = self.root;
        let (a, b) = self.split(root, node.key);
        let left = self.merge(a, n);
        self.root = self.merge(left, b);
        self.len += 1;
    }

    fn remove_in(&mut self, t: u32, key: (u64, u32)) -> (u32, bool) {
        if t == NIL {
            return (NIL, false);
        }
        let node = self.nodes[t as usize];
        if node.key == key {
            let m = self.merge(node.left, node.right);
            self.vacant.push(t);
            (m, true)
        } else if key < node.key {
            let (l, found) = self.remove_in(node.left, key);
            self.nodes[t as usize].left = l;
            (t, found)
        } else {
            let (r, found) = self.remove_in(node.right, key);
            self.nodes[t as usize].right = r;
            (t, found)
        }
    }

    /// Removes a key; returns whether it was present.
    pub fn remove(&mut self, size: u64, page: u32) -> bool {
        let root = self.root;
        let (r, found) = self.remove_in(root, (size, page));
        self.root = r;
        if found {
            self.len -= 1;
        }
        found
    }

    /// The smallest key whose size is at least `size`.
    pub fn lower_bound(&self, size: u64) -> Option<(u64, u32)> {
        let mut t = self.root;
        let mut best = None;
        while t != NIL {
            let n = &self.nodes[t as usize];
            if n.key.0 >= size {
                best = Some(n.key);
                t = n.left;
            } else {
                t = n.right;
            }
        }
        best
    }

    /// The smallest key.
    pub fn first(&self) -> Option<(u64, u32)> {
        self.lower_bound(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        #[test]
        fn matches_btreeset(ops in proptest::collection::vec((0u8..3, 0u64..50, 0u32..8), 1..300)) {
            let mut s = SizeIndex::new();
            let mut m = BTreeSet::new();
            for (op, size, page) in ops {
                match op {
                    0 => {
                        if m.insert((size, page)) {
                            s.insert(size, page);
                        }
                    }
                    1 => prop_assert_eq!(s.remove(size, page), m.remove(&(size, page))),
                    _ => {
                        let want = m.range((size, 0)..).next().copied();
                        prop_assert_eq!(s.lower_bound(size), want);
                    }
                }
                prop_assert_eq!(s.len(), m.len());
                prop_assert_eq!(s.first(), m.iter().next().copied());
            }
        }
    }

    #[test]
    fn sorted_inserts_stay_shallow() {
        fn depth(s: &SizeIndex, t: u32) -> usize {
            if t == NIL {
                0
            } else {
                let n = s.nodes[t as usize];
                1 + depth(s, n.left).max(depth(s, n.right))
            }
        }
        let mut s = SizeIndex::new();
        for i in 0..4096u64 {
            s.insert(i, 0);
        }
        assert!(depth(&s, s.root) < 64, "depth {}", depth(&s, s.root));
    }
}
