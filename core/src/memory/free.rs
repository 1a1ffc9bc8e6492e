//! The free path: a slice's holds (its owner, a capture window, a graph
//! pin), giving its bytes back to the pool when the last one drops, and
//! settling the page an exclusive pool freed last.

use super::error::MemoryError;
use super::handle::SliceHandle;
use super::layout::PoolKind;
use super::manager::MemoryManager;
use super::pool::Engine;
use super::slots::{OWNER, PIN, Slot, WINDOW};
use super::tlsf::NIL;
use crate::platform::Storage;

impl<S: Storage> MemoryManager<S> {
    /// Frees a slice. Its bytes go back to the pool unless a capture window
    /// or a graph pin still holds it (then they go back when released).
    ///
    /// Once the last hold drops, the bytes may be handed out again, and on
    /// a resizable storage given back in place at once: the caller frees a
    /// slice only when no queued work touches it any more (the device frees
    /// through its fence-gated drop queue). A slice that queued work of the
    /// manager's own stream may still touch is freed with
    /// [`free_ordered`](Self::free_ordered).
    ///
    /// Inside a capture the captured work may touch the slice on every
    /// replay, whenever it was reserved: the window keeps it (its bytes
    /// serve nothing else), and [`end_capture`](Self::end_capture) hands it
    /// to the graph like the slices reserved inside.
    pub fn free(&mut self, h: SliceHandle) -> Result<(), MemoryError<S::Error>> {
        let s = self.slot(h)?;
        if s.holds & OWNER == 0 {
            return Err(MemoryError::AlreadyFreed(h));
        }
        self.drop_owner(h.index);
        Ok(())
    }

    /// Drops the owner's hold; inside a capture the window takes one first.
    pub(super) fn drop_owner(&mut self, index: u32) {
        if self.capture.is_recording() {
            let s = &mut self.slots[index];
            if s.holds & WINDOW == 0 {
                s.holds |= WINDOW;
                self.window.push(index);
            }
        }
        self.drop_hold(index, OWNER);
    }

    /// Releases a graph's pin on a slice returned by
    /// [`end_capture`](Self::end_capture). A slice two graphs pin (reserved
    /// in one capture, freed in a later one) stays until both unpinned it:
    /// each `end_capture` that handed it out owes one `unpin`.
    pub fn unpin(&mut self, h: SliceHandle) -> Result<(), MemoryError<S::Error>> {
        let s = self.slot(h)?;
        if s.holds & PIN == 0 {
            return Err(MemoryError::NotPinned(h));
        }
        let s = &mut self.slots[h.index];
        s.pins = s.pins.saturating_sub(1);
        if s.pins == 0 {
            self.drop_hold(h.index, PIN);
        }
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
    pub(super) fn give_back(&mut self, s: &Slot) {
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

    /// Finishes releasing a page whose space [`give_back`](Self::give_back)
    /// already returned to its reservation.
    pub(super) fn settle(&mut self, i: u32) {
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
}
