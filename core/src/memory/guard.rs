//! Guarding carved pages against stranded memory: free space inside a
//! committed chunk some page still uses, which cannot be given back (see
//! [`StrandGuard`]).
//!
//! Stranded bytes are known at no cost: what is committed, less the carved
//! pages, less the idle chunks. The adaptive guard turns on when stranding
//! made the manager grow (a commit passed the trim limit while the live
//! bytes were below their peak and more than 1/32 of the memory held was
//! stranded, and at least eight granules) and off again once less than
//! 1/64 is, or once the churn budget (`budget.rs`) no longer covers its
//! calls: a decommit it makes is charged to the budget and made only if
//! covered.

use super::error::MemoryError;
use super::layout::StrandGuard;
use super::manager::MemoryManager;
use super::progress::Progress;
use crate::platform::Storage;

type Res<T, S> = Result<T, MemoryError<<S as Storage>::Error>>;

/// The adaptive guard turns on above `held >> ON_SHIFT` stranded bytes...
const ON_SHIFT: u32 = 5;
/// ... and off below `held >> OFF_SHIFT`.
const OFF_SHIFT: u32 = 6;
/// Stranding below this many granules never turns the adaptive guard on
/// (a small manager strands a granule or two by nature).
const FLOOR_GRANULES: u64 = 8;

impl<S: Storage> MemoryManager<S> {
    /// Bytes committed in reservations that no page uses and that lie in
    /// chunks some page still uses, so they cannot be given back: free
    /// space stranded by chunk boundaries (0 over a storage without
    /// resizable pages).
    pub fn stranded_bytes(&self) -> u64 {
        self.segment.as_ref().map_or(0, |s| {
            self.books
                .committed
                .saturating_sub(self.books.carved + s.chunks.idle_bytes)
        })
    }

    /// Bytes of committed chunks no page uses (given back when memory is
    /// needed; 0 over a storage without resizable pages).
    pub fn idle_committed_bytes(&self) -> u64 {
        self.segment.as_ref().map_or(0, |s| s.chunks.idle_bytes)
    }

    /// Whether carving guards against stranded memory now (updates the
    /// adaptive guard's state).
    pub(super) fn guarding(&mut self) -> bool {
        self.books.guarded = match self.layout.policy().strand_guard {
            StrandGuard::Off => false,
            StrandGuard::On => true,
            _ => {
                self.books.guarded
                    && self.stranded_bytes() >= self.books.reserved >> OFF_SHIFT
                    && self.affords_guard()
            }
        };
        self.books.guarded
    }

    /// A commit of `need` bytes passes the trim limit with nothing idle
    /// left to give back: the adaptive guard turns on if stranded memory is
    /// why (the live bytes are below their peak, and much is stranded).
    pub(super) fn note_overshoot(&mut self, need: u64) {
        let floor = self
            .segment
            .as_ref()
            .map_or(0, |s| s.chunks.granule().saturating_mul(FLOOR_GRANULES));
        let stranded = self.stranded_bytes();
        if self.layout.policy().strand_guard == StrandGuard::Adaptive
            && self.books.live.saturating_add(need) <= self.books.peak_live
            && stranded > self.books.reserved >> ON_SHIFT
            && stranded > floor
            && self.affords_guard()
        {
            self.books.guarded = true;
        }
    }

    /// Whether the churn budget covers the round trip of one granule: the
    /// adaptive guard is on only while it does (its decommits and extra
    /// commits are calls made by choice).
    fn affords_guard(&self) -> bool {
        let granule = self.segment.as_ref().map_or(0, |s| s.chunks.granule());
        self.affords(granule)
    }

    /// Idle chunks at the ends of granules `[lo, hi)` of reservation map
    /// `map` that a page there would use only in part are decommitted
    /// rather than woken: their rest would be stranded while the page
    /// lives. Charged to the churn budget, and made only if it covers
    /// them, unless the map is a large page's own reservation (always
    /// shed: a smaller page must not strand a larger one's chunk). While
    /// the guard is off, a shared reservation's chunk goes only if the
    /// page would leave at least `MemoryPolicy::shed_partial_granules` of
    /// it unused. A chunk whose fence the stream has not passed goes only
    /// if `progress` waits for it.
    pub(super) fn shed_partial(
        &mut self,
        map: u32,
        lo: u32,
        hi: u32,
        progress: &mut dyn Progress,
    ) -> Res<(), S> {
        for g in [lo, hi - 1] {
            if !self.may_decommit() {
                break;
            }
            let Some(c) = self.seg().chunks.at_granule(map, g) else {
                continue;
            };
            let ch = *self.seg().chunks.chunk(c);
            let covered = hi.min(ch.start + ch.len) - lo.max(ch.start);
            let bytes = self.seg().chunks.bytes(&ch);
            let exempt = self.exempt(map);
            let worth = self.books.guarded
                || exempt
                || ch.len - covered >= self.layout.policy().shed_partial_granules;
            if ch.users != 0 || covered == ch.len || !worth || !(exempt || self.affords(bytes)) {
                continue;
            }
            if ch.fence <= self.books.completed || self.wait_for(ch.fence, progress) {
                if !exempt {
                    self.charge(bytes);
                }
                self.decommit_one(c)?;
            }
        }
        Ok(())
    }
}
