//! What the real driver charges, as data: the granularity, the packing of
//! small requests and the cost of every memory call, measured on an NVIDIA
//! H200 through the HIP-on-CUDA shim (CUDA 13). The counting storage
//! charges these terms so a replay on any machine predicts the GPU's peak
//! memory and its driver time.
//!
//! Every figure lives in [`H200`]; where a figure comes from is written
//! beside it. Change the table, not the code, when the driver is measured
//! again.

use streamcore::platform::{CallCost, ResizableTerms, StorageCosts, StorageTerms};

const MIB: u64 = 1 << 20;

/// One driver's memory terms.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DriverTable {
    /// Page alignment `hipMalloc` guarantees.
    pub alignment: u64,
    /// `hipMalloc` above `pack_limit` takes whole multiples of this.
    pub granularity: u64,
    /// `hipMalloc` of at most this many bytes is packed into shared chunks.
    pub pack_limit: u64,
    /// `hipMalloc` (by size).
    pub malloc: CallCost,
    /// `hipFree` (by size); it synchronizes the device.
    pub free: CallCost,
    /// `hipMalloc` or `hipFree` of a packed page (at most `pack_limit`)
    /// while the driver's shared chunk has room: a sub-allocation.
    pub packed: CallCost,
    /// `hipMemAddressReserve` + `hipMemAddressFree` of one range.
    pub reserve: CallCost,
    /// `hipMemCreate` + `hipMemMap` + `hipMemSetAccess` of one chunk.
    pub commit: CallCost,
    /// `hipMemUnmap` + `hipMemRelease` of one chunk.
    pub decommit: CallCost,
    /// `hipMemGetAllocationGranularity`.
    pub vmm_granularity: u64,
    /// The largest range one reservation spans.
    pub max_reservation: u64,
}

/// The H200 (141 GB HBM3e), driver 580.159.04, HIP over CUDA 13.0.
///
/// Measured with `platform-hip/nvidia/calibrate.c` (medians of 31 calls on
/// an idle device; BENCHMARKS.md has the full table): `hipMalloc` 65–69 µs
/// up to 20 MiB, 161 µs at 64 MiB, 636 µs at 256 MiB; `hipFree` 56–75 µs up
/// to 20 MiB, 305 µs at 256 MiB, and it waits for all queued work;
/// create + map + set-access of one chunk 57 µs at 2 MiB to 153 µs at
/// 64 MiB; unmap + release 46 µs at 2 MiB to 111 µs at 64 MiB (neither waits
/// for queued work); reserving a range 1–5 µs whatever its size;
/// `hipMemGetAllocationGranularity` 2 MiB. What `hipMalloc` charges
/// (`hipMemGetInfo` before and after): above 1 MiB whole 2 MiB units, at or
/// below 1 MiB packed (4 KiB … 512 KiB exact). Packed calls: 7 µs, fitted to
/// issue 11's Llama replay on the H200 (28 ms of driver time for 1,952
/// `hipMalloc` and as many `hipFree` of packed pages); `calibrate.c`'s 65 µs
/// is a pair that maps and unmaps the shared chunk each time.
pub const H200: DriverTable = DriverTable {
    alignment: 256,
    granularity: 2 * MIB,
    pack_limit: MIB,
    malloc: CallCost::new(65_000, 1_200),
    free: CallCost::new(58_000, 700),
    packed: CallCost::new(7_000, 0),
    reserve: CallCost::new(5_000, 0),
    commit: CallCost::new(55_000, 1_500),
    decommit: CallCost::new(44_000, 1_000),
    vmm_granularity: 2 * MIB,
    max_reservation: 1 << 40,
};

/// Which route of the driver a counting storage models.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum DriverModel {
    /// Exact bytes (rounded to the alignment), calls free: the pools' own
    /// books.
    Books,
    /// `hipMalloc` / `hipFree` only: granularity, packing, call costs.
    Malloc,
    /// The virtual-memory route (resizable pages) beside `hipMalloc` for
    /// small pages: what the H200 runs by default.
    #[default]
    Vmm,
}

impl DriverModel {
    /// A short name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            DriverModel::Books => "books",
            DriverModel::Malloc => "malloc",
            DriverModel::Vmm => "vmm",
        }
    }

    /// The storage terms of this route of `table`, pages aligned to
    /// `alignment`.
    pub fn terms(self, table: &DriverTable, alignment: u64) -> StorageTerms {
        let mut t = StorageTerms::plain(alignment);
        if self == DriverModel::Books {
            return t;
        }
        t.granularity = table.granularity.max(t.granularity);
        t.pack_limit = table.pack_limit;
        let mut costs = StorageCosts::UNKNOWN;
        costs.alloc = table.malloc;
        costs.release = table.free;
        costs.release_synchronizes = true;
        if self == DriverModel::Vmm {
            costs.reserve = table.reserve;
            costs.commit = table.commit;
            costs.decommit = table.decommit;
            t.resizable = Some(ResizableTerms::new(
                table.vmm_granularity,
                table.max_reservation,
            ));
        }
        t.costs = costs;
        t
    }
}
