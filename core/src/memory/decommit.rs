//! Giving committed chunks back: which idle chunks go (oldest first, the
//! smallest that covers what a commit needs, only those whose fence the
//! stream has passed and whose round trip the churn budget covers), waiting
//! for the stream when the caller can, and releasing reservations no page
//! uses.

use super::chunks::Moved;
use super::error::MemoryError;
use super::lanes::unusable_by;
use super::large::LARGE_LANE;
use super::manager::MemoryManager;
use super::progress::Progress;
use crate::arena::Key;
use crate::platform::Storage;

type Res<T, S> = Result<T, MemoryError<<S as Storage>::Error>>;

impl<S: Storage> MemoryManager<S> {
    /// Whether chunks may be decommitted now: never while a capture window
    /// of this manager is open or flushes are held (a stream of the device
    /// records a capture).
    pub(super) fn may_decommit(&self) -> bool {
        self.segment.is_some() && !self.flushes_held && !self.capture.is_open()
    }

    /// Decommits every chunk no page uses, when allowed; returns what went
    /// back. On a storage error the chunk stays committed (and counted).
    pub(super) fn decommit_idle(&mut self) -> Res<Moved, S> {
        self.decommit_idle_while(|_| true)
    }

    /// Decommits chunks no page uses that went idle at reserve count
    /// `cutoff` or earlier.
    pub(super) fn decommit_idle_since(&mut self, cutoff: u64) -> Res<Moved, S> {
        let mut moved = Moved::default();
        while self.may_decommit() {
            let Some(c) = self.seg().chunks.lru_head() else {
                break;
            };
            let ch = self.seg().chunks.chunk(c);
            if ch.idle_since > cutoff || ch.fence > self.books.completed {
                break;
            }
            let m = self.decommit_one(c)?;
            moved.chunks += m.chunks;
            moved.bytes += m.bytes;
        }
        Ok(moved)
    }

    /// Decommits idle chunks, oldest first, while `more` says so.
    fn decommit_idle_while(&mut self, mut more: impl FnMut(&Self) -> bool) -> Res<Moved, S> {
        let mut moved = Moved::default();
        while self.may_decommit() && more(self) {
            let Some(c) = self.seg().chunks.lru_head() else {
                break;
            };
            if self.seg().chunks.chunk(c).fence > self.books.completed {
                // The rest of the LRU waits for the stream too.
                break;
            }
            let m = self.decommit_one(c)?;
            moved.chunks += m.chunks;
            moved.bytes += m.bytes;
        }
        Ok(moved)
    }

    /// Decommits idle chunks until a commit of `need` bytes fits under
    /// `limit`: among the oldest few the churn budget covers, the smallest
    /// that covers what is missing (else the largest), so a small excess
    /// does not cost a large chunk that would have to be committed again.
    /// Chunks the budget refuses are passed over without counting among
    /// the few: a long run of them (small idle chunks, one per granule)
    /// must not hide a chunk behind them that may go (a large page's own).
    /// Chunks whose fence the stream has not completed are taken only
    /// after `progress` waited for it; if it cannot, the commit passes the
    /// limit. Each decommit is charged to the churn budget (`budget.rs`)
    /// unless the chunk is a large page's own (or goes in the pass below);
    /// a chunk the budget does not cover stays (unless the commit passes
    /// the idle cap, [`over_idle_cap`](Self::over_idle_cap)), and when that leaves the
    /// commit over the limit, the bytes held then become the level trimming
    /// keeps (hysteresis: the manager stops paying for round trips that do
    /// not keep its memory down). With `unusable_for: Some(lane)`, only
    /// chunks that cannot serve a page of `lane` are looked at
    /// ([`unusable`](Self::unusable): they go back free of the budget; the
    /// caller passes the trim floor), nothing settles, and the bytes of
    /// large pages' reservations that went are booked as owed to the large
    /// lane (`Books::owed_large`).
    pub(super) fn decommit_to_fit(
        &mut self,
        need: u64,
        limit: u64,
        unusable_for: Option<usize>,
        progress: &mut dyn Progress,
    ) -> Res<(), S> {
        let unusable_pass = unusable_for.is_some();
        const LOOK: usize = 32;
        while self.may_decommit() {
            let held = self.books.reserved + self.books.pending;
            let excess = (held + need).saturating_sub(limit);
            if excess == 0 {
                break;
            }
            // Past the idle cap, the budget's refusals do not hold.
            let capped = !unusable_pass && self.over_idle_cap(held + need);
            let completed = self.books.completed;
            let chunks = &self.seg().chunks;
            // (chunk, bytes) over the fenced chunks, and over all of them.
            let mut best = [None::<(u32, u64)>; 2];
            let mut largest = [None::<(u32, u64)>; 2];
            let mut next = chunks.lru_head();
            let mut refused = false;
            let mut looked = 0;
            while looked < LOOK {
                let Some(c) = next else {
                    break;
                };
                let ch = chunks.chunk(c);
                let bytes = chunks.bytes(ch);
                if unusable_for.is_some_and(|lane| !self.unusable(ch.map, lane)) {
                    next = chunks.lru_next(c);
                    continue;
                }
                let free = unusable_pass || self.exempt(ch.map);
                if !free && !capped && !self.affords(bytes) {
                    refused = true;
                    next = chunks.lru_next(c);
                    continue;
                }
                looked += 1;
                let scopes: &[usize] = if ch.fence <= completed { &[0, 1] } else { &[1] };
                for &k in scopes {
                    if bytes >= excess && best[k].is_none_or(|b| bytes < b.1) {
                        best[k] = Some((c, bytes));
                    }
                    if largest[k].is_none_or(|b| bytes > b.1) {
                        largest[k] = Some((c, bytes));
                    }
                }
                next = chunks.lru_next(c);
            }
            // The smallest chunk that covers the excess, else the largest;
            // fenced ones first, then one the caller waits for.
            let mut pick = None;
            for (fenced, any) in [(best[0], best[1]), (largest[0], largest[1])] {
                if let Some((c, _)) = fenced {
                    pick = Some(c);
                    break;
                }
                if let Some((c, _)) = any {
                    let fence = self.seg().chunks.chunk(c).fence;
                    if self.wait_for(fence, progress) {
                        pick = Some(c);
                        break;
                    }
                }
            }
            let Some(c) = pick else {
                if unusable_pass {
                    break;
                }
                self.note_overshoot(need);
                if refused {
                    // The budget keeps this much: trimming settles here.
                    self.books.trimming.settled = self.books.trimming.settled.max(held + need);
                }
                break;
            };
            let ch = *self.seg().chunks.chunk(c);
            let bytes = self.seg().chunks.bytes(&ch);
            // Read before the decommit: a large reservation goes with its
            // last chunk.
            let exempt = self.exempt(ch.map);
            if !(exempt || unusable_pass) {
                if capped && !self.affords(bytes) {
                    self.books.trimming.capped_decommits += 1;
                }
                self.charge(bytes);
                let now = self.books.reserves;
                self.books
                    .trims
                    .trimmed(ch.map, ch.start, ch.start + ch.len, now);
            }
            self.decommit_one(c)?;
            if unusable_pass && exempt {
                self.books.owed_large = self.books.owed_large.saturating_add(bytes);
            }
        }
        Ok(())
    }

    /// Whether chunks of map `map` go back free of the churn budget: a
    /// large-page reservation's, whose idle memory only large pages can
    /// use.
    pub(super) fn exempt(&self, map: u32) -> bool {
        self.seg().lane_of(map) == LARGE_LANE
    }

    /// Whether idle chunks of map `map` cannot serve a new page of lane
    /// `lane`: another lane's (every lane's reservations are its own), and
    /// for a large page any (see [`lanes`](super::lanes)). Such chunks go
    /// back free of the churn budget once a commit would pass the trim
    /// floor: kept in the headroom, they are what raises the peak, and the
    /// page being committed could never have used them.
    pub(super) fn unusable(&self, map: u32, lane: usize) -> bool {
        unusable_by(self.seg().lane_of(map), lane)
    }

    /// Asks `progress` to wait until the stream completed `cursor`; whether
    /// it did.
    pub(super) fn wait_for(&mut self, cursor: u64, progress: &mut dyn Progress) -> bool {
        match progress.wait(cursor) {
            Some(done) => {
                self.books.waits += 1;
                self.complete(done);
                done >= cursor
            }
            None => false,
        }
    }

    pub(super) fn decommit_one(&mut self, c: u32) -> Res<Moved, S> {
        let mut moved = Moved::default();
        {
            let seg = self.seg();
            let ch = *seg.chunks.chunk(c);
            let (offset, bytes) = seg.chunks.range_of(c);
            let id = seg.reservations[seg.chunks.owner_of(ch.map)].id;
            self.storage
                .decommit(id, offset, bytes)
                .map_err(|source| MemoryError::Storage {
                    op: "decommit",
                    source,
                })?;
            self.seg_mut().chunks.remove(c);
            self.books.decommits += 1;
            self.books.reserved -= bytes;
            self.books.committed -= bytes;
            moved.chunks += 1;
            moved.bytes += bytes;
            // A large page's own reservation goes with its last chunk,
            // unless the policy keeps it for the next large page.
            let owner = self.seg().chunks.owner_of(ch.map);
            let r = self.seg().reservations[owner];
            if usize::from(r.lane) == LARGE_LANE
                && r.pages == 0
                && self.seg().chunks.is_bare(r.map)
                && !self.layout.policy().keep_bare_reservations
            {
                if let Some(key) = self.seg().reservations.key_at(owner) {
                    self.release_reservation(key);
                }
            }
        }
        Ok(moved)
    }

    /// Releases every reservation no page is carved from (after
    /// [`decommit_idle`](Self::decommit_idle)); returns how many.
    pub(super) fn release_empty_reservations(&mut self) -> u64 {
        if !self.may_decommit() {
            return 0;
        }
        let mut released = 0;
        let mut i = 0;
        loop {
            let seg = self.seg();
            let Some((key, r)) = seg.reservations.iter().nth(i) else {
                break;
            };
            let r = *r;
            if r.pages != 0 || !seg.chunks.is_bare(r.map) {
                i += 1;
                continue;
            }
            self.release_reservation(key);
            released += 1;
        }
        released
    }

    /// Releases reservation `key`, every chunk of it decommitted: its
    /// block in its lane's engine, its chunk map (and the trims remembered
    /// in it) and its addresses (freed at the next flush).
    fn release_reservation(&mut self, key: Key) {
        let seg = self.seg_mut();
        let Some(r) = seg.reservations.remove(key) else {
            return;
        };
        seg.engines[usize::from(r.lane)].remove_page(r.first_block);
        seg.chunks.remove_map(r.map);
        self.books.trims.forget_map(r.map);
        self.storage.dealloc(r.id);
    }
}
