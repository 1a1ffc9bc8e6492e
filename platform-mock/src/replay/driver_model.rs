//! What the real driver charges, as data: the granularity, the packing of
//! small requests and the cost of every memory call, measured on an NVIDIA
//! H200 through the HIP-on-CUDA shim (CUDA 13). The counting storage
//! charges these terms so a replay on any machine predicts the GPU's peak
//! memory and its driver time.
//!
//! Every figure lives in [`H200`]; where a figure comes from is written
//! beside it. Change the table, not the code, when the driver is measured
//! again.

use streamcore::platform::{
    CallCost, DeviceProperties, ResizableTerms, StorageCosts, StorageTerms,
};

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
    /// Picoseconds per MiB squared that a commit and a decommit each cost
    /// beyond their linear terms (`commit`, `decommit`): the driver's
    /// price per MiB grows with the chunk. Charged by the counting storage,
    /// not declared to the policy (see [`H200`]).
    pub chunk_squared_ps: u64,
    /// Host time per trace event of a replay on the GPU's machine outside
    /// the driver (the replay loop and the pools' bookkeeping): with the
    /// driver time, the predicted wall time.
    pub host_event_ns: u64,
}

impl DriverTable {
    /// What a whole replay of `events` events that spent `driver_ns` in the
    /// driver is predicted to take on the GPU's machine, in milliseconds.
    pub fn predicted_wall_ms(&self, events: u64, driver_ns: u64) -> f64 {
        (driver_ns as f64 + events as f64 * self.host_event_ns as f64) / 1e6
    }

    /// Nanoseconds a commit or decommit of `bytes` costs beyond its linear
    /// terms ([`chunk_squared_ps`](Self::chunk_squared_ps)), saturating.
    pub fn chunk_squared_ns(&self, bytes: u64) -> u64 {
        squared_ns(self.chunk_squared_ps, bytes)
    }
}

/// Nanoseconds `ps` picoseconds per MiB squared come to for a call of
/// `bytes` (whole MiB), saturating.
pub(super) fn squared_ns(ps: u64, bytes: u64) -> u64 {
    let mib = u128::from(bytes >> 20);
    u64::try_from(mib * mib * u128::from(ps) / 1000).unwrap_or(u64::MAX)
}

/// The H200's properties as the recorded traces saw them (141 GB, pages
/// of up to a quarter of it, 256-byte alignment): the device the model's
/// replays lay their pools out for.
pub const H200_PROPERTIES: DeviceProperties = DeviceProperties {
    total_memory: 141_000_000_000,
    max_page_size: 141_000_000_000 / 4,
    alignment: 256,
    integrated: false,
};

/// The H200 (141 GB HBM3e), driver 580.159.04, HIP over CUDA 13.0.
///
/// Where each figure comes from:
/// - Granularity and packing: `platform-hip/nvidia/calibrate.c`
///   (`hipMemGetInfo` before and after): `hipMalloc` above 1 MiB takes whole
///   2 MiB units, at or below 1 MiB it is packed (4 KiB … 512 KiB exact);
///   `hipMemGetAllocationGranularity` answers 2 MiB.
/// - The virtual-memory calls (`commit`, `decommit`) and the host's share
///   per event ([`host_event_ns`](DriverTable::host_event_ns)): fitted to
///   the wall times of streamcore's whole replays on the H200 (the default
///   layout, all 44 traces of BENCHMARKS.md section 6: recorded,
///   synthetic, held-out and two fresh sets; no touch, the fastest of 5
///   runs, 2026-12-02), by least squares on the relative error over the
///   calls each replay made (commits, committed MiB, decommits,
///   decommitted MiB) and its events: commit 32.3 µs + 0.131 µs/MiB,
///   decommit 33.5 µs + 0.193 µs/MiB, 56 ns per event (rounded to 32 +
///   0.13 and 33 + 0.19). Fitted on
///   the recorded, synthetic and held-out traces alone, the costs predict
///   the 20 fresh traces' walls within 3.5 % on average, 16 % at most
///   (the costs before, 33 µs + 0.25 µs/MiB and 18 µs + 0.5 µs/MiB fitted
///   to 14 traces in round 7: 12.6 % and 59 %, over-pricing large chunks).
///   One pattern the linear terms do not capture: large pages committed
///   whole again and again (the growing pairs under the placement before
///   round 8) took 1.6-1.8x what any fit of these terms predicts.
///   The figures are one host's: on the H200 host of BENCHMARKS.md's
///   round 11 the predicted walls of the current code are within 7 % of
///   the measured ones on average (median ratio 1.03-1.04 over the 44
///   traces, 0.91-1.28 at the extremes), on round 16's host 1.42x (1.04-
///   1.86x), where the driver's pool took 1.35x as long as on round 11's
///   too: walls are compared with the pool's on the same host, never with
///   these figures.
///   `calibrate.c`'s one-chunk medians on the same machine agree on the
///   fixed part (create + map + set-access 28.8 µs, unmap + release
///   24.1 µs at 2 MiB) but charge far more per MiB in isolation (160 /
///   54.5 µs at 64 MiB, 633 / 138 µs at 256 MiB) than whole replays show:
///   the replays are the ground truth.
/// - Reserving and freeing an address range: 1–3 µs each whatever its
///   size (`calibrate.c`).
/// - `hipMalloc` / `hipFree` (the fallback route): `calibrate.c`'s medians
///   on the same machine, fitted over 2–256 MiB: `hipMalloc` 33 µs up to
///   8 MiB, 162 µs at 64 MiB, 635 µs at 256 MiB; `hipFree` 30–33 µs up to
///   8 MiB, 68 µs at 64 MiB, 144 µs at 256 MiB, and it waits for all queued
///   work. No whole replay of that route was timed on this machine.
/// - Packed calls: 7 µs, fitted to issue 11's Llama replay on the H200
///   (28 ms of driver time for 1,952 `hipMalloc` and as many `hipFree` of
///   packed pages); `calibrate.c`'s pair of ~64 µs maps and unmaps the
///   shared chunk each time.
///
/// - The squared part of a commit's and a decommit's cost, 245 ps per MiB
///   squared each ([`chunk_squared_ps`](DriverTable::chunk_squared_ps)):
///   fitted in round 24 on an H100 (main 6d26125) to 40 whole replays,
///   one process each (the 16 recorded and real traces under two layouts,
///   twice; the held-out CNN under eight layouts, twice; BENCHMARKS.md
///   section 6), as measured wall = h x (the terms above) + q x (the sum
///   over commits and decommits of their MiB squared): h = 1.27 (that
///   host against this table's), q = 312 ps there, 245 here. Large pages
///   committed as one chunk each (up to 6 GiB) took 2-4x what the linear
///   terms predicted (scaled by h, the 40 walls within 11 % on average,
///   66 % at most; with the squared part 8 %, 23 % at most).
///   `calibrate.c` agrees on the shape (unmap + release of one chunk:
///   0.55 µs/MiB from 256 MiB up, under 0.1 below). Only the model
///   charges it: the policy's commit pieces (64 granules, 128 MiB) cost
///   at most 4 µs more a call with it, and declaring it to the churn
///   budget moved 4 of the 132 scored rows with no GPU measurement behind
///   the move.
///
/// The HIP virtual-memory storage declares the same linear costs
/// (`streamcore_hip::VMM_COSTS`: its plain pages are a reservation plus one
/// commit, released by one decommit), so the policy takes the same
/// decisions here as on the GPU.
pub const H200: DriverTable = DriverTable {
    alignment: 256,
    granularity: 2 * MIB,
    pack_limit: MIB,
    malloc: CallCost::new(31_000, 2_400),
    free: CallCost::new(29_000, 450),
    packed: CallCost::new(7_000, 0),
    reserve: CallCost::new(3_000, 0),
    commit: CallCost::new(32_000, 130),
    decommit: CallCost::new(33_000, 190),
    vmm_granularity: 2 * MIB,
    max_reservation: 1 << 40,
    chunk_squared_ps: 245,
    host_event_ns: 56,
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
            // Plain pages above the pack limit are a reservation with one
            // chunk committed over all of it, released by one decommit.
            costs.alloc = CallCost::new(
                table.commit.fixed_ns + table.reserve.fixed_ns,
                table.commit.per_mib_ns + table.reserve.per_mib_ns,
            );
            costs.release = table.decommit;
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
