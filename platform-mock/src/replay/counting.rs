//! A storage that counts bytes without touching real memory, and the
//! accounting several storages (one per stream) can share.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::vec::Vec;

use streamcore::hash::FxHashMap;
use streamcore::platform::{ErrorKind, PageId, PlatformError, Storage};

#[derive(Debug, Default)]
struct Counters {
    held: AtomicU64,
    peak_held: AtomicU64,
    allocs: AtomicU64,
    deallocs: AtomicU64,
    flushes: AtomicU64,
    capacity: AtomicU64,
    unreleased: AtomicU64,
    peak_unreleased: AtomicU64,
}

/// Byte accounting shared by every storage of one replay: bytes held (a
/// page released counts until its storage's flush), the peak of that sum,
/// and call counts. Cheap to clone (a shared handle); `Send + Sync`.
#[derive(Clone, Debug, Default)]
pub struct Accounting(Arc<Counters>);

/// A snapshot of an [`Accounting`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct StorageStats {
    /// Bytes held now.
    pub held: u64,
    /// The most bytes held at once.
    pub peak_held: u64,
    /// Allocation calls that succeeded.
    pub allocs: u64,
    /// Deallocation calls.
    pub deallocs: u64,
    /// Flush calls.
    pub flushes: u64,
    /// A diagnostic: the most bytes held at once counting a page only until
    /// its dealloc (as if every dealloc were flushed at once).
    pub peak_unreleased: u64,
}

impl Accounting {
    /// Fresh accounting with no capacity limit.
    pub fn new() -> Self {
        let a = Self::default();
        a.0.capacity.store(u64::MAX, Ordering::Relaxed);
        a
    }

    /// Fresh accounting whose storages fail with out-of-memory once `bytes`
    /// would be held.
    pub fn with_capacity(bytes: u64) -> Self {
        let a = Self::default();
        a.0.capacity.store(bytes, Ordering::Relaxed);
        a
    }

    /// Records an allocation; `false` (nothing recorded) past the capacity.
    pub fn try_alloc(&self, bytes: u64) -> bool {
        let held = self.0.held.load(Ordering::Relaxed);
        let Some(next) = held.checked_add(bytes) else {
            return false;
        };
        if next > self.0.capacity.load(Ordering::Relaxed) {
            return false;
        }
        self.0.held.store(next, Ordering::Relaxed);
        self.0.peak_held.fetch_max(next, Ordering::Relaxed);
        let unreleased = self.0.unreleased.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.0
            .peak_unreleased
            .fetch_max(unreleased, Ordering::Relaxed);
        self.0.allocs.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Records a deallocation of `bytes` (they stay held until a flush).
    pub fn dealloc(&self, bytes: u64) {
        self.0.deallocs.fetch_add(1, Ordering::Relaxed);
        self.0.unreleased.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Records a flush that let go of `bytes`.
    pub fn flush(&self, bytes: u64) {
        self.0.held.fetch_sub(bytes, Ordering::Relaxed);
        self.0.flushes.fetch_add(1, Ordering::Relaxed);
    }

    /// Bytes held now.
    pub fn held(&self) -> u64 {
        self.0.held.load(Ordering::Relaxed)
    }

    /// A snapshot.
    pub fn stats(&self) -> StorageStats {
        StorageStats {
            held: self.0.held.load(Ordering::Relaxed),
            peak_held: self.0.peak_held.load(Ordering::Relaxed),
            allocs: self.0.allocs.load(Ordering::Relaxed),
            deallocs: self.0.deallocs.load(Ordering::Relaxed),
            flushes: self.0.flushes.load(Ordering::Relaxed),
            peak_unreleased: self.0.peak_unreleased.load(Ordering::Relaxed),
        }
    }
}

/// The error of a [`CountingStorage`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CountingError {
    /// The kind ([`ErrorKind::OutOfMemory`] when the capacity is reached).
    pub kind: ErrorKind,
    /// The bytes asked for.
    pub requested: u64,
}

impl fmt::Display for CountingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} allocating {} bytes", self.kind, self.requested)
    }
}

impl std::error::Error for CountingError {}

impl PlatformError for CountingError {
    fn kind(&self) -> ErrorKind {
        self.kind
    }
}

/// A [`Storage`] that hands out page ids and counts bytes, holding no memory.
#[derive(Debug)]
pub struct CountingStorage {
    accounting: Accounting,
    alignment: u64,
    next_id: u64,
    live: FxHashMap<u64, u64>,
    pending: Vec<u64>,
}

impl CountingStorage {
    /// A storage reporting into `accounting`, pages aligned to `alignment`
    /// (a power of two).
    pub fn new(accounting: Accounting, alignment: u64) -> Self {
        Self {
            accounting,
            alignment,
            next_id: 1,
            live: FxHashMap::default(),
            pending: Vec::new(),
        }
    }

    /// The shared accounting.
    pub fn accounting(&self) -> &Accounting {
        &self.accounting
    }

    /// Live pages of this storage (not counting released ones).
    pub fn live_pages(&self) -> usize {
        self.live.len()
    }

    /// The size of a live page.
    pub fn page_size(&self, page: PageId) -> Option<u64> {
        self.live.get(&page.0).copied()
    }
}

impl Storage for CountingStorage {
    type Error = CountingError;

    fn alignment(&self) -> u64 {
        self.alignment
    }

    fn alloc(&mut self, size: u64) -> Result<PageId, CountingError> {
        if !self.accounting.try_alloc(size) {
            return Err(CountingError {
                kind: ErrorKind::OutOfMemory,
                requested: size,
            });
        }
        let id = self.next_id;
        self.next_id += 1;
        self.live.insert(id, size);
        Ok(PageId(id))
    }

    /// # Panics
    /// On a page that is not live (a broken contract of the caller).
    fn dealloc(&mut self, page: PageId) {
        let size = self
            .live
            .remove(&page.0)
            .expect("dealloc of a page that is not live");
        self.accounting.dealloc(size);
        self.pending.push(size);
    }

    fn flush(&mut self) -> Result<(), CountingError> {
        let bytes: u64 = self.pending.drain(..).sum();
        self.accounting.flush(bytes);
        Ok(())
    }
}
