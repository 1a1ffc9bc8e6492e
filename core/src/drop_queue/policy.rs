//! When a drop queue asks for a flush.

use crate::platform::DeviceProperties;

const MIB: u64 = 1 << 20;

/// Flush thresholds: a flush is due once the staged items reach `max_items`
/// or their bytes reach `max_bytes`, whichever comes first.
///
/// A flush only records a fence (cheap); what the thresholds bound is how much
/// memory sits staged, not yet behind any fence and therefore not yet
/// reclaimable.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct FlushPolicy {
    /// Staged items that make a flush due (`0`: every push).
    pub max_items: usize,
    /// Staged bytes that make a flush due (`0`: every push).
    pub max_bytes: u64,
}

impl FlushPolicy {
    /// The smallest byte threshold [`FlushPolicy::for_device`] picks.
    pub const MIN_BYTES: u64 = MIB;

    /// For a discrete GPU: 64 items or 64 MiB.
    ///
    /// Device memory is separate from the host's and measured in tens of GiB;
    /// 64 MiB held back is noise there, and 64 launches' worth of frees per
    /// fence keeps the fence traffic negligible.
    pub const fn discrete() -> Self {
        Self {
            max_items: 64,
            max_bytes: 64 * MIB,
        }
    }

    /// For an integrated GPU (APU): 16 items or 16 MiB.
    ///
    /// The device's memory *is* the host's: every byte held back is taken from
    /// the whole system, and APUs often have a few GiB carved out for the GPU.
    /// Both thresholds are a quarter of the discrete ones, so staged memory is
    /// handed back four times sooner for the same (still small) fence cost.
    pub const fn integrated() -> Self {
        Self {
            max_items: 16,
            max_bytes: 16 * MIB,
        }
    }

    /// The preset for the device ([`FlushPolicy::integrated`] or
    /// [`FlushPolicy::discrete`]), with the byte threshold further capped at
    /// 1/256 of the device's total memory (never below
    /// [`FlushPolicy::MIN_BYTES`]) so a small device never holds back a large
    /// share of its memory. A `total_memory` of zero (unknown) keeps the
    /// preset.
    pub const fn for_device(props: &DeviceProperties) -> Self {
        let preset = if props.integrated {
            Self::integrated()
        } else {
            Self::discrete()
        };
        if props.total_memory == 0 {
            return preset;
        }
        let mut cap = props.total_memory / 256;
        if cap < Self::MIN_BYTES {
            cap = Self::MIN_BYTES;
        }
        Self {
            max_items: preset.max_items,
            max_bytes: if cap < preset.max_bytes {
                cap
            } else {
                preset.max_bytes
            },
        }
    }

    /// Items a queue under this policy makes room for up front, so a warm
    /// stream frees without allocating: four flushes' worth of items
    /// (staged ones, and batches waiting for their fences), at least 16 and
    /// at most 256. Past it the queue grows as it fills. A device sized
    /// for an APU or a firmware core (16 items a flush) keeps 64, not 256.
    pub fn queue_room(&self) -> usize {
        self.max_items.saturating_mul(4).clamp(16, 256)
    }

    /// Whether `items` staged items of `bytes` bytes make a flush due.
    pub const fn is_due(&self, items: usize, bytes: u64) -> bool {
        items >= self.max_items || bytes >= self.max_bytes
    }
}

impl Default for FlushPolicy {
    /// [`FlushPolicy::discrete`].
    fn default() -> Self {
        Self::discrete()
    }
}
