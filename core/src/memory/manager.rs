//! The memory manager of one stream: its state, handles and reports. The
//! reserve path lives in `reserve.rs`, the free path in `free.rs`, frees in
//! stream order in `progress.rs`, growing in `grow.rs`, giving back in
//! `release.rs`, capture priming in `priming.rs`.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::error::MemoryError;
use super::handle::{AllocationMode, SliceHandle};
use super::layout::{LayoutError, MAX_ALIGNMENT, MemoryLayout, PoolKind};
use super::pages::PageTable;
use super::pool::Pool;
use super::report::MemoryReport;
use super::rounding::round_up;
use super::segment::Segment;
use super::slots::{self, SliceTable, Slot};
use crate::platform::{DeviceRange, ResizableTerms, Storage, StorageTerms};
use crate::stream::capture::{CaptureState, Phase};

/// The largest request a manager accepts (larger ones are refused as
/// [`MemoryError::InvalidSize`] before any rounding could overflow).
pub const MAX_REQUEST: u64 = 1 << 56;

/// The most bytes a manager holds from its storage at once (pages,
/// committed chunks and what waits for a flush; its address reservations
/// likewise): far past any device, it keeps every sum in the books within
/// `u64` over a storage that never refuses. A request past it is refused
/// as out of memory ([`OomCause::HeldLimit`](super::OomCause::HeldLimit)).
pub const MAX_HELD: u64 = 1 << 62;

/// The smallest granule pages are carved in over a storage with resizable
/// pages: a storage declaring a finer granularity (down to one byte) is
/// committed in whole multiples of this, so a chunk map holds at most four
/// bytes of host memory per 4 KiB of device memory committed and a walk
/// over granules costs at most one step per 4 KiB.
pub(super) const MIN_GRANULE: u64 = 4 << 10;

/// Pages released by a cleanup.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Released {
    /// Pages handed back to the storage.
    pub pages: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Byte and call counts of a manager.
#[derive(Clone, Debug, Default)]
pub(super) struct Books {
    /// Bytes the storage charges for what is held: pages of their own
    /// plus chunks committed in reservations.
    pub reserved: u64,
    /// Of those, bytes of chunks committed in reservations.
    pub committed: u64,
    /// Bytes of the pages carved from reservations.
    pub carved: u64,
    /// Bytes handed back to the storage but not yet flushed.
    pub pending: u64,
    /// The most bytes of pages ever held (`page_bytes() + pending`).
    pub high_water: u64,
    /// Bytes requested by live slices, and their peak.
    pub live: u64,
    pub peak_live: u64,
    /// Reserves so far (the manager's clock for idle ages).
    pub reserves: u64,
    /// The reserve count of the next periodic release.
    pub next_periodic: u64,
    /// Storage allocations made so far.
    pub storage_allocs: u64,
    /// Chunks committed and decommitted in place so far.
    pub commits: u64,
    pub decommits: u64,
    /// Frees in stream order: the highest cursor one named, and the
    /// highest cursor the stream is known to have completed.
    pub fence: u64,
    pub completed: u64,
    /// Times a reserve waited for the stream before giving memory back.
    pub waits: u64,
    /// Carving guards against stranded memory (see `guard.rs`).
    pub guarded: bool,
    /// Bytes requested by every reserve so far, and the estimated driver
    /// time spent on decommits made by choice (see `budget.rs`).
    pub requested: u64,
    pub churn_spent: u64,
    /// What trimming did, as the report shows it: the level it keeps no
    /// lower than (raised where the churn budget left a commit over the
    /// trim limit, see `decommit_to_fit`, and by round trips, see
    /// `round_trips.rs`), and the decommits made past the idle cap.
    pub trimming: super::report::Trimming,
    /// Bytes of large pages' idle reservations given back so that other
    /// pages could grow without passing the trim floor, not yet committed
    /// again by a large page: the others' commits do not reach ahead into
    /// that room (it is the large page's when it comes back).
    pub owed_large: u64,
    /// The chunks trimmed last by choice (`round_trips.rs`).
    pub trims: super::round_trips::RoundTrips,
}

impl Books {
    /// Bytes of the pages held (own pages as charged, carved pages by their
    /// size): what trimming measures.
    pub(super) const fn page_bytes(&self) -> u64 {
        self.reserved - self.committed + self.carved
    }
}

/// The memory manager of one stream.
///
/// It carves pages from a [`Storage`] into slices through the pools of a
/// [`MemoryLayout`] and hands out [`SliceHandle`]s. Every operation on the
/// hot path (reserve, free, cursor) is O(1) or O(log n) and, once warm,
/// makes no heap allocation.
///
/// Capture priming: between [`prepare`](Self::prepare) and
/// [`begin_capture`](Self::begin_capture) every slice handed out is retained
/// even after its owner frees it, so the pools grow to the window's whole
/// working set; `begin_capture` gives the retained slices back; inside the
/// capture no storage allocation happens (a reserve that would need one fails
/// with [`MemoryError::AllocationInCapture`]) and no slice freed inside it
/// is reused, whenever it was reserved (the captured work may touch it on
/// every replay); [`end_capture`](Self::end_capture) hands every slice
/// reserved or freed in the capture to the caller, pinned until
/// [`unpin`](Self::unpin).
#[derive(Debug)]
pub struct MemoryManager<S: Storage> {
    pub(super) storage: S,
    pub(super) terms: StorageTerms,
    pub(super) layout: MemoryLayout,
    pub(super) align: u64,
    /// Why the layout cannot serve requests over this storage, if it cannot.
    pub(super) broken: Option<LayoutError>,
    /// Listed pools, then persistent, then dedicated.
    pub(super) pools: Vec<Pool>,
    pub(super) pages: PageTable,
    /// Over a resizable storage: the reservations every page is carved
    /// from, and the chunks committed in them. Boxed: a manager over pages
    /// of their own (a firmware core's storage, `hipMalloc`) holds a word
    /// for it, not the few hundred bytes of its engines and tables.
    pub(super) segment: Option<Box<Segment>>,
    pub(super) slots: SliceTable,
    pub(super) books: Books,
    pub(super) capture: CaptureState,
    /// Slices the open capture window holds.
    pub(super) window: Vec<u32>,
    pub(super) persistent_depth: u64,
    /// Storage flushes and growth are held (see
    /// [`MemoryManager::hold_flushes`]).
    pub(super) flushes_held: bool,
}

impl<S: Storage> MemoryManager<S> {
    /// A manager over `storage` with `layout`. Offsets and pages honour the
    /// larger of the layout's and the storage's alignment. A storage whose
    /// alignment is not a power of two counts as aligned to 1; one aligned
    /// past [`MAX_ALIGNMENT`] makes every reserve fail with
    /// [`MemoryError::Layout`].
    pub fn new(storage: S, layout: MemoryLayout) -> Self {
        let terms = storage.terms();
        let mut m = Self {
            storage,
            terms,
            layout,
            align: 1,
            broken: None,
            pools: Vec::new(),
            pages: PageTable::new(),
            segment: None,
            slots: SliceTable::new(),
            books: Books::default(),
            capture: CaptureState::new(),
            window: Vec::new(),
            persistent_depth: 0,
            flushes_held: false,
        };
        m.build_pools();
        m
    }

    pub(super) fn build_pools(&mut self) {
        let storage_align = self.storage.alignment();
        let storage_align = if storage_align.is_power_of_two() {
            storage_align
        } else {
            1
        };
        self.broken = None;
        if storage_align > MAX_ALIGNMENT {
            self.broken = Some(LayoutError::BadAlignment {
                alignment: storage_align,
            });
        }
        let align = self
            .layout
            .alignment()
            .max(storage_align.min(MAX_ALIGNMENT));
        self.align = align;
        // Pages carved from reservations when the storage offers resizable
        // pages with a granularity that is a power of two and a multiple
        // of the alignment; else pages from `alloc`. The chunk maps cost
        // host memory and walks per granule, so a granularity below
        // `MIN_GRANULE` is carved in granules of `MIN_GRANULE` (whole
        // multiples of the storage's: its terms still hold).
        self.segment = self
            .terms
            .resizable
            .filter(|r| r.granularity.is_power_of_two())
            .map(|r| ResizableTerms {
                granularity: r.granularity.max(MIN_GRANULE),
                ..r
            })
            .filter(|r| r.granularity >= align && r.max_reservation >= r.granularity)
            .map(|r| Box::new(Segment::new(r, align, self.layout.policy())));
        self.pools.clear();
        let add = |pools: &mut Vec<Pool>, kind, page: u64, max_slice, cap| {
            // Layouts bound page sizes by `MAX_REQUEST` and alignments by
            // `MAX_ALIGNMENT`: the rounding cannot fail.
            let page = round_up(page, align).unwrap_or(MAX_REQUEST);
            pools.push(Pool::new(kind, page, max_slice, cap, align));
        };
        for p in self.layout.pools() {
            add(&mut self.pools, p.kind, p.page_size, p.max_slice, p.cap);
        }
        let top = self.layout.pools().last().map_or(0, |p| p.page_size);
        add(
            &mut self.pools,
            PoolKind::Persistent,
            top,
            MAX_REQUEST,
            None,
        );
        add(
            &mut self.pools,
            PoolKind::Dedicated,
            MAX_REQUEST,
            MAX_REQUEST,
            None,
        );
        self.books.next_periodic = self.books.reserves
            + self
                .layout
                .policy()
                .release_idle_after
                .map_or(0, |n| n.get());
    }

    // ----- accessors -----

    /// The storage.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    /// The storage, mutably (allocating or releasing its pages behind the
    /// manager's back breaks the manager's accounting).
    pub fn storage_mut(&mut self) -> &mut S {
        &mut self.storage
    }

    /// The storage's terms, as read when the manager was built.
    pub fn terms(&self) -> &StorageTerms {
        &self.terms
    }

    /// The layout in force.
    pub fn layout(&self) -> &MemoryLayout {
        &self.layout
    }

    /// The alignment of every offset and page.
    pub fn alignment(&self) -> u64 {
        self.align
    }

    /// Bytes the storage holds for this manager: live pages plus pages
    /// released but not yet flushed.
    pub fn held_bytes(&self) -> u64 {
        self.books.reserved + self.books.pending
    }

    /// Storage allocations (`alloc` calls) made so far.
    pub fn storage_allocations(&self) -> u64 {
        self.books.storage_allocs
    }

    /// Chunks committed in place so far (over a resizable storage).
    pub fn commits(&self) -> u64 {
        self.books.commits
    }

    /// Chunks decommitted in place so far (over a resizable storage).
    pub fn decommits(&self) -> u64 {
        self.books.decommits
    }

    /// Whether pages are carved from reservations (the storage offers
    /// resizable pages) rather than allocated one by one.
    pub fn carves_pages(&self) -> bool {
        self.segment.is_some()
    }

    /// The capture phase the manager is in.
    pub fn phase(&self) -> Phase {
        self.capture.phase()
    }

    /// The allocation mode in force.
    pub fn mode(&self) -> AllocationMode {
        if self.layout.policy().force_persistent || self.persistent_depth > 0 {
            AllocationMode::Persistent
        } else {
            AllocationMode::Auto
        }
    }

    // ----- handles -----

    pub(super) fn slot(&self, h: SliceHandle) -> Result<&Slot, MemoryError<S::Error>> {
        self.slots
            .get(slots::key(h))
            .ok_or_else(|| MemoryError::StaleHandle(h))
    }

    /// The bytes of a live slice.
    pub fn range(&self, h: SliceHandle) -> Result<DeviceRange, MemoryError<S::Error>> {
        Ok(self.slot(h)?.range)
    }

    /// Records the stream cursor at which the slice was last bound.
    pub fn set_cursor(&mut self, h: SliceHandle, cursor: u64) -> Result<(), MemoryError<S::Error>> {
        match self.slots.get_mut(slots::key(h)) {
            Some(s) => {
                s.cursor = cursor;
                Ok(())
            }
            None => Err(MemoryError::StaleHandle(h)),
        }
    }

    /// The stream cursor at which the slice was last bound (0 when never).
    pub fn cursor(&self, h: SliceHandle) -> Result<u64, MemoryError<S::Error>> {
        Ok(self.slot(h)?.cursor)
    }

    // ----- reports -----

    /// The figures of every pool.
    pub fn report(&self) -> MemoryReport {
        MemoryReport {
            pools: self.pools.iter().map(|p| p.stats).collect(),
            pending_release: self.books.pending,
            trimming: self.books.trimming,
        }
    }

    pub(super) fn oom(
        &self,
        requested: u64,
        cause: super::error::OomCause<S::Error>,
    ) -> MemoryError<S::Error> {
        MemoryError::OutOfMemory {
            requested,
            cause,
            report: Box::new(self.report()),
        }
    }
}
