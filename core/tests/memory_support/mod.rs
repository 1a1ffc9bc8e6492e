//! A recording storage for the memory tests: page ids, sizes, pending
//! releases, call counts, a capacity and injectable failures.

#![allow(dead_code, unreachable_pub)] // reason: each test file uses a different part

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use streamcore::memory::{MemoryLayout, MemoryPolicy, PoolSpec};
use streamcore::platform::{
    ErrorKind, PageId, PlatformError, ResizableTerms, Storage, StorageTerms,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestError(pub ErrorKind);

impl fmt::Display for TestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "test storage: {:?}", self.0)
    }
}

impl PlatformError for TestError {
    fn kind(&self) -> ErrorKind {
        self.0
    }
}

#[derive(Debug, Default)]
pub struct TestStorage {
    pub alignment: u64,
    /// Bytes the storage may hold at once (live + pending).
    pub capacity: u64,
    pub live: BTreeMap<u64, u64>,
    pub pending: Vec<(u64, u64)>,
    pub next_id: u64,
    pub alloc_calls: u64,
    pub allocs: u64,
    pub deallocs: u64,
    pub flushes: u64,
    pub peak_held: u64,
    /// The next `alloc` fails with this kind.
    pub fail_next: Option<ErrorKind>,
    /// `flush` fails with this kind.
    pub fail_flush: Option<ErrorKind>,
    /// Resizable pages: (granularity, largest reservation).
    pub resizable: Option<(u64, u64)>,
    /// Reservations: id → (size, committed chunks offset → length).
    pub ranges: BTreeMap<u64, (u64, BTreeMap<u64, u64>)>,
    pub reserve_calls: u64,
    pub commit_calls: u64,
    pub decommit_calls: u64,
    /// The next `decommit` fails with this kind.
    pub fail_decommit: Option<ErrorKind>,
    /// The stream's queued work, when the test frees in stream order: a
    /// decommit of bytes it still touches panics.
    pub queue: Option<Rc<RefCell<QueuedWork>>>,
}

/// Work queued on a manager's stream, as a test models it: byte ranges of
/// slices freed in stream order and the cursor of their last use, and how
/// far the stream got.
#[derive(Debug, Default)]
pub struct QueuedWork {
    /// (reservation or page id, offset, length, cursor).
    pub touches: Vec<(u64, u64, u64, u64)>,
    /// The stream completed every command up to this cursor.
    pub completed: u64,
}

impl QueuedWork {
    /// The stream got to `cursor`: touches up to it are done.
    pub fn complete(&mut self, cursor: u64) {
        self.completed = self.completed.max(cursor);
        let done = self.completed;
        self.touches.retain(|t| t.3 > done);
    }

    /// A touch of `offset..offset + len` of `id` still queued, if any.
    pub fn touching(&self, id: u64, offset: u64, len: u64) -> Option<(u64, u64, u64, u64)> {
        self.touches
            .iter()
            .copied()
            .find(|t| t.3 > self.completed && t.0 == id && t.1 < offset + len && offset < t.1 + t.2)
    }
}

impl TestStorage {
    pub fn new() -> Self {
        Self {
            alignment: 256,
            capacity: u64::MAX,
            next_id: 1,
            ..Self::default()
        }
    }

    /// A storage with resizable pages of `granule`-byte chunks in
    /// reservations of at most `max_reservation` bytes.
    pub fn resizable(granule: u64, max_reservation: u64) -> Self {
        Self {
            resizable: Some((granule, max_reservation)),
            ..Self::new()
        }
    }

    /// Bytes committed in reservations.
    pub fn committed(&self) -> u64 {
        self.ranges.values().flat_map(|(_, c)| c.values()).sum()
    }

    /// Whether `offset..offset + len` of reservation `id` is wholly
    /// committed.
    pub fn is_committed(&self, id: u64, offset: u64, len: u64) -> bool {
        let Some((_, chunks)) = self.ranges.get(&id) else {
            return false;
        };
        let mut at = offset;
        let end = offset + len;
        while at < end {
            match chunks.range(..=at).next_back() {
                Some((&o, &l)) if o + l > at => at = o + l,
                _ => return false,
            }
        }
        true
    }

    pub fn with_capacity(capacity: u64) -> Self {
        Self {
            capacity,
            ..Self::new()
        }
    }

    pub fn held(&self) -> u64 {
        self.live.values().sum::<u64>()
            + self.pending.iter().map(|p| p.1).sum::<u64>()
            + self.committed()
    }

    pub fn live_bytes(&self) -> u64 {
        self.live.values().sum()
    }

    pub fn pending_bytes(&self) -> u64 {
        self.pending.iter().map(|p| p.1).sum()
    }
}

impl Storage for TestStorage {
    type Error = TestError;

    fn alignment(&self) -> u64 {
        self.alignment
    }

    fn alloc(&mut self, size: u64) -> Result<PageId, TestError> {
        self.alloc_calls += 1;
        if let Some(kind) = self.fail_next.take() {
            return Err(TestError(kind));
        }
        if self.held() + size > self.capacity {
            return Err(TestError(ErrorKind::OutOfMemory));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.live.insert(id, size);
        self.allocs += 1;
        self.peak_held = self.peak_held.max(self.held());
        Ok(PageId(id))
    }

    fn dealloc(&mut self, page: PageId) {
        if let Some((_, chunks)) = self.ranges.remove(&page.0) {
            assert!(chunks.is_empty(), "dealloc of a reservation with chunks");
            self.deallocs += 1;
            self.pending.push((page.0, 0));
            return;
        }
        let size = self.live.remove(&page.0).expect("dealloc of a live page");
        self.deallocs += 1;
        self.pending.push((page.0, size));
    }

    fn terms(&self) -> StorageTerms {
        let mut t = StorageTerms::plain(self.alignment);
        if let Some((g, max)) = self.resizable {
            t.resizable = Some(ResizableTerms::new(g, max));
        }
        t
    }

    /// # Panics
    /// On a call the contract forbids (a test failure).
    fn reserve(&mut self, size: u64) -> Result<PageId, TestError> {
        let (g, max) = self
            .resizable
            .expect("reserve on a storage without resizable pages");
        assert!(
            size % g == 0 && size > 0 && size <= max,
            "reserve of {size}"
        );
        self.reserve_calls += 1;
        let id = self.next_id;
        self.next_id += 1;
        self.ranges.insert(id, (size, BTreeMap::new()));
        Ok(PageId(id))
    }

    /// # Panics
    /// On a call the contract forbids (a test failure).
    fn commit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), TestError> {
        let (g, _) = self
            .resizable
            .expect("commit on a storage without resizable pages");
        self.commit_calls += 1;
        if let Some(kind) = self.fail_next.take() {
            return Err(TestError(kind));
        }
        if self.held() + len > self.capacity {
            return Err(TestError(ErrorKind::OutOfMemory));
        }
        let (size, chunks) = self
            .ranges
            .get_mut(&page.0)
            .expect("commit in a live reservation");
        assert!(
            offset % g == 0 && len % g == 0 && len > 0,
            "commit {offset}+{len} off granules"
        );
        assert!(offset + len <= *size, "commit past the reservation");
        for (&o, &l) in chunks.iter() {
            assert!(
                o + l <= offset || offset + len <= o,
                "commit over a committed chunk"
            );
        }
        chunks.insert(offset, len);
        self.peak_held = self.peak_held.max(self.held());
        Ok(())
    }

    /// # Panics
    /// On a call the contract forbids (a test failure).
    fn decommit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), TestError> {
        self.decommit_calls += 1;
        if let Some(kind) = self.fail_decommit.take() {
            return Err(TestError(kind));
        }
        if let Some(q) = &self.queue {
            let q = q.borrow();
            if let Some(t) = q.touching(page.0, offset, len) {
                panic!(
                    "decommit of {offset}+{len} in {} while queued work (cursor {} > completed {}) touches {}+{}",
                    page.0, t.3, q.completed, t.1, t.2
                );
            }
        }
        let (_, chunks) = self
            .ranges
            .get_mut(&page.0)
            .expect("decommit in a live reservation");
        assert_eq!(
            chunks.remove(&offset),
            Some(len),
            "decommit of no earlier commit"
        );
        Ok(())
    }

    fn flush(&mut self) -> Result<(), TestError> {
        if let Some(kind) = self.fail_flush {
            return Err(TestError(kind));
        }
        self.flushes += 1;
        self.pending.clear();
        Ok(())
    }
}

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;

/// Small ≤ 1 KiB in 64 KiB pages, sliced ≤ 64 KiB in 1 MiB pages,
/// exclusive up to 16 MiB, dedicated beyond.
pub fn layout(policy: MemoryPolicy) -> MemoryLayout {
    MemoryLayout::new(
        &[
            PoolSpec::small(64 * KIB, KIB),
            PoolSpec::sliced(MIB, 64 * KIB),
            PoolSpec::exclusive(16 * MIB),
        ],
        256,
        policy,
    )
    .expect("valid layout")
}

pub fn default_layout() -> MemoryLayout {
    layout(MemoryPolicy::default())
}
