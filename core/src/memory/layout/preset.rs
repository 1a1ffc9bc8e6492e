//! Ready-made layouts, shaped by a device's memory, largest page and
//! alignment.

use alloc::vec::Vec;

use super::{
    LayoutError, MAX_ALIGNMENT, MAX_PAGE_SIZE, MAX_POOLS, MemoryLayout, MemoryPolicy, PoolSpec,
};
use crate::platform::DeviceProperties;

/// Ready-made layouts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LayoutPreset {
    /// Small pool, a sliced pool for sizes up to 256 KiB, exclusive
    /// exact-size pages up to the device's largest page.
    Balanced,
    /// Small pool, then exclusive exact-size pages for everything else: the
    /// tightest fit, more storage allocations.
    ExclusivePages,
    /// Small pool, then sliced pools of growing pages up to the device's
    /// largest page: the fewest storage allocations, more padding.
    Sliced,
}

pub(super) const KIB: u64 = 1 << 10;
pub(super) const MIB: u64 = 1 << 20;

/// The largest power of two at most `x` (`x` > 0).
const fn prev_power_of_two(x: u64) -> u64 {
    1 << (63 - x.leading_zeros())
}

impl MemoryLayout {
    /// The default layout for a device: [`LayoutPreset::Balanced`]. See
    /// [`preset`](Self::preset) for properties out of range.
    pub fn for_device(props: &DeviceProperties) -> Self {
        Self::preset(LayoutPreset::Balanced, props)
    }

    /// The default layout for a device, or why its properties cannot have
    /// one: an alignment that is not a power of two of at most
    /// [`MAX_ALIGNMENT`].
    pub fn try_for_device(props: &DeviceProperties) -> Result<Self, LayoutError> {
        Self::try_preset(LayoutPreset::Balanced, props)
    }

    /// A preset shaped by the device's memory, largest page and alignment.
    ///
    /// Pages scale with the device: the small and sliced pools' pages are
    /// at most 1/16 of its memory (1 MiB and 512 KiB from 16 MiB up), so a
    /// few streams and the staging pool fit on a device of a few hundred
    /// KiB; the largest exclusive page is the device's largest page (at
    /// least 16 MiB, at most its memory). A `total_memory` of 0 counts as
    /// unknown (no limit). The layout fits the device
    /// ([`fits`](Self::fits)): on one of only a few pages of the alignment,
    /// where the preset's pools would not, it is one exclusive pool.
    ///
    /// Properties out of range never panic: a largest page above
    /// [`MAX_PAGE_SIZE`] counts as that limit, and an alignment that is not
    /// a power of two of at most [`MAX_ALIGNMENT`] is replaced by 256 (a
    /// device that really needs it is refused by the memory manager over its
    /// storage; [`try_preset`](Self::try_preset) refuses it here).
    pub fn preset(preset: LayoutPreset, props: &DeviceProperties) -> Self {
        let alignment = if props.alignment.is_power_of_two() && props.alignment <= MAX_ALIGNMENT {
            props.alignment
        } else {
            256
        };
        Self::build_preset(preset, props.max_page_size, props.total_memory, alignment)
    }

    /// A preset, or why the device's properties cannot have one: an
    /// alignment that is not a power of two of at most [`MAX_ALIGNMENT`],
    /// or less memory than one page of the alignment. The layout always
    /// [`fits`](Self::fits) the device: where the preset's pools would not
    /// (a device of a few pages of the alignment), it is one pool of
    /// exclusive pages.
    pub fn try_preset(preset: LayoutPreset, props: &DeviceProperties) -> Result<Self, LayoutError> {
        if !props.alignment.is_power_of_two() || props.alignment > MAX_ALIGNMENT {
            return Err(LayoutError::BadAlignment {
                alignment: props.alignment,
            });
        }
        if props.total_memory != 0 && props.total_memory < props.alignment {
            return Err(LayoutError::DeviceTooSmall {
                total: props.total_memory,
                page: props.alignment,
            });
        }
        Ok(Self::build_preset(
            preset,
            props.max_page_size,
            props.total_memory,
            props.alignment,
        ))
    }

    fn build_preset(preset: LayoutPreset, max_page_size: u64, total: u64, alignment: u64) -> Self {
        // The small pools' pages: at most 1/16 of the device, a power of two.
        let budget = if total == 0 { u64::MAX } else { total };
        let share = prev_power_of_two((budget / 16).max(1));
        // Every pool must hold at least one aligned slice.
        let max_page = max_page_size
            .max(16 * MIB)
            .min(budget)
            .max(alignment)
            .min(MAX_PAGE_SIZE);
        let small_page = MIB.min(share).max(alignment);
        let small_max = KIB.min(small_page / 4).max(alignment).min(small_page);
        let small = PoolSpec::small(small_page, small_max);
        let mut pools: Vec<PoolSpec> = Vec::new();
        pools.push(small);
        match preset {
            LayoutPreset::Balanced => {
                // Half a MiB: the driver packs pages this small, and carved
                // pages of the small and sliced pools share one granule.
                let sliced_page = (512 * KIB).min(share).max(small_max * 4);
                let sliced_max = (256 * KIB).min(sliced_page / 2).max(small_max * 2);
                pools.push(PoolSpec::sliced(sliced_page, sliced_max));
                pools.push(PoolSpec::exclusive(max_page.max(sliced_max * 2)));
            }
            LayoutPreset::ExclusivePages => {
                pools.push(PoolSpec::exclusive(max_page.max(small_max * 2)));
            }
            LayoutPreset::Sliced => {
                let mut page = (4 * MIB).min(share).max(small_max * 16);
                let mut slice = page / 8;
                while page < max_page && pools.len() < MAX_POOLS - 1 {
                    pools.push(PoolSpec::sliced(page, slice));
                    page *= 8;
                    slice *= 8;
                }
                let before = pools.last().map_or(0, |p| p.max_slice);
                let last = max_page.max(before * 2);
                pools.push(PoolSpec::sliced(last, last));
            }
        }
        match Self::new(&pools, alignment, MemoryPolicy::default()) {
            // A device too small for the preset's pools at this alignment
            // (a few pages of it) gets exclusive pages, sized to their
            // requests, which fit wherever one aligned page does.
            Ok(layout) if layout.fits(total).is_ok() => layout,
            // The presets are built to be valid for any properties in range;
            // fall back to the simplest valid layout if a change breaks that.
            _ => Self {
                pools: alloc::vec![PoolSpec::exclusive(max_page)],
                alignment,
                policy: MemoryPolicy::default(),
            },
        }
    }
}
