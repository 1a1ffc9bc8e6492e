//! The info cache itself.

use alloc::vec::Vec;
use core::hash::BuildHasher;

use hashbrown::HashTable;

use super::slab::{Slab, entry_bytes};
use super::{CacheMode, CachePolicy, GraphId, InsertError, PinError};
use crate::hash::{FxBuildHasher, FxHashMap};

/// The metadata info cache (see the [module docs](super)).
///
/// ```
/// use streamcore::info_cache::{CacheMode, CachePolicy, GraphId, InfoCache};
///
/// let mut cache: InfoCache<u32> = InfoCache::new(CachePolicy::new(2, 1024));
/// let mut freed = Vec::new();
/// cache.insert(&[4, 4, 1], 10, |v| freed.push(v)).unwrap();
/// cache.insert(&[8, 1], 11, |v| freed.push(v)).unwrap();
/// assert_eq!(cache.get(&[4, 4, 1]), Some(&10));
/// cache.insert(&[2], 12, |v| freed.push(v)).unwrap(); // evicts [8, 1]
/// assert_eq!(freed, [11]);
///
/// // A capture pins what it used until its graph is released.
/// cache.set_mode(CacheMode::Capture, |v| freed.push(v));
/// cache.get(&[2]);
/// cache.capture_commit(GraphId(1), |v| freed.push(v)).unwrap();
/// cache.clear_unpinned(|v| freed.push(v));
/// assert_eq!(freed, [11, 10]);
/// assert_eq!(cache.get(&[2]), Some(&12));
/// cache.graph_release(GraphId(1), |v| freed.push(v)).unwrap();
/// ```
#[derive(Debug)]
pub struct InfoCache<V> {
    /// Node indices, hashed by their words (the hash is kept in the node).
    table: HashTable<u32>,
    slab: Slab<V>,
    hasher: FxBuildHasher,
    policy: CachePolicy,
    mode: CacheMode,
    /// Entries used in the open capture window, each once, in first-use order.
    window: Vec<u32>,
    /// The entries each live graph pins.
    graphs: FxHashMap<GraphId, Vec<u32>>,
    live: usize,
    live_bytes: u64,
}

impl<V> InfoCache<V> {
    /// An empty cache in [`CacheMode::Normal`].
    pub fn new(policy: CachePolicy) -> Self {
        Self::with_capacity(policy, 0)
    }

    /// An empty cache with room for `entries` entries before its slab or its
    /// index allocate. The index is sized so that steady churn at that many
    /// entries rehashes in place instead of growing. `entries` is a hint:
    /// room the allocator cannot grant (`usize::MAX`) is left to grow as
    /// the cache fills; it never panics.
    pub fn with_capacity(policy: CachePolicy, entries: usize) -> Self {
        // Entries are indexed by `u32`: more room could never be used.
        let entries = entries.min(u32::MAX as usize);
        let mut table = HashTable::new();
        // An empty table never calls the hasher.
        let _ = table.try_reserve(entries.saturating_mul(2), |_: &u32| 0);
        Self {
            table,
            slab: Slab::with_capacity(entries),
            hasher: FxBuildHasher::default(),
            policy,
            mode: CacheMode::Normal,
            window: Vec::new(),
            graphs: FxHashMap::default(),
            live: 0,
            live_bytes: 0,
        }
    }

    /// The policy bounding the LRU list.
    pub fn policy(&self) -> CachePolicy {
        self.policy
    }

    /// Replaces the policy and (outside a capture) trims the LRU list under
    /// it, handing evicted values to `on_evict`.
    pub fn set_policy(&mut self, policy: CachePolicy, on_evict: impl FnMut(V)) {
        self.policy = policy;
        self.trim(on_evict);
    }

    /// The current mode.
    pub fn mode(&self) -> CacheMode {
        self.mode
    }

    /// Entries held (LRU, pinned and window entries).
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Bytes of all entries held.
    pub fn bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Entries in the LRU list (the ones the policy bounds).
    pub fn lru_len(&self) -> usize {
        self.slab.linked()
    }

    /// Bytes of the entries in the LRU list.
    pub fn lru_bytes(&self) -> u64 {
        self.slab.linked_bytes()
    }

    /// Entries recorded in the open capture window.
    pub fn window_len(&self) -> usize {
        self.window.len()
    }

    /// Live graphs holding pins.
    pub fn graph_count(&self) -> usize {
        self.graphs.len()
    }

    /// Entries `graph` pins, or `None` for a graph that holds no pins.
    pub fn graph_entries(&self, graph: GraphId) -> Option<usize> {
        self.graphs.get(&graph).map(Vec::len)
    }

    #[inline]
    fn hash(&self, words: &[u64]) -> u64 {
        self.hasher.hash_one(words)
    }

    #[inline]
    fn find(&self, hash: u64, words: &[u64]) -> Option<u32> {
        let slab = &self.slab;
        self.table
            .find(hash, |&i| {
                let n = slab.node(i);
                n.hash == hash && same_words(n.key.as_slice(), words)
            })
            .copied()
    }

    /// Whether `words` are cached; changes nothing.
    pub fn contains(&self, words: &[u64]) -> bool {
        self.find(self.hash(words), words).is_some()
    }

    /// The value cached for `words`, without marking it used.
    pub fn peek(&self, words: &[u64]) -> Option<&V> {
        let idx = self.find(self.hash(words), words)?;
        self.slab.node(idx).value.as_ref()
    }

    /// How many live graphs pin the entry for `words`.
    pub fn pin_count(&self, words: &[u64]) -> Option<u32> {
        let idx = self.find(self.hash(words), words)?;
        Some(self.slab.node(idx).pins)
    }

    /// The value cached for `words`, marked used: its reference bit set in
    /// [`CacheMode::Normal`] (it gets a second chance before eviction; the
    /// list is not reordered on a hit, so a hit touches no other entry),
    /// recorded in the window in [`CacheMode::Capture`]. O(1); allocates
    /// nothing in normal mode (and in capture mode only when the window's
    /// buffer grows).
    pub fn get(&mut self, words: &[u64]) -> Option<&V> {
        let idx = self.find(self.hash(words), words)?;
        match self.mode {
            CacheMode::Normal => self.slab.touch(idx),
            CacheMode::Capture => self.record(idx),
        }
        self.slab.node(idx).value.as_ref()
    }

    /// Records `idx` in the window (once) and takes it out of the LRU list.
    fn record(&mut self, idx: u32) {
        let node = self.slab.node_mut(idx);
        if !node.in_window {
            node.in_window = true;
            self.slab.unlink(idx);
            self.window.push(idx);
        }
    }

    /// Caches `value` for `words`, and returns it.
    ///
    /// In [`CacheMode::Normal`] the entry goes to the head of the LRU list,
    /// after evicting entries in second-chance order (values to `on_evict`,
    /// see the [module docs](super)) until it fits the policy; an entry that cannot fit on its own is refused
    /// ([`InsertError::TooLarge`]). In [`CacheMode::Capture`] nothing is
    /// evicted and the entry is recorded in the window.
    ///
    /// O(1) amortized per eviction; allocates only for a new key buffer (a freed slot's
    /// buffer of the same length is reused), and when the slab or index grow.
    pub fn insert(
        &mut self,
        words: &[u64],
        value: V,
        mut on_evict: impl FnMut(V),
    ) -> Result<&V, InsertError<V>> {
        let hash = self.hash(words);
        if self.find(hash, words).is_some() {
            return Err(InsertError::AlreadyCached(value));
        }
        let bytes = entry_bytes(words.len());
        if self.mode == CacheMode::Normal {
            if !self.policy.admits(bytes) {
                return Err(InsertError::TooLarge(value));
            }
            while self.slab.linked() >= self.policy.max_entries
                || self.slab.linked_bytes() + bytes > self.policy.max_bytes
            {
                if !self.evict_lru(&mut on_evict) {
                    break;
                }
            }
        }
        let idx = self
            .slab
            .alloc(words, value, hash)
            .map_err(InsertError::Full)?;
        let slab = &self.slab;
        self.table.insert_unique(hash, idx, |&i| slab.node(i).hash);
        self.live += 1;
        self.live_bytes += bytes;
        match self.mode {
            CacheMode::Normal => self.slab.link_front(idx),
            CacheMode::Capture => self.record(idx),
        }
        match &self.slab.node(idx).value {
            Some(v) => Ok(v),
            None => unreachable!("a node just allocated holds its value"),
        }
    }

    /// Evicts the list's tail, after giving each referenced tail its
    /// second chance (to the head, bit cleared); `false` when the list is
    /// empty. Each second chance spends the bit one hit set, so evictions
    /// cost O(1) amortized over hits (one eviction walks the whole list at
    /// most, when every entry was hit since its last chance).
    fn evict_lru(&mut self, on_evict: &mut impl FnMut(V)) -> bool {
        let idx = loop {
            let Some(idx) = self.slab.tail() else {
                return false;
            };
            if !self.slab.second_chance(idx) {
                break idx;
            }
        };
        let hash = self.slab.node(idx).hash;
        if let Ok(entry) = self.table.find_entry(hash, |&i| i == idx) {
            entry.remove();
        }
        let bytes = self.slab.node(idx).bytes();
        self.live -= 1;
        self.live_bytes -= bytes;
        if let Some(value) = self.slab.free(idx) {
            on_evict(value);
        }
        true
    }

    /// Evicts from the LRU list's tail until it fits the policy; does
    /// nothing in capture mode.
    fn trim(&mut self, mut on_evict: impl FnMut(V)) {
        if self.mode == CacheMode::Capture {
            return;
        }
        while self.slab.linked() > self.policy.max_entries
            || self.slab.linked_bytes() > self.policy.max_bytes
        {
            if !self.evict_lru(&mut on_evict) {
                break;
            }
        }
    }

    /// Switches mode. Normal → Capture opens a window; Capture → Normal
    /// without a commit is [`InfoCache::capture_discard`]. The same mode
    /// again changes nothing.
    pub fn set_mode(&mut self, mode: CacheMode, on_evict: impl FnMut(V)) {
        match (self.mode, mode) {
            (CacheMode::Normal, CacheMode::Capture) => self.mode = CacheMode::Capture,
            (CacheMode::Capture, CacheMode::Normal) => {
                self.close_window_unpinned(on_evict);
            }
            _ => {}
        }
    }

    /// Ends the window: pins every recorded entry for `graph`, returns to
    /// [`CacheMode::Normal`] and trims the LRU list. Returns the number of
    /// entries pinned.
    ///
    /// Refused, changing nothing, outside capture mode or when `graph` is
    /// live already.
    pub fn capture_commit(
        &mut self,
        graph: GraphId,
        on_evict: impl FnMut(V),
    ) -> Result<usize, PinError> {
        if self.mode != CacheMode::Capture {
            return Err(PinError::NotCapturing);
        }
        if self.graphs.contains_key(&graph) {
            return Err(PinError::GraphExists(graph));
        }
        for &idx in &self.window {
            let node = self.slab.node_mut(idx);
            node.in_window = false;
            // Bounded by the live graphs, each of which holds memory.
            node.pins = node.pins.saturating_add(1);
        }
        let pinned = self.window.len();
        self.graphs.insert(graph, core::mem::take(&mut self.window));
        self.mode = CacheMode::Normal;
        self.trim(on_evict);
        Ok(pinned)
    }

    /// Ends the window without a graph: its entries become ordinary LRU
    /// entries (most recent last used), then the list is trimmed under the
    /// policy. Returns the number of entries the window held.
    ///
    /// Refused, changing nothing, outside capture mode.
    pub fn capture_discard(&mut self, on_evict: impl FnMut(V)) -> Result<usize, PinError> {
        if self.mode != CacheMode::Capture {
            return Err(PinError::NotCapturing);
        }
        Ok(self.close_window_unpinned(on_evict))
    }

    fn close_window_unpinned(&mut self, on_evict: impl FnMut(V)) -> usize {
        let recorded = self.window.len();
        for i in 0..recorded {
            let idx = self.window[i];
            let node = self.slab.node_mut(idx);
            node.in_window = false;
            if node.pins == 0 {
                self.slab.link_front(idx);
            }
        }
        self.window.clear();
        self.mode = CacheMode::Normal;
        self.trim(on_evict);
        recorded
    }

    /// Drops `graph`'s pins. Entries no live graph pins any more (and not in
    /// an open window) go back to the cold end of the LRU list, in the order
    /// the graph first used them, and the list is trimmed (outside a capture).
    /// Returns the number of entries that became unpinned.
    ///
    /// Refused, changing nothing, for a graph that holds no pins.
    pub fn graph_release(
        &mut self,
        graph: GraphId,
        on_evict: impl FnMut(V),
    ) -> Result<usize, PinError> {
        let Some(entries) = self.graphs.remove(&graph) else {
            return Err(PinError::UnknownGraph(graph));
        };
        let mut unpinned = 0;
        for &idx in entries.iter().rev() {
            let node = self.slab.node_mut(idx);
            node.pins = node.pins.saturating_sub(1);
            if node.pins == 0 {
                unpinned += 1;
                if !node.in_window {
                    self.slab.link_back(idx);
                }
            }
        }
        self.trim(on_evict);
        Ok(unpinned)
    }

    /// Evicts every entry of the LRU list (entries neither pinned nor in the
    /// open window). Returns how many were evicted.
    pub fn clear_unpinned(&mut self, mut on_evict: impl FnMut(V)) -> usize {
        let mut evicted = 0;
        while self.evict_lru(&mut on_evict) {
            evicted += 1;
        }
        evicted
    }

    /// The LRU list's keys from head to tail: the next evicted last, but
    /// for second chances (tests only).
    #[cfg(test)]
    pub(crate) fn lru_keys(&self) -> Vec<Vec<u64>> {
        let mut out = Vec::new();
        let mut cur = self.slab.head();
        while let Some(idx) = cur {
            out.push(self.slab.node(idx).key.as_slice().to_vec());
            cur = self.slab.next_of(idx);
        }
        out
    }
}

/// Whether two keys hold the same words: compared in line, word by word
/// (keys are a few words; a call to `memcmp` costs more than the loop).
#[inline]
fn same_words(a: &[u64], b: &[u64]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut same = true;
    for (x, y) in a.iter().zip(b) {
        same &= x == y;
    }
    same
}
