//! How much the info cache keeps in its LRU list.

/// Bounds on the entries of the LRU list (entries neither pinned by a live
/// graph nor recorded in an open capture window).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CachePolicy {
    /// Most entries kept; `0` caches nothing outside captures.
    pub max_entries: usize,
    /// Most bytes kept (an entry of `n` words holds `8 * n` bytes).
    pub max_bytes: u64,
}

impl CachePolicy {
    /// A policy of `max_entries` entries and `max_bytes` bytes.
    pub const fn new(max_entries: usize, max_bytes: u64) -> Self {
        Self {
            max_entries,
            max_bytes,
        }
    }

    /// Whether one entry of `bytes` bytes fits the policy on its own.
    pub const fn admits(&self, bytes: u64) -> bool {
        self.max_entries >= 1 && bytes <= self.max_bytes
    }
}

impl Default for CachePolicy {
    /// 4096 entries, 4 MiB: info buffers are a few hundred bytes, so the
    /// entry count is the bound that usually applies.
    fn default() -> Self {
        Self::new(4096, 4 << 20)
    }
}
