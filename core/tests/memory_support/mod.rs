//! A recording storage for the memory tests: page ids, sizes, pending
//! releases, call counts, a capacity and injectable failures.

#![allow(dead_code, unreachable_pub)] // reason: each test file uses a different part

use std::collections::BTreeMap;
use std::fmt;

use streamcore::memory::{MemoryLayout, MemoryPolicy, PoolSpec};
use streamcore::platform::{ErrorKind, PageId, PlatformError, Storage};

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

    pub fn with_capacity(capacity: u64) -> Self {
        Self {
            capacity,
            ..Self::new()
        }
    }

    pub fn held(&self) -> u64 {
        self.live.values().sum::<u64>() + self.pending.iter().map(|p| p.1).sum::<u64>()
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
        let size = self.live.remove(&page.0).expect("dealloc of a live page");
        self.deallocs += 1;
        self.pending.push((page.0, size));
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
