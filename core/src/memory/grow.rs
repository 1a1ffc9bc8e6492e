//! Growing: how many bytes a new page takes, making room for it under the
//! policy (trim before grow, pool caps, the page budget), and asking the
//! storage, with one retry after releasing idle pages on exhaustion.

use super::error::{MemoryError, OomCause};
use super::manager::{MAX_HELD, MemoryManager};
use super::pages::Page;
use super::pool::Engine;
use super::progress::{NoWait, Progress};
use super::rounding::round_class;
use super::segment::Carving;
use crate::platform::{ErrorKind, PageId, PlatformError, Storage};

/// Where a new page came from.
#[derive(Clone, Copy, Debug)]
enum Placed {
    /// A page of its own from `Storage::alloc`.
    Own(PageId),
    /// Carved from a reservation.
    Carved(Carving),
}

impl<S: Storage> MemoryManager<S> {
    /// The bytes of a new page of `pool` for a request of `rounded` bytes.
    fn page_bytes(&self, pool: usize, rounded: u64) -> Option<u64> {
        match self.pools[pool].engine {
            Engine::Sliced(_) => Some(self.pools[pool].page_size),
            Engine::Pages(_) => self.page_class(rounded),
        }
    }

    /// The size of a new page of an exclusive, persistent or dedicated pool
    /// for a request of `rounded` bytes: its size class
    /// ([`MemoryPolicy::page_rounding_shift`](super::MemoryPolicy)) when
    /// pages come from `alloc`, so nearby sizes share idle pages; when
    /// pages are carved from reservations, where a page's space goes back
    /// to its reservation when it is freed and serves any size (a class
    /// would buy no reuse and only pad), the exact size, large pages in
    /// whole granules (`Segment::page_size`).
    pub(super) fn page_class(&self, rounded: u64) -> Option<u64> {
        match &self.segment {
            Some(seg) => seg.page_size(rounded, self.align),
            None => round_class(
                rounded,
                self.layout.policy().page_rounding_shift,
                self.align,
            ),
        }
    }

    /// Makes room for and allocates a page of the pool; returns its index.
    pub(super) fn grow(
        &mut self,
        pool: usize,
        rounded: u64,
        progress: &mut dyn Progress,
    ) -> Result<u32, MemoryError<S::Error>> {
        let Some(bytes) = self.page_bytes(pool, rounded) else {
            return Err(MemoryError::InvalidSize { size: rounded });
        };
        if self.capture.is_recording() {
            return Err(MemoryError::AllocationInCapture { bytes });
        }
        if self.segment.is_some() {
            self.check_carvable(bytes, rounded)?;
        }
        self.release_recent();
        if !self.capture.is_open() {
            self.make_room(pool, bytes)?;
        }
        self.check_limits(pool, bytes, rounded)?;
        let placed = if self.segment.is_some() {
            Placed::Carved(self.carve_page(bytes, rounded, progress)?)
        } else {
            Placed::Own(self.alloc_page(bytes, rounded)?)
        };
        Ok(self.add_page(pool, placed, bytes))
    }

    /// Releases idle pages before a page of `bytes` is taken: trimming
    /// (oldest idle first) while the bytes held would pass the trim limit,
    /// the pool's own idle pages while its cap would be passed, one page
    /// when the page budget is spent; flushes what that released when the
    /// held bytes (counting what is pending) would pass the limit.
    fn make_room(&mut self, pool: usize, bytes: u64) -> Result<(), MemoryError<S::Error>> {
        let policy = *self.layout.policy();
        let limit = self.trim_limit();
        let held = self.books.page_bytes().saturating_add(self.books.pending);
        if policy.trim_before_grow && held.saturating_add(bytes) > limit {
            // By the bytes of the pages: a carved page released goes back to
            // its reservation, where the new page may well fit without a
            // commit; chunks are decommitted only if the commit would still
            // pass the limit (see `segment.rs`).
            while self.books.page_bytes().saturating_add(bytes) > limit {
                let Some(i) = self.pages.lru_head() else {
                    break;
                };
                self.release_page(i);
            }
        }
        if self.pools[pool].over_cap(bytes).is_some() {
            // Slow path, only when the cap is reached: this pool's idle pages.
            let mut next = self.pages.lru_head();
            while let Some(i) = next {
                if self.pools[pool].over_cap(bytes).is_none() {
                    break;
                }
                next = self.pages.lru_next(i);
                if self.pages[i].pool as usize == pool {
                    self.release_page(i);
                }
            }
        }
        if self.pages.count() >= policy.max_pages {
            if let Some(i) = self.pages.lru_head() {
                self.release_page(i);
            }
        }
        let held = self.books.reserved.saturating_add(self.books.pending);
        if self.books.pending > 0
            && (held.saturating_add(bytes) > limit || !policy.trim_before_grow)
        {
            self.flush()?;
        }
        Ok(())
    }

    /// The pool cap and the page budget.
    fn check_limits(
        &self,
        pool: usize,
        bytes: u64,
        rounded: u64,
    ) -> Result<(), MemoryError<S::Error>> {
        if let Some(cap) = self.pools[pool].over_cap(bytes) {
            return Err(self.oom(
                rounded,
                OomCause::PoolCap {
                    pool: self.pools[pool].kind,
                    cap,
                },
            ));
        }
        let limit = self.layout.policy().max_pages;
        if self.pages.count() >= limit {
            return Err(self.oom(rounded, OomCause::PageLimit { limit }));
        }
        let held = self
            .books
            .reserved
            .saturating_add(self.books.carved)
            .saturating_add(self.books.pending);
        if held.saturating_add(bytes) > MAX_HELD {
            return Err(self.oom(rounded, OomCause::HeldLimit { limit: MAX_HELD }));
        }
        Ok(())
    }

    /// One storage allocation; on exhaustion (outside a capture window)
    /// every idle page is released, the storage flushed, and the allocation
    /// retried once.
    fn alloc_page(&mut self, bytes: u64, rounded: u64) -> Result<PageId, MemoryError<S::Error>> {
        self.storage_call("alloc", rounded, &mut NoWait, |s| s.alloc(bytes))
    }

    /// One storage call `op` (for a request of `rounded` bytes); on
    /// exhaustion outside a capture window, idle memory still waiting for
    /// the stream is waited for (as far as `progress` can), every idle page
    /// and chunk is given back, the storage flushed, and the call retried
    /// once. Other failures pass through typed.
    pub(super) fn storage_call<T>(
        &mut self,
        op: &'static str,
        rounded: u64,
        progress: &mut dyn Progress,
        mut call: impl FnMut(&mut S) -> Result<T, S::Error>,
    ) -> Result<T, MemoryError<S::Error>> {
        if self.flushes_held {
            return Err(MemoryError::CaptureElsewhere { bytes: rounded });
        }
        let first = match call(&mut self.storage) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if first.kind() != ErrorKind::OutOfMemory {
            return Err(MemoryError::Storage { op, source: first });
        }
        if self.capture.is_open() {
            return Err(self.oom(rounded, OomCause::Storage(first)));
        }
        // Idle memory still waiting for the stream is worth a wait here.
        if let Some(cursor) = self.awaiting() {
            self.wait_for(cursor, progress);
        }
        self.release_idle(true)?;
        self.flush()?;
        match call(&mut self.storage) {
            Ok(v) => Ok(v),
            Err(e) if e.kind() == ErrorKind::OutOfMemory => {
                Err(self.oom(rounded, OomCause::Storage(e)))
            }
            Err(source) => Err(MemoryError::Storage { op, source }),
        }
    }

    /// Enters a fresh page of `bytes` into the books, the table and its
    /// pool's engine; returns its index.
    fn add_page(&mut self, pool: usize, placed: Placed, bytes: u64) -> u32 {
        let mut page = match placed {
            Placed::Own(id) => {
                self.books.storage_allocs += 1;
                self.books.reserved += bytes;
                self.books.high_water = self
                    .books
                    .high_water
                    .max(self.books.reserved + self.books.pending);
                Page::new(id, bytes, pool as u8, self.books.reserves)
            }
            Placed::Carved(c) => {
                self.books.carved += bytes;
                self.books.high_water = self
                    .books
                    .high_water
                    .max(self.books.page_bytes() + self.books.pending);
                let mut p = Page::new(c.id, bytes, pool as u8, self.books.reserves);
                p.offset = c.offset;
                p.reservation = c.reservation;
                p.block = c.block;
                p
            }
        };
        page.live = 0;
        // The page budget (at most `MAX_PAGES`) keeps the table far from full.
        let i = self.pages.insert(page).unwrap_or(u32::MAX);
        let p = &mut self.pools[pool];
        p.stats.pages += 1;
        p.stats.reserved += bytes;
        if let Engine::Sliced(e) = &mut p.engine {
            // The fresh page is idle until `take` carves it.
            let first = e.add_page(i, bytes);
            self.pages[i].first_block = first;
            p.stats.idle_pages += 1;
            p.stats.idle_bytes += bytes;
        }
        i
    }
}
