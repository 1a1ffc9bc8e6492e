//! A storage's terms: the units it really charges for memory and what its
//! calls cost, so the pools can plan pages the way the driver bills them.
//!
//! Drivers do not hand out bytes one by one. `hipMalloc` above 1 MiB takes
//! whole 2 MiB units (1.5 MiB costs 2), packs smaller requests into shared
//! chunks, costs tens of microseconds per call and synchronizes the device
//! when it frees. The driver's virtual-memory calls reserve an address range
//! for free and map physical chunks into it at a cost per chunk. A
//! [`Storage`](super::Storage) states all of this in a [`StorageTerms`]; the
//! core reads it once, when a memory manager is built.
//!
//! Every figure is a plain number (bytes, nanoseconds): the core reads no
//! clock, it only compares the costs a storage declares.

/// Bytes in a MiB, the unit of [`CallCost::per_mib_ns`].
const MIB: u64 = 1 << 20;

/// What one storage call costs: a fixed part plus a part per MiB it covers,
/// in nanoseconds of host time.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct CallCost {
    /// Nanoseconds every call costs.
    pub fixed_ns: u64,
    /// Nanoseconds added per MiB the call covers.
    pub per_mib_ns: u64,
}

impl CallCost {
    /// A call that costs nothing (or whose cost is not known).
    pub const ZERO: CallCost = CallCost {
        fixed_ns: 0,
        per_mib_ns: 0,
    };

    /// A cost of `fixed_ns` per call plus `per_mib_ns` per MiB.
    pub const fn new(fixed_ns: u64, per_mib_ns: u64) -> Self {
        Self {
            fixed_ns,
            per_mib_ns,
        }
    }

    /// Nanoseconds one call covering `bytes` costs (saturating).
    pub const fn of(self, bytes: u64) -> u64 {
        let per = (self.per_mib_ns as u128 * bytes as u128) / MIB as u128;
        let per = if per > u64::MAX as u128 {
            u64::MAX
        } else {
            per as u64
        };
        self.fixed_ns.saturating_add(per)
    }
}

/// What growing and shrinking cost a storage, call by call.
///
/// `#[non_exhaustive]`: start from [`StorageCosts::UNKNOWN`] and set the
/// fields you know.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct StorageCosts {
    /// One [`Storage::alloc`](super::Storage::alloc) of a page
    /// (`hipMalloc`), by the page's size.
    pub alloc: CallCost,
    /// Releasing one page at [`Storage::flush`](super::Storage::flush)
    /// (`hipFree`), by the page's size.
    pub release: CallCost,
    /// A flush that releases pages waits for all work queued on the device
    /// (as `hipFree` does): the pools avoid it in the steady state.
    pub release_synchronizes: bool,
    /// One [`Storage::reserve`](super::Storage::reserve) of an address range
    /// and its later release (`hipMemAddressReserve` + `hipMemAddressFree`).
    pub reserve: CallCost,
    /// One [`Storage::commit`](super::Storage::commit) of a chunk
    /// (`hipMemCreate` + `hipMemMap` + `hipMemSetAccess`), by its size.
    pub commit: CallCost,
    /// One [`Storage::decommit`](super::Storage::decommit) of a chunk
    /// (`hipMemUnmap` + `hipMemRelease`), by its size.
    pub decommit: CallCost,
}

impl StorageCosts {
    /// Nothing known: every call free, no synchronization.
    pub const UNKNOWN: StorageCosts = StorageCosts {
        alloc: CallCost::ZERO,
        release: CallCost::ZERO,
        release_synchronizes: false,
        reserve: CallCost::ZERO,
        commit: CallCost::ZERO,
        decommit: CallCost::ZERO,
    };
}

/// The terms of a storage's resizable pages (virtual memory): an address
/// range reserved once, physical chunks committed into it and decommitted
/// in place.
///
/// `#[non_exhaustive]`: build it with [`ResizableTerms::new`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ResizableTerms {
    /// Offsets and lengths of commits are whole multiples of this many bytes
    /// (`hipMemGetAllocationGranularity`; a power of two). A memory manager
    /// commits in granules of at least 4 KiB (whole multiples of a finer
    /// granularity): its books cost host memory and time per granule.
    pub granularity: u64,
    /// The largest address range one [`Storage::reserve`](super::Storage::reserve)
    /// may ask for.
    pub max_reservation: u64,
}

impl ResizableTerms {
    /// Chunks in multiples of `granularity` bytes, ranges of at most
    /// `max_reservation` bytes.
    pub const fn new(granularity: u64, max_reservation: u64) -> Self {
        Self {
            granularity,
            max_reservation,
        }
    }
}

/// How a storage charges for memory: its units and its costs.
///
/// `#[non_exhaustive]`: start from [`StorageTerms::plain`] and set the
/// fields that differ.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct StorageTerms {
    /// A page from [`Storage::alloc`](super::Storage::alloc) larger than
    /// [`pack_limit`](Self::pack_limit) takes whole multiples of this many
    /// bytes (a power of two; 2 MiB for `hipMalloc`).
    pub granularity: u64,
    /// Pages of at most this many bytes are packed by the storage into
    /// shared granules and cost about their size (0: nothing is packed).
    pub pack_limit: u64,
    /// What each call costs.
    pub costs: StorageCosts,
    /// Resizable pages ([`Storage::reserve`](super::Storage::reserve),
    /// [`commit`](super::Storage::commit),
    /// [`decommit`](super::Storage::decommit)); `None` when the storage
    /// cannot resize a page in place.
    pub resizable: Option<ResizableTerms>,
}

impl StorageTerms {
    /// The terms of a storage that charges exactly what it is asked for,
    /// rounded to `alignment`, at no known cost, without resizable pages:
    /// what [`Storage::terms`](super::Storage::terms) answers by default.
    pub const fn plain(alignment: u64) -> Self {
        Self {
            granularity: if alignment.is_power_of_two() {
                alignment
            } else {
                1
            },
            pack_limit: 0,
            costs: StorageCosts::UNKNOWN,
            resizable: None,
        }
    }

    /// The bytes a page of `size` bytes from `alloc` really takes: `size`
    /// when packed, else `size` rounded up to the granularity (saturating at
    /// the largest multiple of it).
    pub const fn charge(&self, size: u64) -> u64 {
        if size <= self.pack_limit {
            return size;
        }
        let g = if self.granularity.is_power_of_two() {
            self.granularity
        } else {
            1
        };
        match size.checked_add(g - 1) {
            Some(v) => v & !(g - 1),
            None => !(g - 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_follow_the_granularity_above_the_pack_limit() {
        let mut t = StorageTerms::plain(256);
        assert_eq!(t.charge(1000), 1024);
        t.granularity = 2 * MIB;
        t.pack_limit = MIB;
        assert_eq!(t.charge(1000), 1000);
        assert_eq!(t.charge(MIB), MIB);
        assert_eq!(t.charge(MIB + MIB / 2), 2 * MIB);
        assert_eq!(t.charge(3 * MIB), 4 * MIB);
        assert_eq!(t.charge(5 * MIB), 6 * MIB);
        assert_eq!(t.charge(u64::MAX), !(2 * MIB - 1));
        assert_eq!(StorageTerms::plain(3).granularity, 1);
    }

    #[test]
    fn call_costs_add_a_part_per_mib_and_saturate() {
        let c = CallCost::new(35_000, 500);
        assert_eq!(c.of(0), 35_000);
        assert_eq!(c.of(2 * MIB), 36_000);
        assert_eq!(c.of(MIB / 2), 35_250);
        assert_eq!(CallCost::new(u64::MAX, u64::MAX).of(u64::MAX), u64::MAX);
        assert_eq!(CallCost::ZERO.of(u64::MAX), 0);
    }
}
