//! Giving memory back: releasing idle pages to the storage, flushing it
//! (and holding flushes while any stream records a capture), trimming
//! limits, periodic release, cleanup and layout swaps.

use alloc::vec::Vec;

use super::error::MemoryError;
use super::layout::MemoryLayout;
use super::manager::{MemoryManager, Released};
use super::pool::Engine;
use super::rounding::shr;
use super::segment::Carving;
use crate::arena::NIL;
use crate::platform::Storage;

impl<S: Storage> MemoryManager<S> {
    /// Hands an idle page back to the storage (not flushed).
    pub(super) fn release_page(&mut self, i: u32) {
        let page = self.pages.remove(i);
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
        if page.reservation != NIL {
            // Carved: back to its reservation; chunks it leaves unused are
            // decommitted by the caller's `decommit_idle`.
            let c = Carving {
                id: page.id,
                offset: page.offset,
                reservation: page.reservation,
                block: page.block,
            };
            self.uncarve(c, page.size, true, page.idle_since);
            self.books.carved -= page.size;
            return;
        }
        self.storage.dealloc(page.id);
        self.books.reserved -= page.size;
        self.books.pending += page.size;
    }

    /// Holds or resumes the storage while another stream records a
    /// capture: drivers capture device-wide and forbid both releasing and
    /// allocating memory then (either would invalidate the capture), and the
    /// device holds every manager's storage while any stream records. While
    /// held, pages handed back to the storage stay pending (counted in
    /// [`held_bytes`](Self::held_bytes)) instead of being released, and a
    /// request that would need a new page or a commit fails with
    /// [`MemoryError::CaptureElsewhere`] before the storage is asked (what
    /// the manager holds still serves; the recording stream's own manager
    /// refuses with [`MemoryError::AllocationInCapture`] first). Resuming
    /// flushes what is pending, unless this manager's own stream records a
    /// capture: then it waits for the next flush after it.
    pub fn hold_flushes(&mut self, hold: bool) -> Result<(), MemoryError<S::Error>> {
        self.flushes_held = hold;
        if !hold && self.books.pending > 0 {
            self.flush()?;
        }

        Ok(())
    }

    /// Flushes the storage, unless flushes are held or this manager's own
    /// stream records a capture (a flush synchronizes: inside the capture
    /// it would invalidate it): what is pending then waits for the next
    /// flush.
    pub(super) fn flush(&mut self) -> Result<(), MemoryError<S::Error>> {
        if self.flushes_held || self.capture.is_recording() {
            return Ok(());
        }
        self.storage
            .flush()
            .map_err(|source| MemoryError::Storage {
                op: "flush",
                source,
            })?;
        self.books.pending = 0;
        Ok(())
    }

    /// Releases every idle page and decommits every idle chunk (persistent
    /// pages and empty reservations too when `all`).
    pub(super) fn release_idle(&mut self, all: bool) -> Result<Released, MemoryError<S::Error>> {
        self.release_recent();
        let mut r = Released::default();
        while let Some(i) = self.pages.lru_head() {
            r.pages += 1;
            r.bytes += self.pages[i].size;
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
        if self.segment.is_some() {
            // Carved pages went back to their reservations: what they used
            // is counted by the chunks decommitted, not by the pages.
            r.bytes = 0;
            let m = self.decommit_idle()?;
            r.bytes += m.bytes;
            if all {
                self.release_empty_reservations();
            }
        }
        Ok(r)
    }

    /// Releases pages idle for a whole period (see
    /// [`MemoryPolicy::release_idle_after`](super::MemoryPolicy::release_idle_after)).
    pub(super) fn periodic(&mut self) -> Result<(), MemoryError<S::Error>> {
        let Some(period) = self.layout.policy().release_idle_after else {
            self.books.next_periodic = u64::MAX;
            return Ok(());
        };
        if self.capture.is_open() {
            return Ok(());
        }
        self.release_recent();
        let period = period.get();
        let now = self.books.reserves;
        self.books.next_periodic = now.saturating_add(period);
        let cutoff = now.saturating_sub(period);
        let mut any = false;
        while let Some(i) = self.pages.lru_head() {
            if self.pages[i].idle_since > cutoff {
                break;
            }
            self.release_page(i);
            any = true;
        }
        if self.segment.is_some() {
            self.decommit_idle_since(cutoff)?;
        }
        if any {
            self.flush()?;
        }
        Ok(())
    }

    /// What trimming keeps the bytes held under: the most ever held, or the
    /// peak of live bytes plus the policy's headroom, whichever is larger
    /// (and no lower than where the churn budget settled it, see
    /// `decommit_to_fit`).
    pub(super) fn trim_limit(&self) -> u64 {
        self.trim_floor()
            .max(self.books.peak_live.saturating_add(self.trim_headroom()))
    }

    /// The trim limit without the headroom: the bytes the pages and the
    /// live data have already needed (the most ever held, the live peak,
    /// the level the churn budget settled at).
    pub(super) fn trim_floor(&self) -> u64 {
        self.needed_bytes().max(self.books.trimming.settled)
    }

    /// The bytes the pages and the live data have needed, settling aside:
    /// the most ever held, or the live peak.
    pub(super) fn needed_bytes(&self) -> u64 {
        self.books.high_water.max(self.books.peak_live)
    }

    /// The policy's trim headroom: the live peak by its shift.
    pub(super) fn trim_headroom(&self) -> u64 {
        shr(
            self.books.peak_live,
            self.layout.policy().trim_headroom_shift,
        )
    }

    /// Releases every idle page (the persistent pool's too), then flushes
    /// the storage. Refused while a capture window is open.
    pub fn cleanup(&mut self) -> Result<Released, MemoryError<S::Error>> {
        if self.capture.is_open() {
            return Err(MemoryError::WindowOpen {
                phase: self.capture.phase(),
            });
        }
        let r = self.release_idle(true)?;
        self.flush()?;
        Ok(r)
    }

    /// Gives everything back to the storage — every page, every chunk and
    /// every reservation, whatever is still allocated in them — and flushes
    /// it; the manager is then as a new one over the same storage and
    /// layout (every earlier slice handle stale, its counters at zero).
    /// For memory that no queued work touches any more and none can: a
    /// device closes each of its managers when it is torn down, after its
    /// queued work completed (handles that outlive it can no longer reach
    /// their bytes), so a storage that frees nothing on drop (a firmware
    /// allocator, the mock's) loses nothing either. Every call is made even
    /// when one fails; the first error is returned (the storage keeps what
    /// failed: a reservation whose chunk could not be decommitted is not
    /// passed to `dealloc`).
    pub fn close(&mut self) -> Result<(), MemoryError<S::Error>> {
        let mut first = None;
        let plain: Vec<_> = self
            .pages
            .iter()
            .filter(|p| p.reservation == NIL)
            .map(|p| p.id)
            .collect();
        for id in plain {
            self.storage.dealloc(id);
        }
        if let Some(seg) = self.segment.take() {
            for (_, r) in seg.reservations.iter() {
                let mut all = true;
                for c in seg.chunks.chunks_of(r.map) {
                    let (offset, bytes) = seg.chunks.range_of(c);
                    if let Err(source) = self.storage.decommit(r.id, offset, bytes) {
                        all = false;
                        first.get_or_insert(MemoryError::Storage {
                            op: "decommit",
                            source,
                        });
                    }
                }
                if all {
                    self.storage.dealloc(r.id);
                }
            }
        }
        self.flushes_held = false;
        if let Err(source) = self.storage.flush() {
            first.get_or_insert(MemoryError::Storage {
                op: "flush",
                source,
            });
        }
        // As new: `new` leaves exactly this state.
        self.pages.clear();
        self.slots.clear();
        self.books = Default::default();
        self.capture = crate::stream::CaptureState::new();
        self.window.clear();
        self.persistent_depth = 0;
        self.build_pools();
        match first {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// Swaps the layout. Only while nothing is live (else
    /// [`MemoryError::InUse`] with the bytes in use) and no capture window is
    /// open; every held page is released and the storage flushed. Over a
    /// resizable storage, while flushes are held (another stream records a
    /// capture) or while memory freed in stream order waits for the stream
    /// ([`awaiting`](Self::awaiting)), reservations cannot be given back
    /// yet: `InUse` with 0 bytes, nothing swapped.
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
        self.release_idle(true)?;
        self.flush()?;
        let reservations = self.segment.as_ref().map_or(0, |s| s.reservation_count());
        if self.pages.count() != 0 || reservations != 0 {
            return Err(MemoryError::InUse { bytes: 0 });
        }
        self.pages.clear();
        self.layout = layout;
        self.build_pools();
        Ok(())
    }
}
