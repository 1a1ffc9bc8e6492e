//! The memory manager of one stream: pools over a [`Storage`], handles with
//! generations, capture priming, trimming, cleanup and reports.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::error::{MemoryError, OomCause};
use super::handle::{AllocationMode, CapturedSlice, SliceHandle};
use super::layout::{MemoryLayout, PoolKind};
use super::report::{MemoryReport, PoolReport};
use super::size_index::SizeIndex;
use super::tlsf::{NIL, SlicedEngine};
use crate::platform::{DeviceRange, ErrorKind, PageId, PlatformError, Storage};
use crate::stream::capture::{CaptureState, Phase};

/// The largest request a manager accepts (larger ones are refused as
/// [`MemoryError::InvalidSize`] before any rounding could overflow).
pub const MAX_REQUEST: u64 = 1 << 56;

const OWNER: u8 = 1;
const WINDOW: u8 = 2;
const PIN: u8 = 4;

#[derive(Debug)]
enum Engine {
    Sliced(Box<SlicedEngine>),
    /// Exclusive, persistent and dedicated: idle pages by (size, page).
    Pages(Box<SizeIndex>),
}

#[derive(Debug)]
struct Pool {
    kind: PoolKind,
    max_slice: u64,
    page_size: u64,
    cap: Option<u64>,
    engine: Engine,
    stats: PoolReport,
}

impl Pool {
    fn new(kind: PoolKind, page_size: u64, max_slice: u64, cap: Option<u64>, align: u64) -> Self {
        let engine = match kind {
            PoolKind::Small | PoolKind::Sliced => {
                Engine::Sliced(Box::new(SlicedEngine::new(align)))
            }
            _ => Engine::Pages(Box::new(SizeIndex::new(align))),
        };
        Self {
            kind,
            max_slice,
            page_size: round_up(page_size, align),
            cap,
            engine,
            stats: PoolReport::empty(kind),
        }
    }

    /// Idle pages of this pool are trimmed and periodically released.
    fn trimmable(&self) -> bool {
        self.kind != PoolKind::Persistent
    }
}

#[derive(Clone, Copy, Debug)]
struct Page {
    id: PageId,
    size: u64,
    pool: u8,
    in_lru: bool,
    /// Live slices on the page (any hold counts).
    live: u32,
    /// Sliced pools: the block at offset 0 (the whole page when idle).
    first_block: u32,
    prev: u32,
    /// LRU link, or the vacant-entry chain.
    next: u32,
    idle_since: u64,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    generation: u32,
    holds: u8,
    pool: u8,
    /// Sliced: the block; other pools: unused.
    block: u32,
    page: u32,
    /// Bytes the slice keeps from its page (rounded size, or the page).
    held: u64,
    range: DeviceRange,
    cursor: u64,
    next_vacant: u32,
}

/// Pages released by a cleanup.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Released {
    /// Pages handed back to the storage.
    pub pages: u64,
    /// Their bytes.
    pub bytes: u64,
}

const fn round_up(v: u64, align: u64) -> u64 {
    (v + align - 1) & !(align - 1)
}

/// Rounds `v` up to a multiple of `2^(log2(v) - shift)` (and of `align`).
fn round_class(v: u64, shift: u32, align: u64) -> u64 {
    let log = 63 - v.leading_zeros();
    if shift >= 64 || log <= shift {
        return v;
    }
    let step = (1u64 << (log - shift)).max(align);
    round_up(v, step)
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
    storage: S,
    layout: MemoryLayout,
    align: u64,
    /// Listed pools, then persistent, then dedicated.
    pools: Vec<Pool>,
    pages: Vec<Page>,
    vacant_page: u32,
    page_count: u32,
    lru_head: u32,
    lru_tail: u32,
    slots: Vec<Slot>,
    vacant_slot: u32,
    reserved: u64,
    pending: u64,
    high_water: u64,
    /// Bytes requested by live slices, and their peak.
    live: u64,
    peak_live: u64,
    reserves: u64,
    next_periodic: u64,
    capture: CaptureState,
    window: Vec<u32>,
    persistent_depth: u32,
    storage_allocs: u64,
    /// Storage flushes are held (see [`MemoryManager::hold_flushes`]).
    flushes_held: bool,
}

impl<S: Storage> MemoryManager<S> {
    /// A manager over `storage` with `layout`. Offsets and pages honour the
    /// larger of the layout's and the storage's alignment.
    pub fn new(storage: S, layout: MemoryLayout) -> Self {
        let mut m = Self {
            storage,
            layout,
            align: 1,
            pools: Vec::new(),
            pages: Vec::new(),
            vacant_page: NIL,
            page_count: 0,
            lru_head: NIL,
            lru_tail: NIL,
            slots: Vec::new(),
            vacant_slot: NIL,
            reserved: 0,
            pending: 0,
            high_water: 0,
            live: 0,
            peak_live: 0,
            reserves: 0,
            next_periodic: 0,
            capture: CaptureState::new(),
            window: Vec::new(),
            persistent_depth: 0,
            storage_allocs: 0,
            flushes_held: false,
        };
        m.build_pools();
        m
    }

    fn build_pools(&mut self) {
        let storage_align = self.storage.alignment();
        let storage_align = if storage_align.is_power_of_two() {
            storage_align
        } else {
            1
        };
        self.align = self.layout.alignment().max(storage_align);
        let align = self.align;
        self.pools.clear();
        for p in self.layout.pools() {
            self.pools
                .push(Pool::new(p.kind, p.page_size, p.max_slice, p.cap, align));
        }
        let top = self.layout.pools().last().map_or(0, |p| p.page_size);
        self.pools.push(Pool::new(
            PoolKind::Persistent,
            top,
            MAX_REQUEST,
            None,
            align,
        ));
        self.pools.push(Pool::new(
            PoolKind::Dedicated,
            MAX_REQUEST,
            MAX_REQUEST,
            None,
            align,
        ));
        self.next_periodic = self.reserves
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
        self.reserved + self.pending
    }

    /// Storage allocations made so far.
    pub fn storage_allocations(&self) -> u64 {
        self.storage_allocs
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

    fn slot(&self, h: SliceHandle) -> Result<&Slot, MemoryError<S::Error>> {
        match self.slots.get(h.index as usize) {
            Some(s) if s.generation == h.generation && s.holds != 0 => Ok(s),
            _ => Err(MemoryError::StaleHandle(h)),
        }
    }

    /// The bytes of a live slice.
    pub fn range(&self, h: SliceHandle) -> Result<DeviceRange, MemoryError<S::Error>> {
        Ok(self.slot(h)?.range)
    }

    /// Records the stream cursor at which the slice was last bound.
    pub fn set_cursor(&mut self, h: SliceHandle, cursor: u64) -> Result<(), MemoryError<S::Error>> {
        self.slot(h)?;
        self.slots[h.index as usize].cursor = cursor;
        Ok(())
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
        if size == 0 || size > MAX_REQUEST {
            return Err(MemoryError::InvalidSize { size });
        }
        let rounded = round_up(size, self.align);
        self.reserves += 1;
        if self.reserves >= self.next_periodic {
            self.periodic()?;
        }
        let pool = self.route(rounded);
        let (page, block, offset) = match self.take(pool, rounded) {
            Some(t) => t,
            None => {
                let page = self.grow(pool, rounded)?;
                if matches!(self.pools[pool].engine, Engine::Sliced(_)) {
                    // The fresh page is the only free block large enough.
                    match self.take(pool, rounded) {
                        Some(t) => t,
                        None => unreachable!("a fresh page holds any slice of its pool"),
                    }
                } else {
                    self.pages[page as usize].live = 1;
                    (page, NIL, 0)
                }
            }
        };
        let p = self.pages[page as usize];
        let held = if block == NIL { p.size } else { rounded };
        let stats = &mut self.pools[pool].stats;
        stats.in_use += size;
        self.live += size;
        self.peak_live = self.peak_live.max(self.live);
        stats.padding += held - size;
        stats.slices += 1;
        let range = DeviceRange {
            page: p.id,
            offset,
            len: size,
        };
        let window = if self.capture.is_open() { WINDOW } else { 0 };
        let slot = Slot {
            generation: 0,
            holds: OWNER | window,
            pool: pool as u8,
            block,
            page,
            held,
            range,
            cursor: 0,
            next_vacant: NIL,
        };
        let index = if self.vacant_slot != NIL {
            let i = self.vacant_slot;
            let s = &mut self.slots[i as usize];
            self.vacant_slot = s.next_vacant;
            *s = Slot {
                generation: s.generation,
                ..slot
            };
            i
        } else {
            self.slots.push(slot);
            (self.slots.len() - 1) as u32
        };
        if window != 0 {
            self.window.push(index);
        }
        let handle = SliceHandle {
            index,
            generation: self.slots[index as usize].generation,
        };
        Ok((handle, range))
    }

    /// Carves from what the pool holds: (page, block, offset).
    fn take(&mut self, pool: usize, rounded: u64) -> Option<(u32, u32, u64)> {
        let slack_shift = self.layout.policy().fit_slack_shift;
        let rounding_shift = self.layout.policy().page_rounding_shift;
        let align = self.align;
        let p = &mut self.pools[pool];
        let (page, block, offset) = match &mut p.engine {
            Engine::Sliced(e) => {
                let c = e.take(rounded)?;
                (c.page, c.block, c.offset)
            }
            Engine::Pages(index) => {
                let slack = if slack_shift >= 64 {
                    0
                } else {
                    rounded >> slack_shift
                };
                let class = round_class(rounded, rounding_shift, align);
                let (_, page) = index.find(class, class.max(rounded + slack))?;
                index.remove(page);
                (page, NIL, 0)
            }
        };
        let pg = &mut self.pages[page as usize];
        pg.live += 1;
        if pg.live == 1 {
            p.stats.idle_pages -= 1;
            p.stats.idle_bytes -= pg.size;
            self.lru_unlink(page);
        }
        Some((page, block, offset))
    }

    /// Frees a slice. Its bytes go back to the pool unless a capture window
    /// or a graph pin still holds it (then they go back when released).
    pub fn free(&mut self, h: SliceHandle) -> Result<(), MemoryError<S::Error>> {
        let s = self.slot(h)?;
        if s.holds & OWNER == 0 {
            return Err(MemoryError::AlreadyFreed(h));
        }
        self.drop_hold(h.index, OWNER);
        Ok(())
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

    fn drop_hold(&mut self, index: u32, hold: u8) {
        let s = &mut self.slots[index as usize];
        s.holds &= !hold;
        if s.holds != 0 {
            return;
        }
        let s = *s;
        {
            let slot = &mut self.slots[index as usize];
            slot.generation = slot.generation.wrapping_add(1);
            slot.next_vacant = self.vacant_slot;
            self.vacant_slot = index;
        }
        let pool = s.pool as usize;
        let stats = &mut self.pools[pool].stats;
        stats.in_use -= s.range.len;
        self.live -= s.range.len;
        stats.padding -= s.held - s.range.len;
        stats.slices -= 1;
        let now = self.reserves;
        let window_open = self.capture.is_open();
        let p = &mut self.pools[pool];
        let page = &mut self.pages[s.page as usize];
        page.live -= 1;
        let idle = page.live == 0;
        let size = page.size;
        match &mut p.engine {
            Engine::Sliced(e) => e.give(s.block),
            Engine::Pages(index) => {
                if p.kind == PoolKind::Dedicated && !window_open {
                    // Released at once; the page is not idle-listed.
                    p.stats.idle_pages += 1;
                    p.stats.idle_bytes += size;
                    self.release_page(s.page);
                    return;
                }
                index.insert(size, s.page);
            }
        }
        if idle {
            p.stats.idle_pages += 1;
            p.stats.idle_bytes += size;
            let trimmable = p.trimmable();
            let page = &mut self.pages[s.page as usize];
            page.idle_since = now;
            if trimmable {
                self.lru_push(s.page);
            }
        }
    }

    // ----- idle LRU -----

    fn lru_push(&mut self, i: u32) {
        let tail = self.lru_tail;
        let p = &mut self.pages[i as usize];
        p.in_lru = true;
        p.prev = tail;
        p.next = NIL;
        if tail != NIL {
            self.pages[tail as usize].next = i;
        } else {
            self.lru_head = i;
        }
        self.lru_tail = i;
    }

    fn lru_unlink(&mut self, i: u32) {
        let p = self.pages[i as usize];
        if !p.in_lru {
            return;
        }
        if p.prev != NIL {
            self.pages[p.prev as usize].next = p.next;
        } else {
            self.lru_head = p.next;
        }
        if p.next != NIL {
            self.pages[p.next as usize].prev = p.prev;
        } else {
            self.lru_tail = p.prev;
        }
        let p = &mut self.pages[i as usize];
        p.in_lru = false;
        p.prev = NIL;
        p.next = NIL;
    }

    // ----- pages -----

    /// Hands an idle page back to the storage (not flushed).
    fn release_page(&mut self, i: u32) {
        self.lru_unlink(i);
        let page = self.pages[i as usize];
        debug_assert_eq!(page.live, 0);
        let pool = &mut self.pools[page.pool as usize];
        match &mut pool.engine {
            Engine::Sliced(e) => e.remove_page(page.first_block),
            Engine::Pages(index) => {
                index.remove(i);
            }
        }
        pool.stats.pages -= 1;
        pool.stats.reserved -= page.size;
        pool.stats.idle_pages -= 1;
        pool.stats.idle_bytes -= page.size;
        self.storage.dealloc(page.id);
        self.reserved -= page.size;
        self.pending += page.size;
        self.page_count -= 1;
        let p = &mut self.pages[i as usize];
        p.next = self.vacant_page;
        p.prev = NIL;
        self.vacant_page = i;
    }

    /// Holds or resumes storage flushes. While held, pages handed back to
    /// the storage stay pending (counted in
    /// [`held_bytes`](Self::held_bytes)) instead of being released: drivers
    /// forbid releasing memory while any stream of the device records a
    /// capture, and the device holds every manager's flushes then. Resuming
    /// flushes what is pending.
    pub fn hold_flushes(&mut self, hold: bool) -> Result<(), MemoryError<S::Error>> {
        self.flushes_held = hold;
        if !hold && self.pending > 0 {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), MemoryError<S::Error>> {
        if self.flushes_held {
            return Ok(());
        }
        self.storage
            .flush()
            .map_err(|source| MemoryError::Storage {
                op: "flush",
                source,
            })?;
        self.pending = 0;
        Ok(())
    }

    /// Releases every idle page (persistent ones too when `all`).
    fn release_idle(&mut self, all: bool) -> Released {
        let mut r = Released::default();
        while self.lru_head != NIL {
            let i = self.lru_head;
            r.pages += 1;
            r.bytes += self.pages[i as usize].size;
            self.release_page(i);
        }
        if all {
            for pool in 0..self.pools.len() {
                while let Engine::Pages(index) = &self.pools[pool].engine {
                    let Some((size, i)) = index.first() else {
                        break;
                    };
                    r.pages += 1;
                    r.bytes += size;
                    self.release_page(i);
                }
            }
        }
        r
    }

    fn periodic(&mut self) -> Result<(), MemoryError<S::Error>> {
        let Some(period) = self.layout.policy().release_idle_after else {
            self.next_periodic = u64::MAX;
            return Ok(());
        };
        if self.capture.is_open() {
            return Ok(());
        }
        let period = period.get();
        self.next_periodic = self.reserves.saturating_add(period);
        let cutoff = self.reserves.saturating_sub(period);
        let mut any = false;
        while self.lru_head != NIL && self.pages[self.lru_head as usize].idle_since <= cutoff {
            self.release_page(self.lru_head);
            any = true;
        }
        if any {
            self.flush()?;
        }
        Ok(())
    }

    /// What trimming keeps the bytes held under: the most ever held, or the
    /// peak of live bytes plus the policy's headroom, whichever is larger.
    fn trim_limit(&self) -> u64 {
        let shift = self.layout.policy().trim_headroom_shift;
        let headroom = if shift >= 64 {
            0
        } else {
            self.peak_live >> shift
        };
        self.high_water.max(self.peak_live + headroom)
    }

    fn over_cap(&self, pool: usize, bytes: u64) -> Option<u64> {
        let p = &self.pools[pool];
        p.cap.filter(|&cap| p.stats.reserved + bytes > cap)
    }

    /// Makes room for and allocates a page of the pool; returns its index.
    fn grow(&mut self, pool: usize, rounded: u64) -> Result<u32, MemoryError<S::Error>> {
        let bytes = match self.pools[pool].engine {
            Engine::Sliced(_) => self.pools[pool].page_size,
            Engine::Pages(_) => round_class(
                rounded,
                self.layout.policy().page_rounding_shift,
                self.align,
            ),
        };
        if self.capture.is_recording() {
            return Err(MemoryError::AllocationInCapture { bytes });
        }
        let open = self.capture.is_open();
        let policy = *self.layout.policy();
        if !open {
            let limit = self.trim_limit();
            if policy.trim_before_grow && self.reserved + self.pending + bytes > limit {
                while self.reserved + bytes > limit && self.lru_head != NIL {
                    self.release_page(self.lru_head);
                }
            }
            if self.over_cap(pool, bytes).is_some() {
                // Slow path, only when the cap is reached: this pool's idle pages.
                let mut i = self.lru_head;
                while i != NIL && self.over_cap(pool, bytes).is_some() {
                    let next = self.pages[i as usize].next;
                    if self.pages[i as usize].pool as usize == pool {
                        self.release_page(i);
                    }
                    i = next;
                }
            }
            if self.page_count >= policy.max_pages && self.lru_head != NIL {
                self.release_page(self.lru_head);
            }
            if self.pending > 0
                && (self.reserved + self.pending + bytes > limit || !policy.trim_before_grow)
            {
                self.flush()?;
            }
        }
        if let Some(cap) = self.over_cap(pool, bytes) {
            return Err(self.oom(
                rounded,
                OomCause::PoolCap {
                    pool: self.pools[pool].kind,
                    cap,
                },
            ));
        }
        if self.page_count >= policy.max_pages {
            return Err(self.oom(
                rounded,
                OomCause::PageLimit {
                    limit: policy.max_pages,
                },
            ));
        }
        let id = match self.storage.alloc(bytes) {
            Ok(id) => id,
            Err(e) if e.kind() == ErrorKind::OutOfMemory && !open => {
                self.release_idle(true);
                self.flush()?;
                match self.storage.alloc(bytes) {
                    Ok(id) => id,
                    Err(e) if e.kind() == ErrorKind::OutOfMemory => {
                        return Err(self.oom(rounded, OomCause::Storage(e)));
                    }
                    Err(source) => {
                        return Err(MemoryError::Storage {
                            op: "alloc",
                            source,
                        });
                    }
                }
            }
            Err(e) if e.kind() == ErrorKind::OutOfMemory => {
                return Err(self.oom(rounded, OomCause::Storage(e)));
            }
            Err(source) => {
                return Err(MemoryError::Storage {
                    op: "alloc",
                    source,
                });
            }
        };
        self.storage_allocs += 1;
        self.reserved += bytes;
        self.high_water = self.high_water.max(self.reserved + self.pending);
        self.page_count += 1;
        let page = Page {
            id,
            size: bytes,
            pool: pool as u8,
            in_lru: false,
            live: 0,
            first_block: NIL,
            prev: NIL,
            next: NIL,
            idle_since: self.reserves,
        };
        let i = if self.vacant_page != NIL {
            let i = self.vacant_page;
            self.vacant_page = self.pages[i as usize].next;
            self.pages[i as usize] = page;
            i
        } else {
            self.pages.push(page);
            (self.pages.len() - 1) as u32
        };
        let p = &mut self.pools[pool];
        p.stats.pages += 1;
        p.stats.reserved += bytes;
        if let Engine::Sliced(e) = &mut p.engine {
            // The fresh page is idle until `take` carves it.
            let first = e.add_page(i, bytes);
            self.pages[i as usize].first_block = first;
            p.stats.idle_pages += 1;
            p.stats.idle_bytes += bytes;
        }
        Ok(i)
    }

    fn oom(&self, requested: u64, cause: OomCause<S::Error>) -> MemoryError<S::Error> {
        MemoryError::OutOfMemory {
            requested,
            cause,
            report: Box::new(self.report()),
        }
    }

    // ----- cleanup, layout, modes -----

    /// Releases every idle page (the persistent pool's too), then flushes
    /// the storage. Refused while a capture window is open.
    pub fn cleanup(&mut self) -> Result<Released, MemoryError<S::Error>> {
        if self.capture.is_open() {
            return Err(MemoryError::WindowOpen {
                phase: self.capture.phase(),
            });
        }
        let r = self.release_idle(true);
        self.flush()?;
        Ok(r)
    }

    /// Swaps the layout. Only while nothing is live (else
    /// [`MemoryError::InUse`] with the bytes in use) and no capture window is
    /// open; every held page is released and the storage flushed.
    pub fn install(&mut self, layout: MemoryLayout) -> Result<(), MemoryError<S::Error>> {
        if self.capture.is_open() {
            return Err(MemoryError::WindowOpen {
                phase: self.capture.phase(),
            });
        }
        let in_use: u64 = self.pools.iter().map(|p| p.stats.in_use).sum();
        if in_use > 0 {
            return Err(MemoryError::InUse { bytes: in_use });
        }
        self.release_idle(true);
        self.flush()?;
        debug_assert_eq!(self.page_count, 0);
        self.pages.clear();
        self.vacant_page = NIL;
        self.layout = layout;
        self.build_pools();
        Ok(())
    }

    /// Opens a persistent window (windows nest): reserves go to the
    /// persistent pool until the matching [`end_persistent`](Self::end_persistent).
    pub fn begin_persistent(&mut self) {
        self.persistent_depth += 1;
    }

    /// Closes the innermost persistent window.
    pub fn end_persistent(&mut self) -> Result<(), MemoryError<S::Error>> {
        if self.persistent_depth == 0 {
            return Err(MemoryError::NoPersistentWindow);
        }
        self.persistent_depth -= 1;
        Ok(())
    }

    // ----- capture -----

    /// `NoCapture → Prepare`: from now every slice handed out is retained.
    pub fn prepare(&mut self) -> Result<(), MemoryError<S::Error>> {
        self.capture.prepare()?;
        Ok(())
    }

    /// `Prepare → Capture`: the retained slices go back to the pools.
    pub fn begin_capture(&mut self) -> Result<(), MemoryError<S::Error>> {
        self.capture.begin()?;
        self.drop_window_holds();
        Ok(())
    }

    fn drop_window_holds(&mut self) {
        let window = core::mem::take(&mut self.window);
        for &i in &window {
            self.drop_hold(i, WINDOW);
        }
        self.window = window;
        self.window.clear();
    }

    /// `Capture → NoCapture`: every slice reserved inside the capture is
    /// passed to `sink` and pinned for the graph until [`unpin`](Self::unpin).
    pub fn end_capture(
        &mut self,
        mut sink: impl FnMut(CapturedSlice),
    ) -> Result<(), MemoryError<S::Error>> {
        self.capture.end()?;
        for &i in &self.window {
            let s = &mut self.slots[i as usize];
            s.holds = (s.holds & !WINDOW) | PIN;
            sink(CapturedSlice {
                handle: SliceHandle {
                    index: i,
                    generation: s.generation,
                },
                range: s.range,
            });
        }
        self.window.clear();
        Ok(())
    }

    /// Closes an open window without a graph: held slices go back to the
    /// pools (those their owners still hold stay live).
    pub fn abort_capture(&mut self) -> Result<(), MemoryError<S::Error>> {
        self.capture.abort()?;
        self.drop_window_holds();
        Ok(())
    }

    // ----- reports -----

    /// The figures of every pool.
    pub fn report(&self) -> MemoryReport {
        MemoryReport {
            pools: self.pools.iter().map(|p| p.stats).collect(),
            pending_release: self.pending,
        }
    }
}
