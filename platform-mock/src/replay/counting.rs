//! A storage that counts bytes the way the driver charges them, without
//! touching real memory, and the accounting several storages (one per
//! stream) share.
//!
//! The storage states [`StorageTerms`] from a [`DriverModel`] (granularity,
//! packing of small pages, call costs, resizable pages) and charges them:
//! a page above the pack limit costs whole granules, packed pages share
//! granules with each other (across every storage of the accounting, as the
//! driver packs them), a committed chunk costs its bytes until decommitted,
//! and every call adds its cost to an estimated driver time.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::vec::Vec;

use streamcore::hash::FxHashMap;
use streamcore::platform::{CallCost, ErrorKind, PageId, PlatformError, Storage, StorageTerms};

use super::driver_model::{DriverModel, H200, squared_ns};

#[derive(Debug, Default)]
struct Books {
    capacity: u64,
    /// Granule packed pages share (0: no packing seen yet).
    pack_unit: u64,
    /// Bytes charged for unpacked pages (until flushed) and committed chunks.
    direct: u64,
    /// Bytes of packed pages (until flushed).
    packed: u64,
    peak_held: u64,
    unreleased: u64,
    peak_unreleased: u64,
    allocs: u64,
    deallocs: u64,
    flushes: u64,
    syncs: u64,
    reserves: u64,
    commits: u64,
    decommits: u64,
    committed_bytes: u64,
    decommitted_bytes: u64,
    fresh_commits: u64,
    fresh_bytes: u64,
    mib_squared: u64,
    driver_ns: u64,
}

impl Books {
    fn held_with(&self, direct: u64, packed: u64) -> Option<u64> {
        let packed = if self.pack_unit > 1 {
            packed.checked_next_multiple_of(self.pack_unit)?
        } else {
            packed
        };
        direct.checked_add(packed)
    }

    fn held(&self) -> u64 {
        self.held_with(self.direct, self.packed).unwrap_or(u64::MAX)
    }

    /// Charges `direct` and `packed` more bytes; `false` (nothing charged)
    /// past the capacity.
    fn charge(&mut self, direct: u64, packed: u64) -> bool {
        let (Some(d), Some(p)) = (
            self.direct.checked_add(direct),
            self.packed.checked_add(packed),
        ) else {
            return false;
        };
        match self.held_with(d, p) {
            Some(held) if held <= self.capacity => {
                self.direct = d;
                self.packed = p;
                self.peak_held = self.peak_held.max(held);
                self.unreleased += direct + packed;
                self.peak_unreleased = self.peak_unreleased.max(self.unreleased);
                true
            }
            _ => false,
        }
    }

    /// Books the driver time and the MiB squared of one commit or decommit
    /// of `len` bytes costing `cost` plus `squared_ps` per MiB squared.
    fn chunk_call(&mut self, cost: CallCost, squared_ps: u64, len: u64) {
        self.driver_ns = self
            .driver_ns
            .saturating_add(cost.of(len))
            .saturating_add(squared_ns(squared_ps, len));
        self.mib_squared = self
            .mib_squared
            .saturating_add((len >> 20).saturating_mul(len >> 20));
    }

    fn uncharge(&mut self, direct: u64, packed: u64) {
        self.direct = self.direct.saturating_sub(direct);
        self.packed = self.packed.saturating_sub(packed);
    }
}

/// Byte accounting shared by every storage of one replay: bytes held as
/// the driver charges them (a page released counts until its storage's
/// flush; a decommitted chunk stops counting at once), the peak of that
/// sum, call counts and the estimated driver time. Cheap to clone (a shared
/// handle); `Send + Sync`.
#[derive(Clone, Debug, Default)]
pub struct Accounting(Arc<Mutex<Books>>);

/// A snapshot of an [`Accounting`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct StorageStats {
    /// Bytes held now.
    pub held: u64,
    /// The most bytes held at once.
    pub peak_held: u64,
    /// Calls that took memory from the driver and succeeded: pages
    /// (`hipMalloc`) and chunks committed in place (also counted in
    /// [`commits`](Self::commits)).
    pub allocs: u64,
    /// Deallocation calls.
    pub deallocs: u64,
    /// Flush calls.
    pub flushes: u64,
    /// A diagnostic: the most bytes held at once counting a page only until
    /// its dealloc (as if every dealloc were flushed at once).
    pub peak_unreleased: u64,
    /// Flushes that released pages on a storage whose release synchronizes
    /// the device (`hipFree`).
    pub syncs: u64,
    /// Address ranges reserved.
    pub reserves: u64,
    /// Chunks committed in place.
    pub commits: u64,
    /// Chunks decommitted in place.
    pub decommits: u64,
    /// Bytes committed over the whole run (each commit counted).
    pub committed_bytes: u64,
    /// Bytes decommitted over the whole run (each decommit counted).
    pub decommitted_bytes: u64,
    /// Commits that mapped at least one granule never mapped before in
    /// their reservation (since it was reserved).
    pub fresh_commits: u64,
    /// Bytes of those never-mapped granules, over the whole run: what a
    /// commit maps into a part of its reservation for the first time.
    pub fresh_committed_bytes: u64,
    /// The sum over commits and decommits of each chunk's whole MiB,
    /// squared: what `DriverTable::chunk_squared_ps` prices (for fitting
    /// it).
    pub chunk_mib_squared: u64,
    /// Estimated driver time of every call, from the storages' terms, in
    /// nanoseconds.
    pub driver_ns: u64,
}

impl StorageStats {
    /// Driver calls that change what is held: allocations (commits
    /// included), pages released, reservations and decommits.
    pub const fn driver_calls(&self) -> u64 {
        self.allocs + self.deallocs + self.reserves + self.decommits
    }
}

impl Accounting {
    /// Fresh accounting with no capacity limit.
    pub fn new() -> Self {
        Self::with_capacity(u64::MAX)
    }

    /// Fresh accounting whose storages fail with out-of-memory once `bytes`
    /// would be held.
    pub fn with_capacity(bytes: u64) -> Self {
        let a = Self::default();
        a.books().capacity = bytes;
        a
    }

    fn books(&self) -> MutexGuard<'_, Books> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records an allocation of exactly `bytes`; `false` (nothing
    /// recorded) past the capacity.
    pub fn try_alloc(&self, bytes: u64) -> bool {
        let mut b = self.books();
        let ok = b.charge(bytes, 0);
        if ok {
            b.allocs += 1;
        }
        ok
    }

    /// Records a deallocation of `bytes` (they stay held until a flush).
    pub fn dealloc(&self, bytes: u64) {
        let mut b = self.books();
        b.deallocs += 1;
        b.unreleased = b.unreleased.saturating_sub(bytes);
    }

    /// Records a flush that let go of `bytes`.
    pub fn flush(&self, bytes: u64) {
        let mut b = self.books();
        b.uncharge(bytes, 0);
        b.flushes += 1;
    }

    /// Bytes held now.
    pub fn held(&self) -> u64 {
        self.books().held()
    }

    /// A snapshot.
    pub fn stats(&self) -> StorageStats {
        let b = self.books();
        StorageStats {
            held: b.held(),
            peak_held: b.peak_held,
            allocs: b.allocs,
            deallocs: b.deallocs,
            flushes: b.flushes,
            peak_unreleased: b.peak_unreleased,
            syncs: b.syncs,
            reserves: b.reserves,
            commits: b.commits,
            decommits: b.decommits,
            committed_bytes: b.committed_bytes,
            decommitted_bytes: b.decommitted_bytes,
            fresh_commits: b.fresh_commits,
            fresh_committed_bytes: b.fresh_bytes,
            chunk_mib_squared: b.mib_squared,
            driver_ns: b.driver_ns,
        }
    }
}

/// The error of a [`CountingStorage`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CountingError {
    /// The kind ([`ErrorKind::OutOfMemory`] when the capacity is reached,
    /// [`ErrorKind::InvalidValue`] for a call the contract forbids).
    pub kind: ErrorKind,
    /// The bytes asked for.
    pub requested: u64,
}

impl fmt::Display for CountingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} allocating {} bytes", self.kind, self.requested)
    }
}

impl std::error::Error for CountingError {}

impl PlatformError for CountingError {
    fn kind(&self) -> ErrorKind {
        self.kind
    }
}

#[derive(Debug)]
enum Held {
    /// A page: what it costs directly, or packed.
    Page { size: u64, direct: u64, packed: u64 },
    /// A reservation: its size, committed chunks (offset → length) and
    /// every part ever mapped since it was reserved.
    Range {
        size: u64,
        chunks: FxHashMap<u64, u64>,
        mapped: Intervals,
    },
}

/// Disjoint, non-touching half-open intervals (start → end).
#[derive(Debug, Default)]
struct Intervals(BTreeMap<u64, u64>);

impl Intervals {
    /// Adds `[start, end)`; returns how many of its bytes were not in the
    /// set before.
    fn insert(&mut self, start: u64, end: u64) -> u64 {
        let mut lo = start;
        let mut hi = end;
        let mut covered = 0;
        // The interval that starts at or before `start` and reaches it.
        if let Some((&s, &e)) = self.0.range(..=start).next_back() {
            if e >= start {
                covered += e.min(end).saturating_sub(start);
                lo = s;
                hi = hi.max(e);
                self.0.remove(&s);
            }
        }
        // Those starting inside (or touching the end of) the new one.
        while let Some((&s, &e)) = self.0.range(start..=end).next() {
            covered += e.min(end).saturating_sub(s);
            hi = hi.max(e);
            self.0.remove(&s);
        }
        self.0.insert(lo, hi);
        (end - start) - covered
    }
}

/// A [`Storage`] that hands out page ids and counts bytes as its driver
/// model charges them, holding no memory.
#[derive(Debug)]
pub struct CountingStorage {
    accounting: Accounting,
    alignment: u64,
    terms: StorageTerms,
    /// What an alloc or release of a packed page costs.
    packed_cost: CallCost,
    /// Picoseconds per MiB squared a commit or decommit costs beyond its
    /// terms (`DriverTable::chunk_squared_ps`; 0: none).
    squared_ps: u64,
    next_id: u64,
    live: FxHashMap<u64, Held>,
    /// Pages (and ranges) deallocated: (direct, packed) bytes to let go.
    pending: Vec<(u64, u64)>,
}

impl CountingStorage {
    /// A storage reporting into `accounting`, pages aligned to `alignment`
    /// (a power of two), charging exact bytes at no cost (the pools' books).
    pub fn new(accounting: Accounting, alignment: u64) -> Self {
        Self::with_model(accounting, alignment, DriverModel::Books)
    }

    /// A storage charging the H200's terms of `model`.
    pub fn with_model(accounting: Accounting, alignment: u64, model: DriverModel) -> Self {
        let mut s = Self::with_terms(accounting, alignment, model.terms(&H200, alignment));
        s.packed_cost = H200.packed;
        s.squared_ps = H200.chunk_squared_ps;
        s
    }

    /// A storage charging `terms`, pages aligned to `alignment`.
    pub fn with_terms(accounting: Accounting, alignment: u64, terms: StorageTerms) -> Self {
        {
            let mut b = accounting.books();
            if terms.pack_limit > 0 && b.pack_unit == 0 {
                b.pack_unit = terms.granularity;
            }
        }
        Self {
            accounting,
            alignment,
            terms,
            packed_cost: terms.costs.alloc,
            squared_ps: 0,
            next_id: 1,
            live: FxHashMap::default(),
            pending: Vec::new(),
        }
    }

    /// The shared accounting.
    pub fn accounting(&self) -> &Accounting {
        &self.accounting
    }

    /// Live pages and reservations of this storage (not counting released
    /// ones).
    pub fn live_pages(&self) -> usize {
        self.live.len()
    }

    /// The size of a live page (or reservation).
    pub fn page_size(&self, page: PageId) -> Option<u64> {
        self.live.get(&page.0).map(|h| match h {
            Held::Page { size, .. } | Held::Range { size, .. } => *size,
        })
    }

    /// Bytes committed in a live reservation.
    pub fn committed(&self, page: PageId) -> Option<u64> {
        match self.live.get(&page.0) {
            Some(Held::Range { chunks, .. }) => Some(chunks.values().sum()),
            _ => None,
        }
    }

    fn refuse(kind: ErrorKind, requested: u64) -> CountingError {
        CountingError { kind, requested }
    }

    fn id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }
}

impl Storage for CountingStorage {
    type Error = CountingError;

    fn alignment(&self) -> u64 {
        self.alignment
    }

    fn terms(&self) -> StorageTerms {
        self.terms
    }

    fn alloc(&mut self, size: u64) -> Result<PageId, CountingError> {
        let charged = self.terms.charge(size);
        let (direct, packed) = if size <= self.terms.pack_limit {
            (0, charged)
        } else {
            (charged, 0)
        };
        let mut b = self.accounting.books();
        if !b.charge(direct, packed) {
            return Err(Self::refuse(ErrorKind::OutOfMemory, size));
        }
        b.allocs += 1;
        let cost = if packed > 0 {
            self.packed_cost
        } else {
            self.terms.costs.alloc
        };
        b.driver_ns = b.driver_ns.saturating_add(cost.of(size));
        drop(b);
        let id = self.id();
        self.live.insert(
            id,
            Held::Page {
                size,
                direct,
                packed,
            },
        );
        Ok(PageId(id))
    }

    /// # Panics
    /// On a page that is not live, or a reservation with committed chunks
    /// (a broken contract of the caller).
    fn dealloc(&mut self, page: PageId) {
        let held = self
            .live
            .remove(&page.0)
            .expect("dealloc of a page that is not live");
        let (direct, packed) = match held {
            Held::Page { direct, packed, .. } => (direct, packed),
            Held::Range { chunks, .. } => {
                assert!(chunks.is_empty(), "dealloc of a reservation with chunks");
                (0, 0)
            }
        };
        self.accounting.dealloc(direct + packed);
        self.pending.push((direct, packed));
    }

    fn flush(&mut self) -> Result<(), CountingError> {
        let mut b = self.accounting.books();
        b.flushes += 1;
        let pages = self.pending.iter().filter(|p| p.0 + p.1 > 0).count() as u64;
        if pages > 0 && self.terms.costs.release_synchronizes {
            b.syncs += 1;
        }
        for (direct, packed) in self.pending.drain(..) {
            b.uncharge(direct, packed);
            let cost = if packed > 0 {
                self.packed_cost
            } else {
                self.terms.costs.release
            };
            if direct + packed > 0 {
                b.driver_ns = b.driver_ns.saturating_add(cost.of(direct + packed));
            }
        }
        Ok(())
    }

    fn reserve(&mut self, size: u64) -> Result<PageId, CountingError> {
        let Some(r) = self.terms.resizable else {
            return Err(Self::refuse(ErrorKind::InvalidValue, size));
        };
        if size == 0 || size % r.granularity != 0 || size > r.max_reservation {
            return Err(Self::refuse(ErrorKind::InvalidValue, size));
        }
        {
            let mut b = self.accounting.books();
            b.reserves += 1;
            b.driver_ns = b
                .driver_ns
                .saturating_add(self.terms.costs.reserve.of(size));
        }
        let id = self.id();
        self.live.insert(
            id,
            Held::Range {
                size,
                chunks: FxHashMap::default(),
                mapped: Intervals::default(),
            },
        );
        Ok(PageId(id))
    }

    fn commit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), CountingError> {
        let Some(r) = self.terms.resizable else {
            return Err(Self::refuse(ErrorKind::InvalidValue, len));
        };
        let Some(Held::Range {
            size,
            chunks,
            mapped,
        }) = self.live.get_mut(&page.0)
        else {
            return Err(Self::refuse(ErrorKind::InvalidValue, len));
        };
        let end = offset.checked_add(len);
        let aligned = offset % r.granularity == 0 && len % r.granularity == 0 && len > 0;
        let overlaps = chunks
            .iter()
            .any(|(&o, &l)| end.is_some_and(|e| o < e) && offset < o + l);
        if !aligned || end.is_none_or(|e| e > *size) || overlaps {
            return Err(Self::refuse(ErrorKind::InvalidValue, len));
        }
        let mut b = self.accounting.books();
        if !b.charge(len, 0) {
            return Err(Self::refuse(ErrorKind::OutOfMemory, len));
        }
        b.commits += 1;
        b.allocs += 1;
        b.committed_bytes += len;
        b.chunk_call(self.terms.costs.commit, self.squared_ps, len);
        let fresh = mapped.insert(offset, offset + len);
        if fresh > 0 {
            b.fresh_commits += 1;
            b.fresh_bytes += fresh;
        }
        chunks.insert(offset, len);
        Ok(())
    }

    fn decommit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), CountingError> {
        let Some(Held::Range { chunks, .. }) = self.live.get_mut(&page.0) else {
            return Err(Self::refuse(ErrorKind::InvalidValue, len));
        };
        if chunks.get(&offset) != Some(&len) {
            return Err(Self::refuse(ErrorKind::InvalidValue, len));
        }
        chunks.remove(&offset);
        let mut b = self.accounting.books();
        b.uncharge(len, 0);
        b.unreleased = b.unreleased.saturating_sub(len);
        b.decommits += 1;
        b.decommitted_bytes += len;
        b.chunk_call(self.terms.costs.decommit, self.squared_ps, len);
        Ok(())
    }
}
