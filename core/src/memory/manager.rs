//! The memory manager of one stream: its state, the reserve and free paths,
//! handles and reports. Growing lives in `grow.rs`, giving back in
//! `release.rs`, capture priming in `priming.rs`.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::error::MemoryError;
use super::handle::{AllocationMode, SliceHandle};
use super::layout::{LayoutError, MAX_ALIGNMENT, MemoryLayout, PoolKind};
use super::pages::PageTable;
use super::pool::{Engine, Pool};
use super::progress::{NoWait, Progress};
use super::report::MemoryReport;
use super::rounding::{round_class, round_up, shr};
use super::segment::Segment;
use super::slots::{self, OWNER, PIN, SliceTable, Slot, WINDOW};
use super::tlsf::NIL;
use crate::platform::{DeviceRange, Storage, StorageTerms};
use crate::stream::capture::{CaptureState, Phase};

/// The largest request a manager accepts (larger ones are refused as
/// [`MemoryError::InvalidSize`] before any rounding could overflow).
pub const MAX_REQUEST: u64 = 1 << 56;

/// Pages released by a cleanup.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Released {
    /// Pages handed back to the storage.
    pub pages: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Byte and call counts of a manager.
#[derive(Clone, Copy, Debug, Default)]
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
    /// The bytes held when the churn budget last left a commit over the
    /// trim limit: trimming keeps no lower (see `decommit_to_fit`).
    pub settled: u64,
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
/// with [`MemoryError::AllocationInCapture`]) and slices are not reused after
/// a free; [`end_capture`](Self::end_capture) hands every slice reserved in
/// the capture to the caller, pinned until [`unpin`](Self::unpin).
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
    /// from, and the chunks committed in them.
    pub(super) segment: Option<Segment>,
    pub(super) slots: SliceTable,
    pub(super) books: Books,
    pub(super) capture: CaptureState,
    /// Slices the open capture window holds.
    pub(super) window: Vec<u32>,
    pub(super) persistent_depth: u32,
    /// Storage flushes are held (see [`MemoryManager::hold_flushes`]).
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
        // of the alignment; else pages from `alloc`.
        self.segment = self
            .terms
            .resizable
            .filter(|r| {
                r.granularity.is_power_of_two()
                    && r.granularity >= align
                    && r.max_reservation >= r.granularity
            })
            .map(|r| Segment::new(r, align, self.layout.policy().large_page_granules));
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

    // ----- reserve / free -----

    fn route(&self, rounded: u64) -> usize {
        let n = self.pools.len() - 2;
        if self.mode() == AllocationMode::Persistent {
            return n;
        }
        for (i, p) in self.pools[..n].iter().enumerate() {
            if rounded <= p.max_slice {
                return i;
            }
        }
        n + 1
    }

    /// Reserves `size` bytes; returns the handle and the bytes.
    ///
    /// Picks the pool by size (or the persistent pool in persistent mode),
    /// carves a slice from a held page when one fits, else takes a page from
    /// the storage (see [`MemoryPolicy`](super::MemoryPolicy) for trimming).
    /// On storage exhaustion idle pages are released and the allocation
    /// retried once before [`MemoryError::OutOfMemory`].
    pub fn reserve(
        &mut self,
        size: u64,
    ) -> Result<(SliceHandle, DeviceRange), MemoryError<S::Error>> {
        self.reserve_inner(size, &mut NoWait)
    }

    /// Reserves `size` bytes as [`reserve`](Self::reserve) does, for a
    /// caller that frees in stream order
    /// ([`free_ordered`](Self::free_ordered)): where giving idle memory back
    /// (to stay under the trim limit, or before an out-of-memory retry)
    /// must first wait for the stream to complete the work that last
    /// touched it, `progress` is asked to wait rather than the manager
    /// growing. [`reserve`](Self::reserve) never waits: it grows instead,
    /// and gives that memory back once [`complete`](Self::complete) says
    /// the stream got there.
    pub fn reserve_ordered(
        &mut self,
        size: u64,
        progress: &mut dyn Progress,
    ) -> Result<(SliceHandle, DeviceRange), MemoryError<S::Error>> {
        self.reserve_inner(size, progress)
    }

    fn reserve_inner(
        &mut self,
        size: u64,
        progress: &mut dyn Progress,
    ) -> Result<(SliceHandle, DeviceRange), MemoryError<S::Error>> {
        if let Some(e) = self.broken {
            return Err(MemoryError::Layout(e));
        }
        if size == 0 || size > MAX_REQUEST {
            return Err(MemoryError::InvalidSize { size });
        }
        let Some(rounded) = round_up(size, self.align) else {
            return Err(MemoryError::InvalidSize { size });
        };
        self.books.reserves += 1;
        self.books.requested = self.books.requested.saturating_add(size);
        if self.books.reserves >= self.books.next_periodic {
            self.periodic()?;
        }
        let pool = self.route(rounded);
        let (page, block, offset) = match self.take(pool, rounded) {
            Some(t) => t,
            None => {
                let page = self.grow(pool, rounded, progress)?;
                match self.pools[pool].engine {
                    // The fresh page is the only free block large enough.
                    Engine::Sliced(_) => match self.take(pool, rounded) {
                        Some(t) => t,
                        None => return Err(self.lost_page(page, rounded)),
                    },
                    Engine::Pages(_) => {
                        self.pages[page].live = 1;
                        (page, NIL, 0)
                    }
                }
            }
        };
        let (page_id, page_offset, page_size) = {
            let p = &self.pages[page];
            (p.id, p.offset, p.size)
        };
        let held = if block == NIL { page_size } else { rounded };
        let stats = &mut self.pools[pool].stats;
        stats.in_use += size;
        stats.padding += held - size;
        stats.slices += 1;
        self.books.live += size;
        self.books.peak_live = self.books.peak_live.max(self.books.live);
        let range = DeviceRange {
            page: page_id,
            offset: page_offset + offset,
            len: size,
        };
        let window = if self.capture.is_open() { WINDOW } else { 0 };
        let slot = Slot {
            holds: OWNER | window,
            pool: pool as u8,
            block,
            page,
            held,
            range,
            cursor: 0,
        };
        let key = match self.slots.insert(slot) {
            Ok(k) => k,
            Err(slot) => {
                // Every slice index is taken (2^32 − 1 live slices).
                self.give_back(&slot);
                return Err(MemoryError::InvalidSize { size });
            }
        };
        if window != 0 {
            self.window.push(key.index);
        }
        Ok((slots::handle(key), range))
    }

    /// A fresh sliced page could not hold the slice it was grown for: the
    /// page goes back and the request is refused (a broken invariant of the
    /// engine; never expected).
    fn lost_page(&mut self, page: u32, rounded: u64) -> MemoryError<S::Error> {
        self.release_page(page);
        MemoryError::InvalidSize { size: rounded }
    }

    /// Carves from what the pool holds: (page, block, offset).
    fn take(&mut self, pool: usize, rounded: u64) -> Option<(u32, u32, u64)> {
        let slack_shift = self.layout.policy().fit_slack_shift;
        let rounding_shift = self.layout.policy().page_rounding_shift;
        let align = self.align;
        let recent = if self.pools[pool].recent == NIL {
            NIL
        } else {
            self.take_recent(pool, rounded)
        };
        let p = &mut self.pools[pool];
        let (page, block, offset) = match &mut p.engine {
            _ if recent != NIL => (recent, NIL, 0),
            Engine::Sliced(e) => {
                let c = e.take(rounded)?;
                (c.page, c.block, c.offset)
            }
            Engine::Pages(index) => {
                let slack = shr(rounded, slack_shift);
                let class = round_class(rounded, rounding_shift, align)?;
                let (_, page) = index.find(class, class.max(rounded.saturating_add(slack)))?;
                index.remove(page);
                (page, NIL, 0)
            }
        };
        let pg = &mut self.pages[page];
        pg.live += 1;
        if pg.live == 1 {
            p.stats.idle_pages -= 1;
            p.stats.idle_bytes -= pg.size;
            self.pages.lru_unlink(page);
        }
        Some((page, block, offset))
    }

    /// Frees a slice. Its bytes go back to the pool unless a capture window
    /// or a graph pin still holds it (then they go back when released).
    ///
    /// Once the last hold drops, the bytes may be handed out again, and on
    /// a resizable storage given back in place at once: the caller frees a
    /// slice only when no queued work touches it any more (the device frees
    /// through its fence-gated drop queue). A slice that queued work of the
    /// manager's own stream may still touch is freed with
    /// [`free_ordered`](Self::free_ordered).
    pub fn free(&mut self, h: SliceHandle) -> Result<(), MemoryError<S::Error>> {
        let s = self.slot(h)?;
        if s.holds & OWNER == 0 {
            return Err(MemoryError::AlreadyFreed(h));
        }
        self.drop_hold(h.index, OWNER);
        Ok(())
    }

    /// Frees a slice in stream order: work queued on this manager's stream
    /// up to `cursor` may still touch it, and no other stream's queued work
    /// does. Its bytes go back to the pool at once (unless a capture window
    /// or a graph pin still holds the slice), to serve later work of the
    /// same stream, which runs after that cursor; only giving them back to
    /// the storage (decommitting a chunk they lie in) waits until
    /// [`complete`](Self::complete) says the stream got past `cursor`.
    ///
    /// The caller orders any *other* stream's first use of a slice this
    /// manager hands out after [`reuse_cursor`](Self::reuse_cursor) (at the
    /// time of the reserve) on this stream, as with the driver's
    /// stream-ordered allocations. Over a storage without resizable pages a
    /// page handed back goes through `dealloc` and `flush`, which let queued
    /// work finish (the storage contract), so nothing waits.
    pub fn free_ordered(
        &mut self,
        h: SliceHandle,
        cursor: u64,
    ) -> Result<(), MemoryError<S::Error>> {
        let s = self.slot(h)?;
        if s.holds & OWNER == 0 {
            return Err(MemoryError::AlreadyFreed(h));
        }
        if cursor > self.books.fence {
            self.books.fence = cursor;
            if let Some(seg) = &mut self.segment {
                seg.set_fence(cursor);
            }
        }
        self.drop_hold(h.index, OWNER);
        Ok(())
    }

    /// Tells the manager that its stream has completed every command up to
    /// `cursor` (a smaller value than one told before changes nothing).
    /// Idle memory freed in stream order up to it may now be given back.
    pub fn complete(&mut self, cursor: u64) {
        self.books.completed = self.books.completed.max(cursor);
    }

    /// The highest cursor [`complete`](Self::complete) was told.
    pub fn completed(&self) -> u64 {
        self.books.completed
    }

    /// The highest cursor a free in stream order named: a slice handed out
    /// now may share bytes with work queued up to it.
    pub fn reuse_cursor(&self) -> u64 {
        self.books.fence
    }

    /// The cursor the stream must complete before every idle chunk may be
    /// given back, when some must wait (`None` when none does).
    pub fn awaiting(&self) -> Option<u64> {
        let fence = self.segment.as_ref()?.youngest_idle_fence()?;
        (fence > self.books.completed).then_some(fence)
    }

    /// Times a reserve waited for the stream (through
    /// [`reserve_ordered`](Self::reserve_ordered)'s `progress`) before
    /// giving memory back.
    pub fn waits(&self) -> u64 {
        self.books.waits
    }

    /// Releases a graph's pin on a slice returned by
    /// [`end_capture`](Self::end_capture).
    pub fn unpin(&mut self, h: SliceHandle) -> Result<(), MemoryError<S::Error>> {
        let s = self.slot(h)?;
        if s.holds & PIN == 0 {
            return Err(MemoryError::NotPinned(h));
        }
        self.drop_hold(h.index, PIN);
        Ok(())
    }

    pub(super) fn drop_hold(&mut self, index: u32, hold: u8) {
        let s = &mut self.slots[index];
        s.holds &= !hold;
        if s.holds != 0 {
            return;
        }
        if let Some(s) = self.slots.remove_at(index) {
            self.give_back(&s);
        }
    }

    /// Gives a slice's bytes back to its pool.
    fn give_back(&mut self, s: &Slot) {
        let pool = s.pool as usize;
        let stats = &mut self.pools[pool].stats;
        stats.in_use -= s.range.len;
        stats.padding -= s.held - s.range.len;
        stats.slices -= 1;
        self.books.live -= s.range.len;
        let now = self.books.reserves;
        let window_open = self.capture.is_open();
        let p = &mut self.pools[pool];
        let page = &mut self.pages[s.page];
        page.live -= 1;
        let idle = page.live == 0;
        let size = page.size;
        match &mut p.engine {
            Engine::Sliced(e) => e.give(s.block),
            Engine::Pages(index) => {
                // Carved exclusive pages go back to their reservation at once:
                // that costs no driver call, the space serves any size, and
                // its chunks stay committed until memory is short.
                let dedicated = p.kind == PoolKind::Dedicated;
                let carved = p.kind == PoolKind::Exclusive && self.segment.is_some();
                if (dedicated || carved) && !window_open {
                    // Released at once; the page is not idle-listed.
                    p.stats.idle_pages += 1;
                    p.stats.idle_bytes += size;
                    if carved {
                        // Its space goes back now; the rest of the release
                        // waits for the pool's next reserve (`take_recent`).
                        let older = core::mem::replace(&mut p.recent, s.page);
                        let pg = self.pages[s.page];
                        self.give_space(pg.carving());
                        if older != NIL {
                            self.settle(older);
                        }
                        return;
                    }
                    self.release_recent();
                    self.release_page(s.page);
                    if dedicated {
                        // Its chunks go back now. A decommit that fails
                        // leaves the chunk idle and counted; the next
                        // release point retries it.
                        let _ = self.decommit_idle();
                    }
                    return;
                }
                index.insert(size, s.page);
            }
        }
        if idle {
            p.stats.idle_pages += 1;
            p.stats.idle_bytes += size;
            let trimmable = p.trimmable();
            self.pages[s.page].idle_since = now;
            if trimmable {
                self.pages.lru_push(s.page);
            }
        }
    }

    /// The page the pool freed last, taken back when a new page for
    /// `rounded` bytes would be carved exactly where it was (then nothing
    /// about the manager differs from having released it and carved anew);
    /// otherwise released. `NIL` when none is taken back.
    fn take_recent(&mut self, pool: usize, rounded: u64) -> u32 {
        let recent = self.pools[pool].recent;
        if recent == NIL {
            return NIL;
        }
        self.pools[pool].recent = NIL;
        let policy = self.layout.policy();
        let page = self.pages[recent];
        let class = round_class(rounded, policy.page_rounding_shift, self.align);
        if class == Some(page.size) {
            if let Some(block) = self.recarve(page.carving(), page.size) {
                let p = &mut self.pages[recent];
                p.block = block;
                // As a page carved now would be.
                p.idle_since = self.books.reserves;
                return recent;
            }
        }
        self.settle(recent);
        NIL
    }

    /// Finishes releasing a page whose space [`give_back`](Self::give_back)
    /// already returned to its reservation.
    fn settle(&mut self, i: u32) {
        let page = self.pages.remove(i);
        let stats = &mut self.pools[page.pool as usize].stats;
        stats.pages -= 1;
        stats.reserved -= page.size;
        stats.idle_pages -= 1;
        stats.idle_bytes -= page.size;
        self.drop_uses(page.carving(), page.size, true, page.idle_since);
        self.books.carved -= page.size;
    }

    /// Settles the page each pool freed last (before the manager grows or
    /// gives memory back: its space may then serve anything, and its
    /// chunks count as idle).
    pub(super) fn release_recent(&mut self) {
        if self.segment.is_none() {
            return;
        }
        for pool in 0..self.pools.len() {
            let page = self.pools[pool].recent;
            if page != NIL {
                self.pools[pool].recent = NIL;
                self.settle(page);
            }
        }
    }

    // ----- reports -----

    /// The figures of every pool.
    pub fn report(&self) -> MemoryReport {
        MemoryReport {
            pools: self.pools.iter().map(|p| p.stats).collect(),
            pending_release: self.books.pending,
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
