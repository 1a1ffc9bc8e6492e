//! What a [`Config`] means: the device properties the platform reports, the
//! pool layout, the stream count given to the device and the ids the ops
//! use, and whether the run is *strict* (sane properties and layout: every
//! reservation the harness makes must succeed unless a fault was injected).
//!
//! Most draws are sane; the rest are what a badly behaved driver or a
//! careless caller might hand the core (zero memory, pages of `u64::MAX`
//! bytes, alignments of 0, 3 or `2^63`, a one-page budget, more streams than
//! the bound). Each must come back as a typed error or work: never a panic,
//! an abort or corrupt accounting.

use std::vec::Vec;

use core::num::NonZeroU64;

use streamcore::drop_queue::FlushPolicy;
use streamcore::memory::{
    ChurnBudget, LayoutError, LayoutPreset, MemoryLayout, MemoryPolicy, PoolSpec, StrandGuard,
};
use streamcore::platform::DeviceProperties;
use streamcore::stream::StreamId;

use super::program::Config;

/// The most streams a device may be given (the core's bound on
/// `DeviceConfig::streams`); counts past it must be refused with a typed
/// error.
pub const STREAM_BOUND: u16 = streamcore::device::MAX_STREAMS;

/// Device memory the mock really has when the reported figure is not tight.
const MOCK_MEMORY: u64 = 1 << 30;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// A run's setup, decoded from its [`Config`].
#[derive(Clone, Debug)]
pub struct Setup {
    /// The stream count given to the device.
    pub declared: u16,
    /// The stream id of each stream the ops use (active index → id): the
    /// first ids when the device has as many streams as the ops use,
    /// otherwise spread so the last one is the device's last stream.
    pub ids: Vec<StreamId>,
    /// What the platform reports.
    pub properties: DeviceProperties,
    /// Whether `properties` are sane.
    pub sane_properties: bool,
    /// Device memory the mock really has.
    pub mock_memory: u64,
    /// Whether the mock's device storages offer resizable pages (virtual
    /// memory), and their granularity: the memory manager then carves its
    /// pages from reservations it commits and decommits.
    pub virtual_memory: Option<u64>,
    /// Whether the device storages declare the driver's call costs (the
    /// mock's default, the H200's table): half the runs with virtual memory
    /// (`device / 128 == 1`), so the churn budget binds and its idle cap
    /// acts as over the real driver. The others declare none
    /// ([`StorageCosts::UNKNOWN`](streamcore::platform::StorageCosts)), so
    /// trimming takes every idle chunk it may.
    pub driver_costs: bool,
    /// The layout drawn (`layout % 16`, see [`pick_layout`]).
    pub layout_pick: u8,
    /// The scheduler seed (which harness layout a run gets).
    pub seed: u8,
    /// Drop-queue thresholds (`None`: the device's preset).
    pub flush: Option<FlushPolicy>,
}

impl Setup {
    /// Decodes `config`.
    pub fn of(config: &Config) -> Self {
        let active = usize::from(config.streams.clamp(0, 3)) + 1;
        let declared = declared(config.declared, active);
        let n = active as u32;
        let d = u32::from(declared);
        let ids = (0..n)
            .map(|i| {
                if d <= n {
                    StreamId(i as u16)
                } else {
                    StreamId(((i + 1) * d / n - 1) as u16)
                }
            })
            .collect();
        let (properties, sane_properties) = properties(config.device);
        let mock_memory = if properties.total_memory != 0 && properties.total_memory < MOCK_MEMORY {
            properties.total_memory
        } else {
            MOCK_MEMORY
        };
        let flush = (config.flush != 0).then(|| FlushPolicy {
            max_items: usize::from(config.flush % 4) + 1,
            max_bytes: 1 << 12,
        });
        // A quarter of the runs, whatever their properties and layout, in
        // 64 KiB granules or 2 MiB ones (as HIP's virtual memory on the GPUs
        // we run).
        let virtual_memory =
            (config.device / 16 % 4 == 3).then_some(if config.device / 64 % 2 == 0 {
                64 * KIB
            } else {
                2 * MIB
            });
        let driver_costs = virtual_memory.is_some() && config.device / 128 == 1;
        Self {
            declared,
            ids,
            properties,
            sane_properties,
            mock_memory,
            virtual_memory,
            driver_costs,
            layout_pick: config.layout,
            seed: config.seed,
            flush,
        }
    }

    /// Whether `DeviceConfig::with_streams(declared)` must be accepted.
    pub fn valid_streams(&self) -> bool {
        (1..=STREAM_BOUND).contains(&self.declared)
    }

    /// Whether the layout drawn is sane (the harness's own, the device's
    /// default or a preset: as sane as the properties that shape them).
    pub fn sane_layout(&self) -> bool {
        self.layout_pick % 16 <= 5
    }

    /// The layout drawn (`Ok(None)`: the device's default), built now: the
    /// core's presets and `MemoryLayout::new` run here, so a panic of theirs
    /// belongs to the run.
    pub fn layout(&self) -> Result<Option<MemoryLayout>, LayoutError> {
        pick_layout(self.layout_pick, self.seed, &self.properties).map(|(l, _)| l)
    }
}

/// The stream count of `declared % 16`, for `active` streams used.
fn declared(pick: u8, active: usize) -> u16 {
    let active = active as u16;
    match pick % 16 {
        10 => STREAM_BOUND,
        11 => STREAM_BOUND - 1,
        12 => STREAM_BOUND + 1,
        13 => 0,
        14 => u16::MAX,
        15 => active + 13,
        _ => active,
    }
}

/// The properties of `device % 16`, and whether they are sane.
fn properties(pick: u8) -> (DeviceProperties, bool) {
    let p = |total_memory, max_page_size, alignment, integrated| DeviceProperties {
        total_memory,
        max_page_size,
        alignment,
        integrated,
    };
    match pick % 16 {
        // Sane: the harness's small pages, discrete or integrated, larger
        // pages.
        0..=4 => (p(1 << 30, MIB, 256, false), true),
        5 | 6 => (p(1 << 30, MIB, 256, true), true),
        7 => (p(1 << 30, 64 * MIB, 512, false), true),
        8 => (p(256 * MIB, 16 * MIB, 4096, true), true),
        // Adversarial.
        9 => (p(0, MIB, 256, false), false),
        10 => (p(64 * KIB, MIB, 256, true), false),
        11 => (p(1 << 30, u64::MAX, 256, false), false),
        12 => (p(1 << 30, 1 << 63, 1 << 63, false), false),
        13 => (p(1 << 30, 0, 0, true), false),
        14 => (p(u64::MAX, 1000, 3, false), false),
        _ => (p(u64::MAX, 1, u64::MAX, true), false),
    }
}

/// The layout of `pick % 16` (`Ok(None)`: the device's default for its
/// properties), and whether it is sane (the device's default and presets
/// count as sane: they are as sane as the properties they are shaped by);
/// `Err` when `MemoryLayout::new` refuses it.
pub fn pick_layout(
    pick: u8,
    seed: u8,
    props: &DeviceProperties,
) -> Result<(Option<MemoryLayout>, bool), LayoutError> {
    let custom = |pools: &[PoolSpec], alignment: u64, policy: MemoryPolicy| {
        MemoryLayout::new(pools, alignment, policy).map(|l| (Some(l), false))
    };
    let d = MemoryPolicy::default();
    match pick % 16 {
        0..=2 => Ok((Some(harness_layout(seed)), true)),
        3 => Ok((None, true)),
        4 => Ok((
            Some(MemoryLayout::preset(LayoutPreset::ExclusivePages, props)),
            true,
        )),
        5 => Ok((
            Some(MemoryLayout::preset(LayoutPreset::Sliced, props)),
            true,
        )),
        6 => custom(
            &[
                PoolSpec::small(16 * KIB, KIB),
                PoolSpec::sliced(u64::MAX, 64 * KIB),
                PoolSpec::exclusive(u64::MAX),
            ],
            256,
            d,
        ),
        7 => custom(
            &[PoolSpec::small(16 * KIB, KIB), PoolSpec::exclusive(MIB)],
            1 << 63,
            d,
        ),
        8 => custom(
            &[PoolSpec::small(16 * KIB, KIB), PoolSpec::exclusive(1 << 63)],
            256,
            d,
        ),
        9 => custom(
            &[PoolSpec::sliced(64 * KIB, 64 * KIB)],
            256,
            MemoryPolicy { max_pages: 1, ..d },
        ),
        10 => custom(
            &[
                PoolSpec::small(4 * KIB, 256).with_cap(4 * KIB),
                PoolSpec::sliced(64 * KIB, 16 * KIB).with_cap(64 * KIB),
                PoolSpec::exclusive(MIB).with_cap(MIB),
            ],
            256,
            MemoryPolicy {
                small_page_lane: true,
                ..d
            },
        ),
        11 => custom(
            &[PoolSpec::small(1000, 100), PoolSpec::sliced(3000, 1500)],
            512,
            d,
        ),
        12 => custom(
            &[
                PoolSpec::small(256, 256),
                PoolSpec::sliced(512, 512),
                PoolSpec::exclusive(1024),
            ],
            256,
            d,
        ),
        13 => custom(
            &[PoolSpec::small(16 * KIB, KIB), PoolSpec::exclusive(1 << 63)],
            1 << 62,
            d,
        ),
        14 => custom(
            &[PoolSpec::small(16 * KIB, KIB), PoolSpec::exclusive(MIB)],
            256,
            MemoryPolicy {
                trim_before_grow: true,
                trim_headroom_shift: 0,
                release_idle_after: NonZeroU64::new(1),
                fit_slack_shift: 0,
                page_rounding_shift: 0,
                force_persistent: true,
                max_pages: 3,
                commit_step_shift: 0,
                split_boundaries: true,
                commit_piece_granules: 1,
                large_page_granules: 1,
                strand_guard: StrandGuard::On,
                aligned_page_granules: 1,
                shed_partial_granules: 1,
                share_large_reservations: false,
                keep_bare_reservations: false,
                large_page_space: false,
                small_page_lane: true,
                round_trip_window: u32::MAX,
                churn_budget: ChurnBudget::UNLIMITED,
                idle_cap_shift: 0,
            },
        ),
        _ => {
            let pools: Vec<PoolSpec> = (0..8u32)
                .map(|i| PoolSpec::sliced(KIB << (2 * i), (KIB << (2 * i)) / 2))
                .collect();
            custom(
                &pools,
                1,
                MemoryPolicy {
                    fit_slack_shift: 64,
                    page_rounding_shift: 64,
                    trim_headroom_shift: 64,
                    ..d
                },
            )
        }
    }
}

/// The harness's own layouts (`seed % 3`): small pages (the mock zero-fills
/// a page on first write), a balanced one, one of exclusive pages, and
/// sliced pools with periodic trimming whose largest size class goes to
/// dedicated pages (over resizable pages: whole-granule pages on granule
/// boundaries, partial idle chunks shed).
pub fn harness_layout(index: u8) -> MemoryLayout {
    let (pools, policy) = match index % 3 {
        0 => (
            vec![
                PoolSpec::small(16 * KIB, KIB),
                PoolSpec::sliced(128 * KIB, 32 * KIB),
                PoolSpec::exclusive(1024 * KIB),
            ],
            MemoryPolicy::default(),
        ),
        1 => (
            vec![
                PoolSpec::small(16 * KIB, KIB),
                PoolSpec::exclusive(1024 * KIB),
            ],
            MemoryPolicy::default(),
        ),
        _ => (
            vec![
                PoolSpec::small(8 * KIB, 512),
                PoolSpec::sliced(64 * KIB, 16 * KIB),
                PoolSpec::sliced(512 * KIB, 256 * KIB),
            ],
            MemoryPolicy {
                release_idle_after: NonZeroU64::new(8),
                aligned_page_granules: 1,
                shed_partial_granules: 2,
                ..MemoryPolicy::default()
            },
        ),
    };
    // Valid by construction (growing slices, pages at least their slices).
    MemoryLayout::new(&pools, 256, policy).expect("the harness layouts are valid")
}
