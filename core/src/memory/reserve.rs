//! The reserve path: routing a request to its pool, carving a slice from
//! what the pool holds, growing when nothing fits, and taking back the page
//! a pool freed last when the new one would land exactly where it was.

use super::error::MemoryError;
use super::handle::{AllocationMode, SliceHandle};
use super::manager::MAX_REQUEST;
use super::manager::MemoryManager;
use super::pool::Engine;
use super::progress::{NoWait, Progress};
use super::rounding::{round_up, shr};
use super::slots::{self, OWNER, Slot, WINDOW};
use super::tlsf::NIL;
use crate::platform::{DeviceRange, Storage};

impl<S: Storage> MemoryManager<S> {
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
            pins: 0,
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
        // The class only matters to pools of whole pages.
        let class = match self.pools[pool].engine {
            Engine::Pages(_) => self.page_class(rounded),
            Engine::Sliced(_) => None,
        };
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
                let class = class?;
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
        let page = self.pages[recent];
        if self.page_class(rounded) == Some(page.size) {
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
}
