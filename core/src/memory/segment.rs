//! Pages carved from reservations, over a storage with resizable pages
//! (virtual memory): the manager reserves large address ranges, carves each
//! pool's pages from them (best fit, neighbours coalesced; a growing
//! buffer's large steps, and every large page without
//! `MemoryPolicy::large_page_space`, in a reservation of large pages, at
//! the start of an empty one or behind a live page over committed
//! granules, see [`large`](super::large) and [`growth`](super::growth)),
//! commits the chunks its pages need and
//! decommits, in place and without a device synchronization, chunks no
//! page uses when the memory is needed.
//!
//! The pools above do not change: a page is a page, wherever it comes from.
//! What changes is what a page costs: pages share the driver's granules
//! (a 3 MiB page and a 1 MiB page fill two granules, not three), growing
//! costs one commit per chunk rather than one allocation per page, and
//! giving memory back costs a decommit rather than a synchronizing free.
//!
//! How much to commit at once: the granules a new page needs, reaching
//! ahead over the free space after it to at least the policy's commit step
//! (a fraction of what the manager holds, so the number of commits grows
//! with the logarithm of the memory, not with it); when trimming, never
//! past what pages and live data already needed (the trim limit without
//! its headroom, less the room large pages gave back for the others to
//! grow in), so a new peak costs what the page needs and no more, and no
//! chunk holds committed memory that no page asked for beside a page that
//! lives on.
//! Carved pages take their exact size (the alignment only; large pages
//! whole granules, so no two share one): their space goes back to the
//! reservation when they are freed and serves any size.
//!
//! When to give back: a chunk no page uses stays committed (a page carved
//! over it later costs no call) until a commit would pass the trim limit
//! (then the oldest idle chunks go, the smallest that covers the excess
//! first; chunks the committing page could never use, another lane's
//! and, for a large page, any (see [`lanes`](super::lanes)), already once
//! it would pass the trim floor), until it has been idle for the
//! periodic-release period, or until `cleanup` or an out-of-memory retry;
//! never while a capture window is open on the manager or flushes are
//! held for another stream's capture. Large pages placed in reservations
//! of large pages (above) keep them for the next large page once bare
//! (`MemoryPolicy::keep_bare_reservations`) or give them back whole with
//! their last chunk.

use super::chunks::ChunkTable;
use super::error::{MemoryError, OomCause};
use super::growth::{GrowthSteps, LargePage};
use super::lanes::LANES;
use super::large::LARGE_LANE;
use super::layout::MemoryPolicy;
use super::manager::{MAX_HELD, MemoryManager};
use super::progress::Progress;
use super::rounding::{round_up, shr};
use super::tlsf::SlicedEngine;
use crate::arena::{Arena, NIL};
use crate::platform::{ErrorKind, PageId, PlatformError, ResizableTerms, Storage};

type Res<T, S> = Result<T, MemoryError<<S as Storage>::Error>>;

/// One reserved address range.
#[derive(Clone, Copy, Debug)]
pub(super) struct Reservation {
    pub id: PageId,
    pub size: u64,
    /// The engine's block at offset 0.
    pub first_block: u32,
    /// The chunk map.
    pub map: u32,
    /// Pages carved from it.
    pub pages: u32,
    /// The lane it serves.
    pub lane: u8,
}

/// The reservations of a manager and the chunks committed in them.
#[derive(Debug)]
pub(super) struct Segment {
    terms: ResizableTerms,
    /// Pages of at least this many bytes are large.
    pub large: u64,
    /// Pages of whole granules, at least this many, start on a granule
    /// boundary where their block leaves room
    /// (`MemoryPolicy::aligned_page_granules`; 0: never).
    pub aligned_granules: u32,
    /// Large pages may go behind a live page over committed granules
    /// (`MemoryPolicy::share_large_reservations`; see
    /// [`large_home`](Self::large_home)).
    pub share_large: bool,
    /// Large pages share lane 0 with the others, but for growing buffers'
    /// steps (`MemoryPolicy::large_page_space`; see
    /// [`growth`](super::growth)).
    pub large_space: bool,
    /// The growth steps among the live large pages (tracked only with
    /// `large_space`).
    pub growth: GrowthSteps,
    /// Pages below this many bytes go to the small lane (one granule with
    /// `MemoryPolicy::small_page_lane`, else 0; see [`lanes`](super::lanes)).
    pub small: u64,
    pub engines: [SlicedEngine; LANES],
    pub reservations: Arena<Reservation>,
    pub chunks: ChunkTable,
}

/// Where a carved page lives.
#[derive(Clone, Copy, Debug)]
pub(super) struct Carving {
    /// The reservation's storage id.
    pub id: PageId,
    /// The page's offset in it.
    pub offset: u64,
    /// The reservation (index) and the engine's block.
    pub reservation: u32,
    pub block: u32,
}

impl Segment {
    /// Reservations of a storage with `terms`, pages aligned to `align`,
    /// placed as `policy` says (which pages are large, which go on granule
    /// boundaries, whether large pages go behind live ones).
    pub(super) fn new(terms: ResizableTerms, align: u64, policy: &MemoryPolicy) -> Self {
        Self {
            terms,
            large: terms
                .granularity
                .saturating_mul(u64::from(policy.large_page_granules)),
            aligned_granules: policy.aligned_page_granules,
            share_large: policy.share_large_reservations,
            large_space: policy.large_page_space,
            growth: GrowthSteps::default(),
            small: if policy.small_page_lane {
                terms.granularity
            } else {
                0
            },
            engines: core::array::from_fn(|_| SlicedEngine::new(align).best_fit()),
            reservations: Arena::new(),
            chunks: ChunkTable::new(terms.granularity),
        }
    }

    /// The size of a carved page for a request of `rounded` bytes: the
    /// exact size (whole multiples of `align`) below the large-page size;
    /// whole granules from it. A large page lives in a reservation of its
    /// own that a growing buffer's next, larger page shares: a page ending
    /// inside a granule would leave that granule to the next page carved
    /// after it, whose chunk would then keep the whole chunk of the page
    /// before committed for as long as it lives (a growing pair of caches:
    /// up to 1.25x the peak live on fresh workloads). In whole granules
    /// no two large pages share one, and the padding stays under a granule
    /// (0.4 % of a large page).
    pub(super) fn page_size(&self, rounded: u64, align: u64) -> Option<u64> {
        if rounded >= self.large {
            round_up(rounded, self.chunks.granule())
        } else {
            round_up(rounded, align)
        }
    }

    /// The page carved as `block` of `lane` as the growth tracker sees it:
    /// `None` unless it is large and the tracker is in use (`large_space`).
    fn tracked_page(&self, lane: usize, block: u32) -> Option<LargePage> {
        let size = self.engines[lane].block_size(block);
        (self.large_space && size >= self.large).then_some(LargePage {
            lane: lane as u8,
            block,
            size,
        })
    }

    /// Bytes one reservation spans by default: the storage's largest, at
    /// most what a chunk map addresses, in whole granules. No page larger
    /// than this is ever carved: its granules could not all be committed.
    pub(super) fn reservation_size(&self) -> u64 {
        let g = self.chunks.granule();
        self.terms
            .max_reservation
            .min(self.chunks.max_reservation())
            & !(g - 1)
    }

    /// The fence of the youngest idle chunk (the highest, the LRU being
    /// ordered by fence).
    pub(super) fn youngest_idle_fence(&self) -> Option<u64> {
        let c = self.chunks.lru_tail()?;
        Some(self.chunks.chunk(c).fence)
    }

    /// Reservations held.
    pub(super) fn reservation_count(&self) -> usize {
        self.reservations.len()
    }

    /// Raises the fence chunks going idle from now on must wait for.
    pub(super) fn set_fence(&mut self, cursor: u64) {
        self.chunks.fence = self.chunks.fence.max(cursor);
    }
}

impl<S: Storage> MemoryManager<S> {
    pub(super) fn seg(&self) -> &Segment {
        match &self.segment {
            Some(s) => s,
            None => panic!("carved pages exist only over a resizable storage"),
        }
    }

    pub(super) fn seg_mut(&mut self) -> &mut Segment {
        match &mut self.segment {
            Some(s) => s,
            None => panic!("carved pages exist only over a resizable storage"),
        }
    }

    /// Carves a page of `bytes` and commits what it needs.
    pub(super) fn carve_page(
        &mut self,
        bytes: u64,
        rounded: u64,
        progress: &mut dyn Progress,
    ) -> Res<Carving, S> {
        let lane = self.seg().lane_for(bytes);
        let c = match self.seg_mut().take_in(lane, bytes) {
            Some(c) => c,
            None => {
                self.add_reservation(bytes, rounded, lane)?;
                match self.seg_mut().take_in(lane, bytes) {
                    Some(c) => c,
                    None => return Err(MemoryError::InvalidSize { size: rounded }),
                }
            }
        };
        let r = self.seg().reservations[c.page];
        let carving = Carving {
            id: r.id,
            offset: c.offset,
            reservation: c.page,
            block: c.block,
        };
        let stamp = self.books.reserves;
        let seg = self.seg_mut();
        seg.reservations[c.page].pages += 1;
        if let Some(page) = seg.tracked_page(lane, c.block) {
            seg.growth.carved(stamp, page);
        }
        if let Err(e) = self.back(carving, bytes, rounded, progress) {
            let now = self.books.reserves;
            self.uncarve(carving, bytes, false, now);
            return Err(e);
        }
        Ok(carving)
    }

    /// Gives a carved page back to its reservation; chunks it leaves
    /// unused go idle with age `since` (decommitted under pressure, see
    /// [`decommit_idle`](Self::decommit_idle)). `used`: the page's chunks
    /// had counted it.
    pub(super) fn uncarve(&mut self, c: Carving, bytes: u64, used: bool, since: u64) {
        self.give_space(c);
        self.drop_uses(c, bytes, used, since);
    }

    /// The first half of [`uncarve`](Self::uncarve): the page's bytes go
    /// back to its reservation's free space; the page still counts in its
    /// reservation and its chunks.
    pub(super) fn give_space(&mut self, c: Carving) {
        let stamp = self.books.reserves;
        let seg = self.seg_mut();
        let lane = usize::from(seg.reservations[c.reservation].lane);
        if let Some(page) = seg.tracked_page(lane, c.block) {
            seg.growth.freed(stamp, page);
        }
        seg.engines[lane].give(c.block);
    }

    /// The second half of [`uncarve`](Self::uncarve): the page stops
    /// counting in its reservation and (`used`) its chunks.
    pub(super) fn drop_uses(&mut self, c: Carving, bytes: u64, used: bool, since: u64) {
        let seg = self.seg_mut();
        seg.reservations[c.reservation].pages -= 1;
        if used {
            let map = seg.reservations[c.reservation].map;
            let (lo, hi) = seg.chunks.span(c.offset, bytes);
            seg.chunks.release_span(map, lo, hi, since);
        }
    }

    /// Carves `bytes` again where page `c` (given back by
    /// [`give_space`](Self::give_space), still counted in its chunks) was,
    /// if that is exactly where a new page of `bytes` would be carved now;
    /// returns the new block. The page keeps its reservation and chunk uses,
    /// so this costs what a new carving would, and no more: the same
    /// placement, the same chunks.
    pub(super) fn recarve(&mut self, c: Carving, bytes: u64) -> Option<u32> {
        let seg = self.seg_mut();
        let lane = usize::from(seg.reservations[c.reservation].lane);
        // The page still counts in its reservation: as released, it would
        // leave that reservation empty.
        let f = seg.placement(lane, bytes, c.reservation)?;
        if f.page != c.reservation || f.offset != c.offset {
            return None;
        }
        Some(seg.engines[lane].carve_at(f.block, f.offset, bytes).block)
    }

    /// Refuses a page of `bytes` that no reservation can hold (so every
    /// granule a carved page spans can be committed and counted), before
    /// anything is released or asked of the storage.
    pub(super) fn check_carvable(&self, bytes: u64, rounded: u64) -> Res<(), S> {
        let max = self.seg().reservation_size();
        if bytes > max {
            return Err(self.oom(
                rounded,
                OomCause::LargerThanReservation { page: bytes, max },
            ));
        }
        Ok(())
    }

    /// A new reservation large enough for a page of `bytes`.
    fn add_reservation(&mut self, bytes: u64, rounded: u64, lane: usize) -> Res<(), S> {
        self.check_carvable(bytes, rounded)?;
        // An address reservation is a storage call like any other: none
        // inside a capture, none while another stream records.
        if self.capture.is_recording() {
            return Err(MemoryError::AllocationInCapture { bytes: rounded });
        }
        if self.flushes_held {
            return Err(MemoryError::CaptureElsewhere { bytes: rounded });
        }
        let g = self.seg().chunks.granule();
        let Some(need) = round_up(bytes, g) else {
            return Err(MemoryError::InvalidSize { size: rounded });
        };
        // A large page gets a reservation of its own, twice its size: it
        // comes and goes whole, like a page from `alloc`, without a sync,
        // and a buffer that grows (a new, larger page, then the old one
        // freed) finds the reservation it left empty long enough, over its
        // committed chunks, and commits only the growth. Address space
        // costs the same at any size; a reservation only 1.5x the page is
        // outgrown within a few steps of a cache growing by 1.25x.
        let size = if lane == LARGE_LANE {
            need.saturating_mul(2)
                .min(self.seg().reservation_size().max(need))
        } else {
            self.seg().reservation_size()
        };
        if self.address_space().saturating_add(size) > MAX_HELD {
            return Err(self.oom(rounded, OomCause::HeldLimit { limit: MAX_HELD }));
        }
        let id = match self.storage.reserve(size) {
            Ok(id) => id,
            Err(e) if e.kind() == ErrorKind::OutOfMemory => {
                return Err(self.oom(rounded, OomCause::Storage(e)));
            }
            Err(source) => {
                return Err(MemoryError::Storage {
                    op: "reserve",
                    source,
                });
            }
        };
        let seg = self.seg_mut();
        let r = Reservation {
            id,
            size,
            first_block: NIL,
            map: NIL,
            pages: 0,
            lane: lane as u8,
        };
        let Ok(key) = seg.reservations.insert(r) else {
            self.storage.dealloc(id);
            return Err(self.oom(rounded, OomCause::PageLimit { limit: u32::MAX }));
        };
        let i = key.index;
        let map = seg.chunks.add_map(i).unwrap_or(NIL);
        let first = seg.engines[lane].add_page(i, size);
        let r = &mut seg.reservations[i];
        r.map = map;
        r.first_block = first;
        Ok(())
    }

    /// Commits what page `c` of `bytes` needs (and ahead of it, up to the
    /// commit step); on failure the uses it took are given back.
    fn back(
        &mut self,
        c: Carving,
        bytes: u64,
        rounded: u64,
        progress: &mut dyn Progress,
    ) -> Res<(), S> {
        let seg = self.seg();
        let map = seg.reservations[c.reservation].map;
        let (lo, hi) = seg.chunks.span(c.offset, bytes);
        if self.guarding() || self.exempt(map) || self.layout.policy().shed_partial_granules > 0 {
            self.shed_partial(map, lo, hi, progress)?;
        }
        let seg = self.seg_mut();
        let (_, gaps) = seg.chunks.use_span(map, lo, hi);
        if gaps == 0 {
            return Ok(());
        }
        let result = self.commit_gaps(c, bytes, rounded, (map, lo, hi), gaps, progress);
        if result.is_err() {
            let now = self.books.reserves;
            self.seg_mut().chunks.release_span(map, lo, hi, now);
        }
        result
    }

    fn commit_gaps(
        &mut self,
        c: Carving,
        bytes: u64,
        rounded: u64,
        (map, lo, hi): (u32, u32, u32),
        gaps: u32,
        progress: &mut dyn Progress,
    ) -> Res<(), S> {
        let g = self.seg().chunks.granule();
        let need = u64::from(gaps) * g;
        if self.capture.is_recording() {
            return Err(MemoryError::AllocationInCapture { bytes: need });
        }
        // How far the last commit may reach: over the free space after the
        // page, to at least the commit step.
        let page_end = c.offset + bytes;
        let lane = usize::from(self.seg().reservations[c.reservation].lane);
        let free_end = self.seg().engines[lane]
            .free_end_after(c.block)
            .unwrap_or(page_end);
        let limit = free_end.div_ceil(g).min(u64::from(u32::MAX)) as u32;
        let want = (self.commit_step(need, lane) / g).min(u64::from(u32::MAX)) as u32;
        if self.layout.policy().trim_before_grow && !self.capture.is_open() {
            // Chunks no page uses go back (oldest first) while the commit
            // would pass the trim limit; idle chunks that cannot serve this
            // page already while it would pass the floor (no headroom keeps
            // them: in the headroom they are what raises the peak): those of
            // large pages' reservations, which serve no shared-lane page, and
            // for a large page those of the shared lane too.
            let floor = self.trim_floor();
            self.settle_round_trip(map, lo, hi, need);
            self.decommit_to_fit(need, floor, Some(lane), progress)?;
            let limit = self.trim_limit();
            self.decommit_to_fit(need, limit, None, progress)?;
        }
        // Granules the page shares with a neighbour (a partial first or
        // last granule) get chunks of their own, so the page's own
        // granules go back with it.
        let first_partial = c.offset % g != 0;
        let last_partial = page_end % g != 0;
        // Pieces of at most the policy's size, each a chunk of its own.
        let most = match self.layout.policy().commit_piece_granules {
            0 => u32::MAX,
            k => k,
        };
        let mut from = lo;
        while let Some((g0, g1)) = self.seg().chunks.next_gap(map, from, hi) {
            // Reaching ahead strands what no page uses yet: not while
            // guarding. The last gap reaches by the step's surplus over
            // all the page's gaps (`want - gaps`), not to the whole step:
            // granting the step again to the last gap committed the
            // earlier gaps' size a second time, past the page's end.
            let end = if g1 == hi && !self.books.guarded {
                self.seg().chunks.reach(
                    map,
                    g0,
                    g1,
                    limit.max(g1),
                    (g1 - g0).saturating_add(want.saturating_sub(gaps)),
                )
            } else {
                g1
            };
            let mut pieces = [(g0, end); 3];
            let mut n = 0;
            let mut a = g0;
            let mut b = end;
            if self.layout.policy().split_boundaries || self.books.guarded {
                if first_partial && a == lo && b - a > 1 {
                    pieces[n] = (a, a + 1);
                    n += 1;
                    a += 1;
                }
                let tail = (last_partial && end == hi && b - a > 1).then(|| (b - 1, b));
                if let Some(t) = tail {
                    b -= 1;
                    pieces[n] = (a, b);
                    n += 1;
                    pieces[n] = t;
                    n += 1;
                } else {
                    pieces[n] = (a, b);
                    n += 1;
                }
            } else {
                n = 1;
            }
            for &(p0, p1) in &pieces[..n] {
                let mut q = p0;
                while q < p1 {
                    let e = p1.min(q.saturating_add(most));
                    // A piece wholly past the page (reached ahead) has no user.
                    let users = u32::from(q < hi);
                    self.commit_chunk(c.id, map, (q, e), users, rounded, progress)?;
                    q = e;
                }
            }
            from = end;
        }
        Ok(())
    }

    /// The bytes a commit of `need` bytes for a page of lane `lane` may
    /// grow to: the policy's step (a fraction of what is held), kept, when
    /// trimming, within what the pages and the live data have already
    /// needed ([`trim_floor`](Self::trim_floor)): memory reached ahead that
    /// no page comes to use is stranded for as long as a page lives in its
    /// chunk, and the trim headroom is there to keep idle memory, not to
    /// commit unused memory. Nor does a commit outside the large lane reach
    /// into the room a large page's idle reservation gave back for others
    /// to grow in (`Books::owed_large`): that room is the large page's when
    /// it comes back, and memory reached ahead into it would push the next
    /// peak past the floor.
    fn commit_step(&self, need: u64, lane: usize) -> u64 {
        let policy = self.layout.policy();
        let held = self.books.reserved.saturating_add(self.books.pending);
        let step = shr(held, policy.commit_step_shift);
        if step <= need {
            return need;
        }
        if policy.trim_before_grow {
            let owed = if lane == LARGE_LANE {
                0
            } else {
                self.books.owed_large
            };
            let room = self.trim_floor().saturating_sub(held.saturating_add(owed));
            return step.min(room).max(need);
        }
        step
    }

    /// Commits granules `[g0, g1)` of `map` as one chunk used by one page.
    fn commit_chunk(
        &mut self,
        id: PageId,
        map: u32,
        (g0, g1): (u32, u32),
        users: u32,
        rounded: u64,
        progress: &mut dyn Progress,
    ) -> Res<(), S> {
        let g = self.seg().chunks.granule();
        let bytes = u64::from(g1 - g0) * g;
        let offset = u64::from(g0) * g;
        self.commit_call(id, offset, bytes, rounded, progress)?;
        let now = self.books.reserves;
        if self.seg_mut().chunks.add(map, g0, g1, users, now).is_none() {
            // The chunk table is full: give the memory straight back.
            let _ = self.storage.decommit(id, offset, bytes);
            return Err(self.oom(rounded, OomCause::PageLimit { limit: u32::MAX }));
        }
        self.books.commits += 1;
        self.books.reserved += bytes;
        self.books.committed += bytes;
        if self.exempt(map) {
            self.books.owed_large = self.books.owed_large.saturating_sub(bytes);
        }
        Ok(())
    }

    /// One storage commit, retried once after giving idle memory back on
    /// exhaustion (see [`storage_call`](Self::storage_call)).
    fn commit_call(
        &mut self,
        id: PageId,
        offset: u64,
        bytes: u64,
        rounded: u64,
        progress: &mut dyn Progress,
    ) -> Res<(), S> {
        self.storage_call("commit", rounded, progress, |s| s.commit(id, offset, bytes))
    }

    /// Bytes of address space reserved for carved pages (0 over a storage
    /// without resizable pages).
    pub fn address_space(&self) -> u64 {
        self.segment
            .as_ref()
            .map_or(0, |s| s.reservations.iter().map(|(_, r)| r.size).sum())
    }
}
