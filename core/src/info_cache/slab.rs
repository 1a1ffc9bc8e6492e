//! The entries: nodes in the core's generational [`Arena`] addressed by
//! `u32` index, with an intrusive doubly-linked list through them in
//! second-chance order (a hit sets the entry's reference bit; eviction
//! moves a referenced tail to the head instead of evicting it). Key
//! buffers of freed entries are kept for reuse.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::arena::Arena;
pub(crate) use crate::arena::NIL;

/// Bytes an entry of `words` words holds.
pub(crate) const fn entry_bytes(words: usize) -> u64 {
    (words as u64).saturating_mul(8)
}

/// Keys of at most this many words are held in the node itself: a hit
/// then reads no line of its own for the key.
const INLINE_WORDS: usize = 3;

/// An entry's words: short keys in line, longer ones in a buffer of their
/// own (reused through the slab's spare keys).
#[derive(Debug)]
pub(crate) enum Words {
    /// At most [`INLINE_WORDS`] words: the first `len` of `words`.
    Inline {
        /// How many words are used.
        len: u8,
        /// The words, unused ones 0.
        words: [u64; INLINE_WORDS],
    },
    /// Longer keys.
    Heap(Box<[u64]>),
}

impl Words {
    /// The words.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u64] {
        match self {
            Self::Inline { len, words } => words.get(..usize::from(*len)).unwrap_or(words),
            Self::Heap(b) => b,
        }
    }
}

/// One entry (its `value` is `Some` while it is in the slab). Laid out in
/// the order a hit reads it: hash and key (the probe), the value, then the
/// list links.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Node<V> {
    pub(crate) hash: u64,
    pub(crate) key: Words,
    pub(crate) value: Option<V>,
    prev: u32,
    next: u32,
    /// Live graphs pinning the entry.
    pub(crate) pins: u32,
    /// Recorded in the open capture window.
    pub(crate) in_window: bool,
    /// In the LRU list.
    linked: bool,
    /// Hit since it was linked or last given a second chance.
    referenced: bool,
}

impl<V> Node<V> {
    pub(crate) fn bytes(&self) -> u64 {
        entry_bytes(self.key.as_slice().len())
    }
}

/// The slab and its LRU list (head: most recently used; tail: evicted next).
#[derive(Debug)]
pub(crate) struct Slab<V> {
    nodes: Arena<Node<V>>,
    /// Key buffers of freed entries (longer than [`INLINE_WORDS`]), most
    /// recent last.
    spare_keys: Vec<Box<[u64]>>,
    head: u32,
    tail: u32,
    linked: usize,
    linked_bytes: u64,
}

impl<V> Slab<V> {
    pub(crate) fn with_capacity(entries: usize) -> Self {
        Self {
            nodes: Arena::with_capacity(entries),
            spare_keys: {
                let mut v = Vec::new();
                let _ = v.try_reserve_exact(entries.min(u32::MAX as usize));
                v
            },
            head: NIL,
            tail: NIL,
            linked: 0,
            linked_bytes: 0,
        }
    }

    #[inline]
    pub(crate) fn node(&self, idx: u32) -> &Node<V> {
        &self.nodes[idx]
    }

    #[inline]
    pub(crate) fn node_mut(&mut self, idx: u32) -> &mut Node<V> {
        &mut self.nodes[idx]
    }

    /// Entries in the LRU list.
    pub(crate) fn linked(&self) -> usize {
        self.linked
    }

    /// Bytes of the entries in the LRU list.
    pub(crate) fn linked_bytes(&self) -> u64 {
        self.linked_bytes
    }

    /// The list's tail: the next evicted, unless it gets a second chance.
    pub(crate) fn tail(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    /// The most recently used entry of the list.
    #[cfg(test)]
    pub(crate) fn head(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// The entry after `idx`, towards the tail.
    #[cfg(test)]
    pub(crate) fn next_of(&self, idx: u32) -> Option<u32> {
        let n = self.node(idx).next;
        (n != NIL).then_some(n)
    }

    /// Stores a new unlinked entry, reusing a free slot (and the most
    /// recently freed key buffer when the length matches). Hands `value`
    /// back when no index is left.
    pub(crate) fn alloc(&mut self, words: &[u64], value: V, hash: u64) -> Result<u32, V> {
        let key = if words.len() <= INLINE_WORDS {
            let mut inline = [0; INLINE_WORDS];
            if let Some(dst) = inline.get_mut(..words.len()) {
                dst.copy_from_slice(words);
            }
            Words::Inline {
                // At most INLINE_WORDS: fits a u8.
                len: words.len() as u8,
                words: inline,
            }
        } else {
            Words::Heap(match self.spare_keys.pop() {
                Some(mut key) if key.len() == words.len() => {
                    key.copy_from_slice(words);
                    key
                }
                _ => words.into(),
            })
        };
        let node = Node {
            key,
            value: None,
            hash,
            prev: NIL,
            next: NIL,
            pins: 0,
            in_window: false,
            linked: false,
            referenced: false,
        };
        match self.nodes.insert(node) {
            Ok(k) => {
                self.nodes[k.index].value = Some(value);
                Ok(k.index)
            }
            Err(_) => Err(value),
        }
    }

    /// Frees an entry (unlinking it first) and returns its value.
    pub(crate) fn free(&mut self, idx: u32) -> Option<V> {
        self.unlink(idx);
        let node = self.nodes.remove_at(idx)?;
        if let Words::Heap(key) = node.key {
            self.spare_keys.push(key);
        }
        node.value
    }

    /// Links an unlinked entry at the head (most recently used).
    pub(crate) fn link_front(&mut self, idx: u32) {
        let head = self.head;
        let node = self.node_mut(idx);
        if node.linked {
            return;
        }
        node.linked = true;
        node.referenced = false;
        node.prev = NIL;
        node.next = head;
        let bytes = node.bytes();
        if head == NIL {
            self.tail = idx;
        } else {
            self.node_mut(head).prev = idx;
        }
        self.head = idx;
        self.linked += 1;
        self.linked_bytes += bytes;
    }

    /// Links an unlinked entry at the tail (evicted next).
    pub(crate) fn link_back(&mut self, idx: u32) {
        let tail = self.tail;
        let node = self.node_mut(idx);
        if node.linked {
            return;
        }
        node.linked = true;
        node.referenced = false;
        node.next = NIL;
        node.prev = tail;
        let bytes = node.bytes();
        if tail == NIL {
            self.head = idx;
        } else {
            self.node_mut(tail).next = idx;
        }
        self.tail = idx;
        self.linked += 1;
        self.linked_bytes += bytes;
    }

    /// Takes a linked entry out of the list (no-op when unlinked).
    pub(crate) fn unlink(&mut self, idx: u32) {
        let node = self.node_mut(idx);
        if !node.linked {
            return;
        }
        node.linked = false;
        node.referenced = false;
        let (prev, next, bytes) = (node.prev, node.next, node.bytes());
        node.prev = NIL;
        node.next = NIL;
        if prev == NIL {
            self.head = next;
        } else {
            self.node_mut(prev).next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.node_mut(next).prev = prev;
        }
        self.linked -= 1;
        self.linked_bytes -= bytes;
    }

    /// Marks a linked entry used: its reference bit, in its own node (a
    /// hit writes no other entry's line).
    #[inline]
    pub(crate) fn touch(&mut self, idx: u32) {
        let node = self.node_mut(idx);
        if node.linked && !node.referenced {
            node.referenced = true;
        }
    }

    /// The second chance: when the tail `idx` was hit since it was linked,
    /// clears its bit and moves it to the head (list length and bytes
    /// unchanged) and returns `true`; `false` when it goes next.
    pub(crate) fn second_chance(&mut self, idx: u32) -> bool {
        if !self.node(idx).referenced {
            return false;
        }
        self.unlink(idx);
        self.link_front(idx);
        true
    }
}
