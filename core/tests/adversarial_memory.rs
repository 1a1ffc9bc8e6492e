//! The memory manager under adversarial use: regressions of what an audit
//! of its public API found, and a property test with deterministic seeds
//! that drives it with random sequences — sizes of 0, 1, huge and past
//! every bound, stale handles, double frees, unpins of what no graph pins,
//! capture calls in the wrong state, layout swaps, persistent windows,
//! frees in stream order with a progress that lies — over storages with
//! odd alignments and terms (granules of one byte, of 2^62 bytes,
//! reservations of one granule) whose every call may fail. It checks that
//! nothing panics, the books add up after every step, and once everything
//! is freed, nothing is left with the storage (no leak on any error path).

mod memory_support;

use std::collections::BTreeMap;
use std::num::NonZeroU64;

// `Refused`: a storage call refused (the shared test storage's error).
use memory_support::{MIB, TestError as Refused, TestStorage, default_layout};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use streamcore::memory::{
    ChurnBudget, Favour, MAX_ALIGNMENT, MAX_PAGE_SIZE, MAX_REQUEST, MemoryLayout, MemoryManager,
    MemoryPolicy, PoolSpec, SliceHandle, StrandGuard,
};
use streamcore::platform::{
    CallCost, DeviceProperties, ErrorKind, PageId, ResizableTerms, Storage, StorageTerms,
};

/// A storage that keeps O(1) books per call, checks the calls the contract
/// forbids (it panics: a test failure), and refuses calls at random.
#[derive(Debug)]
struct Hostile {
    alignment: u64,
    resizable: Option<(u64, u64)>,
    costs: bool,
    /// Percent of calls refused (half out of memory, half other errors).
    fail_percent: u64,
    rng: u64,
    /// Bytes it may hold at once.
    capacity: u64,
    next: u64,
    /// Pages and reservations by id (a reservation counts 0 bytes).
    pages: BTreeMap<u64, (u64, bool)>,
    /// Committed chunks by (reservation, offset).
    chunks: BTreeMap<(u64, u64), u64>,
    held: u64,
    commits: u64,
    decommits: u64,
}

impl Hostile {
    fn new(alignment: u64, resizable: Option<(u64, u64)>, seed: u64) -> Self {
        Self {
            alignment,
            resizable,
            costs: false,
            fail_percent: 0,
            rng: seed | 1,
            capacity: u64::MAX,
            next: 0,
            pages: BTreeMap::new(),
            chunks: BTreeMap::new(),
            held: 0,
            commits: 0,
            decommits: 0,
        }
    }

    fn refuse(&mut self) -> Result<(), Refused> {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        if self.rng % 100 >= self.fail_percent {
            return Ok(());
        }
        Err(Refused(if self.rng & 256 == 0 {
            ErrorKind::OutOfMemory
        } else {
            ErrorKind::Other
        }))
    }

    fn take(&mut self, bytes: u64) -> Result<(), Refused> {
        match self.held.checked_add(bytes) {
            Some(h) if h <= self.capacity => {
                self.held = h;
                Ok(())
            }
            _ => Err(Refused(ErrorKind::OutOfMemory)),
        }
    }
}

impl Storage for Hostile {
    type Error = Refused;

    fn alignment(&self) -> u64 {
        self.alignment
    }

    fn alloc(&mut self, size: u64) -> Result<PageId, Refused> {
        self.refuse()?;
        self.take(size)?;
        self.next += 1;
        self.pages.insert(self.next, (size, false));
        Ok(PageId(self.next))
    }

    fn dealloc(&mut self, page: PageId) {
        let (size, reservation) = self.pages.remove(&page.0).expect("dealloc of a live page");
        if reservation {
            assert!(
                self.chunks
                    .range((page.0, 0)..=(page.0, u64::MAX))
                    .next()
                    .is_none(),
                "dealloc of a reservation with chunks committed"
            );
        }
        self.held -= size;
    }

    fn flush(&mut self) -> Result<(), Refused> {
        self.refuse()
    }

    fn terms(&self) -> StorageTerms {
        let mut t = StorageTerms::plain(self.alignment);
        if let Some((g, max)) = self.resizable {
            t.resizable = Some(ResizableTerms::new(g, max));
        }
        if self.costs {
            t.costs.commit = CallCost::new(10_000, 100);
            t.costs.decommit = CallCost::new(10_000, 100);
        }
        t
    }

    fn reserve(&mut self, size: u64) -> Result<PageId, Refused> {
        let (g, max) = self.resizable.expect("reserve without resizable pages");
        assert!(
            size > 0 && size % g == 0 && size <= max,
            "reserve of {size}"
        );
        self.refuse()?;
        self.next += 1;
        self.pages.insert(self.next, (0, true));
        Ok(PageId(self.next))
    }

    fn commit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), Refused> {
        let (g, _) = self.resizable.expect("commit without resizable pages");
        assert!(
            len > 0 && offset % g == 0 && len % g == 0,
            "commit {offset}+{len} off granules"
        );
        assert!(
            self.pages.get(&page.0).is_some_and(|p| p.1),
            "commit in no reservation"
        );
        self.refuse()?;
        self.take(len)?;
        assert!(
            self.chunks.insert((page.0, offset), len).is_none(),
            "commit over a committed chunk"
        );
        self.commits += 1;
        Ok(())
    }

    fn decommit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), Refused> {
        self.refuse()?;
        assert_eq!(
            self.chunks.remove(&(page.0, offset)),
            Some(len),
            "decommit of no commit"
        );
        self.held -= len;
        self.decommits += 1;
        Ok(())
    }
}

// ----- regressions -----

/// A storage may declare resizable pages in granules of one byte: the
/// manager carved and committed in those granules, so a chunk map held four
/// bytes of host memory per byte of device memory, walks took one step per
/// byte, and a 1 MiB request cost 16384 commits of 64 bytes (a request of a
/// few GiB hung for minutes, allocating GiBs of map). Granules below 4 KiB
/// are now carved in 4 KiB, whole multiples of the storage's granule.
#[test]
fn a_storage_of_one_byte_granules_is_committed_in_whole_pages() {
    let mut m = MemoryManager::new(TestStorage::resizable(1, 1 << 40), default_layout());
    assert!(m.carves_pages());
    assert_eq!(m.terms().resizable.map(|r| r.granularity), Some(1));
    let (a, _) = m.reserve(MIB).unwrap();
    let (b, _) = m.reserve(100).unwrap();
    assert!(m.commits() <= 8, "{} commits for 1 MiB", m.commits());
    for (size, chunks) in m.storage().ranges.values() {
        assert_eq!(size % 4096, 0, "a reservation of {size} bytes");
        for (offset, len) in chunks {
            assert!(
                offset % 4096 == 0 && len % 4096 == 0,
                "a chunk at {offset}+{len}"
            );
        }
    }
    m.free(a).unwrap();
    m.free(b).unwrap();
    m.cleanup().unwrap();
    m.close().unwrap();
    assert_eq!(m.storage().held(), 0);
}

/// A storage may declare granules of 2^61 bytes (and a manager accept a
/// reservation of two, within `MAX_HELD`): the adaptive strand guard's
/// floor of eight granules overflowed (`granule * 8`), a panic in a debug
/// build on the first commit that passed the trim limit.
#[test]
fn a_storage_of_huge_granules_is_counted_without_overflow() {
    let storage = Hostile::new(256, Some((1 << 61, 1 << 62)), 1);
    let mut m = MemoryManager::new(storage, default_layout());
    assert!(m.carves_pages());
    let (a, _) = m.reserve(1000).unwrap();
    let (b, _) = m.reserve(MIB).unwrap();
    assert_eq!(m.held_bytes(), 1 << 61);
    assert!(m.stranded_bytes() < 1 << 61);
    m.free(a).unwrap();
    m.free(b).unwrap();
    m.cleanup().unwrap();
    assert_eq!((m.held_bytes(), m.address_space()), (0, 0));
    assert_eq!(m.storage().held, 0);
}

/// A large page committed in many pieces (one granule each) went back in
/// `O(pieces^2)`: each decommit listed every chunk of the page's map to see
/// whether the reservation was empty. 2^16 pieces took about a minute in a
/// debug build; now the check is O(1) (`ChunkTable::is_bare`, unit-tested
/// against the chunk list) and the round trip takes a fraction of a second.
/// No clock here: the test asserts that every piece goes back and nothing is
/// left, and a quadratic give-back shows as a test run that stalls.
#[test]
fn a_large_page_of_many_pieces_goes_back_whole() {
    const GRANULE: u64 = 4096;
    const PIECES: u64 = 1 << 16;
    let policy = MemoryPolicy {
        commit_piece_granules: 1,
        large_page_granules: 1,
        ..MemoryPolicy::default()
    };
    let layout = default_layout().with_policy(policy).unwrap();
    let storage = Hostile::new(256, Some((GRANULE, 1 << 40)), 1);
    let mut m = MemoryManager::new(storage, layout);
    let (h, _) = m.reserve(PIECES * GRANULE).unwrap();
    assert!(m.storage().commits >= PIECES);
    m.free(h).unwrap();
    m.cleanup().unwrap();
    assert_eq!(m.storage().decommits, m.storage().commits);
    assert_eq!((m.storage().held, m.address_space()), (0, 0));
}

// ----- the property test -----

#[derive(Clone, Debug)]
enum Op {
    Reserve(u64),
    /// Reserve in stream order; the progress waits (0), cannot (1), or
    /// answers less than it was asked to wait for (2).
    ReserveOrdered(u64, u8),
    /// Free the n-th handle ever seen (live, freed or stale alike).
    Free(usize),
    FreeOrdered(usize, u64),
    Unpin(usize),
    SetCursor(usize, u64),
    Complete(u64),
    Cleanup,
    Install(u8),
    Prepare,
    Begin,
    End,
    Abort,
    Persistent(bool),
    HoldFlushes(bool),
    Close,
    /// Sets the percent of storage calls refused.
    Faults(u8),
}

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1u64..5000,
        3 => 5000u64..(4 << 20),
        1 => Just(0u64),
        1 => Just(MAX_REQUEST),
        1 => Just(MAX_REQUEST + 1),
        1 => Just(u64::MAX),
        1 => Just(1 << 40),
        1 => Just((1 << 32) + 1),
        1 => (0u32..64).prop_map(|s| 1u64 << s),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => size().prop_map(Op::Reserve),
        3 => (size(), 0u8..3).prop_map(|(s, w)| Op::ReserveOrdered(s, w)),
        7 => any::<usize>().prop_map(Op::Free),
        3 => (any::<usize>(), 0u64..64).prop_map(|(i, c)| Op::FreeOrdered(i, c)),
        2 => any::<usize>().prop_map(Op::Unpin),
        1 => (any::<usize>(), any::<u64>()).prop_map(|(i, c)| Op::SetCursor(i, c)),
        2 => (0u64..64).prop_map(Op::Complete),
        1 => Just(Op::Cleanup),
        1 => any::<u8>().prop_map(Op::Install),
        1 => Just(Op::Prepare),
        1 => Just(Op::Begin),
        1 => Just(Op::End),
        1 => Just(Op::Abort),
        1 => any::<bool>().prop_map(Op::Persistent),
        1 => any::<bool>().prop_map(Op::HoldFlushes),
        1 => Just(Op::Close),
        1 => prop_oneof![Just(0u8), Just(5), Just(40)].prop_map(Op::Faults),
    ]
}

fn policy(i: u8) -> MemoryPolicy {
    let d = MemoryPolicy::default();
    match i % 6 {
        0 => d,
        1 => MemoryPolicy::favouring(Favour::Bytes),
        2 => MemoryPolicy::favouring(Favour::Time),
        3 => MemoryPolicy {
            trim_before_grow: false,
            release_idle_after: NonZeroU64::new(1),
            fit_slack_shift: 64,
            page_rounding_shift: 0,
            ..d
        },
        4 => MemoryPolicy {
            large_page_granules: 0,
            commit_piece_granules: 1,
            commit_step_shift: 0,
            trim_headroom_shift: 0,
            force_persistent: true,
            ..d
        },
        _ => MemoryPolicy {
            strand_guard: StrandGuard::On,
            churn_budget: ChurnBudget::NONE,
            split_boundaries: true,
            max_pages: 3,
            large_page_granules: u32::MAX,
            commit_step_shift: 200,
            page_rounding_shift: 200,
            ..d
        },
    }
}

fn layout(i: u8) -> MemoryLayout {
    let p = policy(i / 8);
    let props = DeviceProperties {
        total_memory: 1 << 16,
        max_page_size: 1 << 30,
        alignment: 4096,
        integrated: true,
    };
    let layout = match i % 6 {
        0 => MemoryLayout::new(
            &[
                PoolSpec::small(64 << 10, 1024),
                PoolSpec::sliced(1 << 20, 64 << 10),
                PoolSpec::exclusive(16 << 20),
            ],
            256,
            p,
        ),
        1 => MemoryLayout::new(&[PoolSpec::sliced(MAX_PAGE_SIZE, MAX_PAGE_SIZE)], 1, p),
        2 => MemoryLayout::new(&[PoolSpec::exclusive(MAX_PAGE_SIZE)], MAX_ALIGNMENT, p),
        3 => MemoryLayout::new(
            &[
                PoolSpec::small(1, 1),
                PoolSpec::sliced(3, 2),
                PoolSpec::exclusive(1000).with_cap(1000),
            ],
            1,
            p,
        ),
        4 => MemoryLayout::new(
            &[PoolSpec::sliced(1 << 20, 1 << 20).with_cap(1 << 20)],
            4096,
            p,
        ),
        _ => MemoryLayout::for_device(&props).with_policy(p),
    };
    layout.expect("a valid layout")
}

fn storage(kind: u8, seed: u64) -> Hostile {
    let (alignment, resizable) = match kind % 10 {
        0 => (256, None),
        1 => (0, None),
        2 => (3, None),
        3 => (1 << 31, None),
        4 => (256, Some((2 << 20, 1 << 40))),
        5 => (256, Some((64 << 10, 1 << 26))),
        6 => (1, Some((1, u64::MAX))),
        7 => (256, Some((1 << 62, u64::MAX))),
        8 => (256, Some((1 << 61, 1 << 62))),
        _ => (4096, Some((4096, 4096))),
    };
    let mut s = Hostile::new(alignment, resizable, seed);
    s.costs = kind & 16 != 0;
    // Bounded, so a request the manager accepts is refused by the storage
    // before it commits piece after piece of it; or a storage that never
    // refuses (the manager's own bounds are all there is).
    s.capacity = match (kind & 32 != 0, resizable) {
        (true, _) => 64 << 20,
        // Granules of 2^61 bytes: a commit is one call whatever it holds.
        (false, Some((g, _))) if g >= 1 << 40 => u64::MAX,
        (false, Some(_)) => 1 << 30,
        (false, None) => u64::MAX,
    };
    s
}

fn run(kind: u8, first: u8, seed: u64, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut m = MemoryManager::new(storage(kind, seed), layout(first));
    // Every handle ever handed out, live or not: ops pick among them, so
    // stale handles and double frees come up as often as live ones.
    let mut handles: Vec<SliceHandle> = Vec::new();
    let mut close_failed = false;
    let pick = |handles: &[SliceHandle], i: usize| handles.get(i % handles.len().max(1)).copied();
    for op in ops {
        match op {
            Op::Reserve(size) => {
                if let Ok((h, r)) = m.reserve(size) {
                    prop_assert_eq!(r.len, size);
                    prop_assert_eq!(m.range(h).ok(), Some(r));
                    handles.push(h);
                }
            }
            Op::ReserveOrdered(size, how) => {
                let mut progress = |c: u64| match how {
                    0 => Some(c),
                    1 => None,
                    _ => Some(c.saturating_sub(3)),
                };
                if let Ok((h, _)) = m.reserve_ordered(size, &mut progress) {
                    handles.push(h);
                }
            }
            Op::Free(i) => {
                if let Some(h) = pick(&handles, i) {
                    let _ = m.free(h);
                }
            }
            Op::FreeOrdered(i, c) => {
                if let Some(h) = pick(&handles, i) {
                    let _ = m.free_ordered(h, c);
                }
            }
            Op::Unpin(i) => {
                if let Some(h) = pick(&handles, i) {
                    let _ = m.unpin(h);
                }
            }
            Op::SetCursor(i, c) => {
                if let Some(h) = pick(&handles, i) {
                    if m.set_cursor(h, c).is_ok() {
                        prop_assert_eq!(m.cursor(h).ok(), Some(c));
                    }
                }
            }
            Op::Complete(c) => m.complete(c),
            Op::Cleanup => {
                let _ = m.cleanup();
            }
            Op::Install(i) => {
                let _ = m.install(layout(i));
            }
            Op::Prepare => {
                let _ = m.prepare();
            }
            Op::Begin => {
                let _ = m.begin_capture();
            }
            Op::End => {
                let _ = m.end_capture(|c| handles.push(c.handle));
            }
            Op::Abort => {
                let _ = m.abort_capture();
            }
            Op::Persistent(true) => m.begin_persistent(),
            Op::Persistent(false) => {
                let _ = m.end_persistent();
            }
            Op::HoldFlushes(hold) => {
                let _ = m.hold_flushes(hold);
            }
            Op::Close => close_failed |= m.close().is_err(),
            Op::Faults(p) => m.storage_mut().fail_percent = u64::from(p),
        }
        let report = m.report();
        let _ = report.to_string();
        let _ = (m.stranded_bytes(), m.idle_committed_bytes(), m.awaiting());
        let t = report.total();
        prop_assert!(t.idle_pages <= t.pages && t.in_use <= t.reserved);
        if !m.carves_pages() {
            prop_assert!(t.in_use + t.padding + t.idle_bytes <= t.reserved);
        }
    }
    // Everything back: no error path may have lost a page or a chunk.
    m.storage_mut().fail_percent = 0;
    let _ = m.abort_capture();
    let _ = m.end_capture(|c| handles.push(c.handle));
    for &h in &handles {
        let _ = m.free(h);
    }
    for &h in &handles {
        while m.unpin(h).is_ok() {}
    }
    while m.end_persistent().is_ok() {}
    m.complete(u64::MAX);
    m.hold_flushes(false)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    m.cleanup()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let t = m.report().total();
    prop_assert_eq!((t.slices, t.in_use), (0, 0));
    prop_assert_eq!(t.pages, 0, "pages left after cleanup: {}", m.report());
    for &h in &handles {
        prop_assert!(m.range(h).is_err(), "{} still live", h);
    }
    m.close().map_err(|e| TestCaseError::fail(e.to_string()))?;
    if !close_failed {
        // A close that failed leaves what it could not give back with the
        // storage, as documented.
        prop_assert_eq!(m.storage().held, 0);
        prop_assert!(m.storage().pages.is_empty() && m.storage().chunks.is_empty());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        rng_seed: RngSeed::Fixed(0x5eed_a0d1),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn adversarial_sequences_never_panic_and_leak_nothing(
        kind in any::<u8>(),
        first in any::<u8>(),
        seed in any::<u64>(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        run(kind, first, seed, ops)?;
    }
}
