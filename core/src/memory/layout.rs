//! Pool layouts: which pools a manager has, which sizes each serves, and the
//! policies (trimming, periodic release, fit slack) that decide how much idle
//! memory it keeps.
//!
//! A layout is a list of [`PoolSpec`]s ordered by the largest request each
//! serves, plus a [`MemoryPolicy`]. A request goes to the first pool whose
//! `max_slice` holds it; a request larger than every pool's `max_slice` takes
//! the dedicated path (its own page, released as soon as it is freed). A
//! persistent pool (exact-size pages, never trimmed) serves every request made
//! in persistent mode. Both always exist and are not listed.

use alloc::vec::Vec;
use core::fmt;
use core::num::NonZeroU64;

use super::budget::ChurnBudget;
use crate::platform::DeviceProperties;

/// The most pools a layout may list (the persistent pool and the dedicated
/// path come on top).
pub const MAX_POOLS: usize = 8;

/// The largest page budget a layout may ask for (page indices are `u32`).
pub const MAX_PAGES: u32 = 1 << 24;

/// The largest alignment a layout (or a storage) may ask for: 1 GiB.
pub const MAX_ALIGNMENT: u64 = 1 << 30;

/// The largest page a layout may list (the largest request a manager
/// accepts, [`MAX_REQUEST`](super::MAX_REQUEST)).
pub const MAX_PAGE_SIZE: u64 = super::MAX_REQUEST;

/// How a pool carves its pages.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Tiny requests (metadata, info buffers) in their own sliced pages, so
    /// their churn never fragments the pages of larger data.
    Small,
    /// Pages of a fixed size split into slices; neighbours coalesce on free.
    /// Free slices are found through two-level segregated lists (O(1)).
    Sliced,
    /// One allocation per page, each page sized to its request (rounded to
    /// the alignment). An idle page is reused only for a request it fits
    /// tightly (see [`MemoryPolicy::fit_slack_shift`]).
    Exclusive,
    /// Exact-size pages for persistent mode; not listed in a layout.
    Persistent,
    /// Requests larger than every pool: a page each, released on free; not
    /// listed in a layout.
    Dedicated,
}

impl PoolKind {
    /// A short lowercase name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            PoolKind::Small => "small",
            PoolKind::Sliced => "sliced",
            PoolKind::Exclusive => "exclusive",
            PoolKind::Persistent => "persistent",
            PoolKind::Dedicated => "dedicated",
        }
    }
}

impl fmt::Display for PoolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One pool of a layout.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PoolSpec {
    /// How the pool carves pages. Only `Small`, `Sliced` and `Exclusive`
    /// may be listed.
    pub kind: PoolKind,
    /// Sliced and small pools: the size of every page. Exclusive pools: the
    /// largest page the pool makes (pages are sized to their request).
    pub page_size: u64,
    /// The largest request the pool serves (at most `page_size`).
    pub max_slice: u64,
    /// The most bytes the pool may hold from storage; `None` for no cap.
    pub cap: Option<u64>,
}

impl PoolSpec {
    /// A small pool of `page_size` pages for requests up to `max_slice`.
    pub const fn small(page_size: u64, max_slice: u64) -> Self {
        Self {
            kind: PoolKind::Small,
            page_size,
            max_slice,
            cap: None,
        }
    }

    /// A sliced pool of `page_size` pages for requests up to `max_slice`.
    pub const fn sliced(page_size: u64, max_slice: u64) -> Self {
        Self {
            kind: PoolKind::Sliced,
            page_size,
            max_slice,
            cap: None,
        }
    }

    /// An exclusive pool for requests up to `max_size` (one page each).
    pub const fn exclusive(max_size: u64) -> Self {
        Self {
            kind: PoolKind::Exclusive,
            page_size: max_size,
            max_slice: max_size,
            cap: None,
        }
    }

    /// The same pool with a cap on the bytes it may hold.
    pub const fn with_cap(mut self, cap: u64) -> Self {
        self.cap = Some(cap);
        self
    }
}

/// The thresholds that decide how much idle memory a manager keeps.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryPolicy {
    /// Trim before grow: when a reserve must take new storage and the bytes
    /// held (pages, plus pages released but not yet flushed) would pass the
    /// limit (the most ever held, or the peak of live bytes plus the
    /// headroom below, whichever is larger), idle pages are released (oldest
    /// idle first) and the storage flushed before allocating, until the new
    /// page fits under the limit or nothing idle is left. Memory held then
    /// only grows when live data needs it (idle pages of an earlier phase
    /// that the new sizes cannot use go back first; PyTorch's
    /// `garbage_collection_threshold` is a cousin). Never while a capture
    /// window is open.
    pub trim_before_grow: bool,
    /// Headroom of trimming: the bytes held may also grow up to the peak of
    /// live bytes plus `peak >> trim_headroom_shift` before idle pages are
    /// released (idle pages within it stay cached for reuse, saving storage
    /// calls). 64 means no headroom: only the most ever held.
    pub trim_headroom_shift: u32,
    /// Periodic release: an idle page that stayed idle for this many
    /// reserves is released (checked every `period` reserves, so a page goes
    /// after one to two periods). `None` turns it off. Never while a capture
    /// window is open.
    pub release_idle_after: Option<NonZeroU64>,
    /// An idle exclusive (or persistent) page of `p` bytes is reused for a
    /// request of `r` bytes only when `p - r <= r >> fit_slack_shift`; a
    /// looser page stays idle (and is what trimming releases first). 64 means
    /// exact fits only.
    pub fit_slack_shift: u32,
    /// Exclusive and dedicated pages are sized to their request rounded up
    /// to a multiple of `2^(log2(size) - page_rounding_shift)` bytes (at
    /// most `1/2^shift` more), so requests of nearby sizes (a cache growing
    /// a little every step) share page sizes and reuse idle pages instead of
    /// asking the storage each time. 64 means exact sizes (alignment only).
    pub page_rounding_shift: u32,
    /// Serve every request from the persistent pool, whatever the mode the
    /// caller sets (as a pinned-host staging pool does).
    pub force_persistent: bool,
    /// On a resizable storage, a commit reaches ahead over free space to
    /// at least `held >> commit_step_shift` bytes (what the manager holds,
    /// by this fraction), within the trim limit when trimming: the number of
    /// commits then grows with the logarithm of the memory. 64: commit only
    /// what a page needs.
    pub commit_step_shift: u32,
    /// On a resizable storage, a granule a page shares with a neighbour is
    /// committed as a chunk of its own (more commits; the page's own
    /// granules go back with it).
    pub split_boundaries: bool,
    /// On a resizable storage, pages of at least this many granules get a
    /// reservation of their own, sized to them: a large buffer (logits, a
    /// growing cache) neither fragments the space of the others nor keeps
    /// memory once it is freed and the memory is needed elsewhere.
    pub large_page_granules: u32,
    /// On a resizable storage, when carved pages guard against stranding
    /// free memory inside committed chunks (see [`StrandGuard`]).
    pub strand_guard: StrandGuard,
    /// On a resizable storage, what decommits made by choice (trimming,
    /// the strand guard) may cost in estimated driver time, earned by the
    /// reserves (see [`ChurnBudget`]); past it, idle memory is kept.
    pub churn_budget: ChurnBudget,
    /// The most pages the manager may hold at once.
    pub max_pages: u32,
}

/// When a manager over a resizable storage guards against *stranded*
/// memory: free space inside a committed chunk that some page still uses,
/// which cannot be given back (a chunk is one commit, given back whole).
///
/// Guarding means: a page's boundary granules are committed as chunks of
/// their own, a commit covers only what the page needs (no reaching ahead),
/// and an idle chunk a new page would use only in part is decommitted first
/// (so its rest is not stranded while the page lives). Each costs driver
/// calls; workloads with structure (training steps, phases, a growing cache)
/// strand little without it, workloads of random sizes and lifetimes strand
/// a tenth of their memory and more.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum StrandGuard {
    /// Never: fewest commits.
    Off,
    /// From the first commit that passes the trim limit while the live
    /// bytes are below their peak and more than 1/32 of the memory held
    /// (and more than eight granules) is stranded (stranding made the
    /// manager grow), until less than 1/64 is; only while the policy's
    /// [`ChurnBudget`] covers its calls.
    #[default]
    Adaptive,
    /// Always: fewest bytes.
    On,
}

impl Default for MemoryPolicy {
    fn default() -> Self {
        Self {
            trim_before_grow: true,
            trim_headroom_shift: 7,
            release_idle_after: None,
            fit_slack_shift: 5,
            page_rounding_shift: 5,
            force_persistent: false,
            max_pages: 1 << 20,
            commit_step_shift: 6,
            split_boundaries: false,
            large_page_granules: 256,
            strand_guard: StrandGuard::Adaptive,
            // Chosen with the driver model (`memory_model` example): the
            // recorded traces keep every trim they had; workloads of
            // irregular sizes spend a few ms where round trips cost them
            // 10-100x the driver pool's time.
            churn_budget: ChurnBudget {
                per_reserve_ns: 500,
                per_mib_ns: 150,
            },
        }
    }
}

/// What a policy favours when bytes held and driver time pull apart.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Favour {
    /// Fewest bytes held: commit only what slices need, give idle memory
    /// back before growing, always guard against stranded memory, whatever
    /// the calls cost ([`ChurnBudget::UNLIMITED`]).
    Bytes,
    /// Both: the default.
    #[default]
    Balanced,
    /// Fewest driver calls: commit ahead in large steps, keep idle memory,
    /// never guard against stranded memory.
    Time,
}

impl MemoryPolicy {
    /// The default policy tilted towards `favour`.
    pub fn favouring(favour: Favour) -> Self {
        let base = Self::default();
        match favour {
            Favour::Balanced => base,
            Favour::Bytes => Self {
                trim_headroom_shift: 64,
                commit_step_shift: 64,
                split_boundaries: true,
                strand_guard: StrandGuard::On,
                churn_budget: ChurnBudget::UNLIMITED,
                ..base
            },
            Favour::Time => Self {
                trim_headroom_shift: 5,
                commit_step_shift: 4,
                strand_guard: StrandGuard::Off,
                ..base
            },
        }
    }
}

/// A validated pool layout and its policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLayout {
    pools: Vec<PoolSpec>,
    alignment: u64,
    policy: MemoryPolicy,
}

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

/// Why a layout was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LayoutError {
    /// The pool list is empty.
    Empty,
    /// A pool has a zero page size or a zero largest slice.
    ZeroSize {
        /// The pool's index in the list.
        pool: usize,
    },
    /// A pool's largest slice exceeds its page size.
    SliceLargerThanPage {
        /// The pool's index in the list.
        pool: usize,
        /// Its largest slice.
        slice: u64,
        /// Its page size.
        page: u64,
    },
    /// A pool's cap is smaller than one of its pages.
    CapSmallerThanPage {
        /// The pool's index in the list.
        pool: usize,
        /// Its cap.
        cap: u64,
        /// Its page size.
        page: u64,
    },
    /// The page budget exceeds [`MAX_PAGES`] (or is zero).
    TooManyPages {
        /// The budget asked for.
        requested: u32,
        /// The limit.
        limit: u32,
    },
    /// More than [`MAX_POOLS`] pools.
    TooManyPools {
        /// The number listed.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// Pools must be listed by strictly growing `max_slice`.
    Unordered {
        /// The first pool out of order.
        pool: usize,
    },
    /// `Persistent` and `Dedicated` pools always exist and cannot be listed.
    ReservedKind {
        /// The pool's index in the list.
        pool: usize,
    },
    /// The alignment is zero, not a power of two, or above
    /// [`MAX_ALIGNMENT`].
    BadAlignment {
        /// The alignment given.
        alignment: u64,
    },
    /// A pool's pages are larger than the device's memory
    /// ([`MemoryLayout::fits`]).
    PageLargerThanDevice {
        /// The pool's index in the list.
        pool: usize,
        /// Its page size.
        page: u64,
        /// The device's memory.
        total: u64,
    },
    /// The device has less memory than one page of its alignment.
    DeviceTooSmall {
        /// The device's memory.
        total: u64,
        /// The smallest page it could have.
        page: u64,
    },
    /// A pool's page size exceeds [`MAX_PAGE_SIZE`].
    PageTooLarge {
        /// The pool's index in the list.
        pool: usize,
        /// Its page size.
        page: u64,
        /// The limit.
        limit: u64,
    },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LayoutError::Empty => write!(f, "the layout lists no pool"),
            LayoutError::ZeroSize { pool } => {
                write!(f, "pool {pool} has a zero page size or largest slice")
            }
            LayoutError::SliceLargerThanPage { pool, slice, page } => write!(
                f,
                "pool {pool}: largest slice {slice} B exceeds its page size {page} B"
            ),
            LayoutError::CapSmallerThanPage { pool, cap, page } => {
                write!(
                    f,
                    "pool {pool}: cap {cap} B is smaller than one page ({page} B)"
                )
            }
            LayoutError::TooManyPages { requested, limit } => {
                write!(f, "page budget {requested} is outside 1..={limit}")
            }
            LayoutError::TooManyPools { count, limit } => {
                write!(f, "{count} pools listed, at most {limit} allowed")
            }
            LayoutError::Unordered { pool } => write!(
                f,
                "pool {pool}: pools must be listed by strictly growing largest slice"
            ),
            LayoutError::ReservedKind { pool } => write!(
                f,
                "pool {pool}: persistent and dedicated pools always exist and cannot be listed"
            ),
            LayoutError::BadAlignment { alignment } => write!(
                f,
                "alignment {alignment} is not a power of two of at most {MAX_ALIGNMENT}"
            ),
            LayoutError::PageLargerThanDevice { pool, page, total } => write!(
                f,
                "pool {pool}: pages of {page} B do not fit the device's {total} B"
            ),
            LayoutError::DeviceTooSmall { total, page } => write!(
                f,
                "the device's {total} B of memory hold no page of {page} B"
            ),
            LayoutError::PageTooLarge { pool, page, limit } => write!(
                f,
                "pool {pool}: page size {page} B exceeds the limit of {limit} B"
            ),
        }
    }
}

impl core::error::Error for LayoutError {}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// The largest power of two at most `x` (`x` > 0).
const fn prev_power_of_two(x: u64) -> u64 {
    1 << (63 - x.leading_zeros())
}

impl MemoryLayout {
    /// A custom layout: `pools` ordered by growing `max_slice`, offsets and
    /// pages aligned to `alignment`, with `policy`.
    pub fn new(
        pools: &[PoolSpec],
        alignment: u64,
        policy: MemoryPolicy,
    ) -> Result<Self, LayoutError> {
        if !alignment.is_power_of_two() || alignment > MAX_ALIGNMENT {
            return Err(LayoutError::BadAlignment { alignment });
        }
        if pools.is_empty() {
            return Err(LayoutError::Empty);
        }
        if pools.len() > MAX_POOLS {
            return Err(LayoutError::TooManyPools {
                count: pools.len(),
                limit: MAX_POOLS,
            });
        }
        if policy.max_pages == 0 || policy.max_pages > MAX_PAGES {
            return Err(LayoutError::TooManyPages {
                requested: policy.max_pages,
                limit: MAX_PAGES,
            });
        }
        let mut previous = 0;
        for (i, p) in pools.iter().enumerate() {
            if matches!(p.kind, PoolKind::Persistent | PoolKind::Dedicated) {
                return Err(LayoutError::ReservedKind { pool: i });
            }
            if p.page_size == 0 || p.max_slice == 0 {
                return Err(LayoutError::ZeroSize { pool: i });
            }
            if p.page_size > MAX_PAGE_SIZE {
                return Err(LayoutError::PageTooLarge {
                    pool: i,
                    page: p.page_size,
                    limit: MAX_PAGE_SIZE,
                });
            }
            if p.max_slice > p.page_size {
                return Err(LayoutError::SliceLargerThanPage {
                    pool: i,
                    slice: p.max_slice,
                    page: p.page_size,
                });
            }
            if let Some(cap) = p.cap {
                if cap < p.page_size {
                    return Err(LayoutError::CapSmallerThanPage {
                        pool: i,
                        cap,
                        page: p.page_size,
                    });
                }
            }
            if p.max_slice <= previous {
                return Err(LayoutError::Unordered { pool: i });
            }
            previous = p.max_slice;
        }
        Ok(Self {
            pools: pools.to_vec(),
            alignment,
            policy,
        })
    }

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
    /// unknown (no limit).
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
    /// or less memory than one page of the alignment.
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
            Ok(layout) => layout,
            // The presets are built to be valid for any properties in range;
            // fall back to the simplest valid layout if a change breaks that.
            Err(_) => Self {
                pools: alloc::vec![PoolSpec::exclusive(max_page)],
                alignment,
                policy: MemoryPolicy::default(),
            },
        }
    }

    /// Whether every page of this layout fits a device of `total` bytes
    /// (0: unknown, always fits): else the first pool whose page does not.
    pub fn fits(&self, total: u64) -> Result<(), LayoutError> {
        if total == 0 {
            return Ok(());
        }
        for (i, p) in self.pools.iter().enumerate() {
            let page = match p.kind {
                // Exclusive pages are sized to their requests.
                PoolKind::Exclusive => self.alignment,
                _ => p.page_size,
            };
            if page > total {
                return Err(LayoutError::PageLargerThanDevice {
                    pool: i,
                    page,
                    total,
                });
            }
        }
        Ok(())
    }

    /// The same layout with another policy (validated again).
    pub fn with_policy(&self, policy: MemoryPolicy) -> Result<Self, LayoutError> {
        Self::new(&self.pools, self.alignment, policy)
    }

    /// The listed pools, by growing `max_slice`.
    pub fn pools(&self) -> &[PoolSpec] {
        &self.pools
    }

    /// The alignment of every page and offset.
    pub const fn alignment(&self) -> u64 {
        self.alignment
    }

    /// The policy.
    pub const fn policy(&self) -> &MemoryPolicy {
        &self.policy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props() -> DeviceProperties {
        DeviceProperties {
            total_memory: 141 << 30,
            max_page_size: 1 << 30,
            alignment: 256,
            integrated: false,
        }
    }

    #[test]
    fn presets_are_valid_and_ordered() {
        for p in [
            LayoutPreset::Balanced,
            LayoutPreset::ExclusivePages,
            LayoutPreset::Sliced,
        ] {
            let l = MemoryLayout::preset(p, &props());
            let again = MemoryLayout::new(l.pools(), l.alignment(), *l.policy());
            assert_eq!(again.as_ref(), Ok(&l), "{p:?}");
            assert_eq!(l.pools().last().unwrap().max_slice, 1 << 30, "{p:?}");
        }
    }

    #[test]
    fn odd_properties_still_give_a_valid_layout() {
        let p = DeviceProperties {
            total_memory: 0,
            max_page_size: 0,
            alignment: 3,
            integrated: true,
        };
        let l = MemoryLayout::for_device(&p);
        assert_eq!(l.alignment(), 256);
        assert!(MemoryLayout::new(l.pools(), l.alignment(), *l.policy()).is_ok());
    }

    /// Sizes and alignments at the edge of `u64` are typed errors, and
    /// properties out of range still give a valid layout (issue: a page size
    /// of 2^64 - 1 used to overflow the rounding, an alignment of 2^63 to
    /// corrupt the accounting).
    #[test]
    fn absurd_sizes_and_alignments_are_refused_not_wrapped() {
        let pol = MemoryPolicy::default();
        assert_eq!(
            MemoryLayout::new(&[PoolSpec::exclusive(u64::MAX)], 256, pol),
            Err(LayoutError::PageTooLarge {
                pool: 0,
                page: u64::MAX,
                limit: MAX_PAGE_SIZE
            })
        );
        assert_eq!(
            MemoryLayout::new(&[PoolSpec::sliced(u64::MAX, 1 << 20)], 256, pol),
            Err(LayoutError::PageTooLarge {
                pool: 0,
                page: u64::MAX,
                limit: MAX_PAGE_SIZE
            })
        );
        assert_eq!(
            MemoryLayout::new(&[PoolSpec::exclusive(1 << 20)], 1 << 63, pol),
            Err(LayoutError::BadAlignment { alignment: 1 << 63 })
        );
        assert!(
            MemoryLayout::new(&[PoolSpec::exclusive(MAX_PAGE_SIZE)], MAX_ALIGNMENT, pol).is_ok()
        );
        let text = alloc::format!("{}", LayoutError::BadAlignment { alignment: 1 << 63 });
        assert!(text.contains("9223372036854775808"), "{text}");
        for max_page_size in [u64::MAX, u64::MAX - 1, 1 << 63, MAX_PAGE_SIZE + 1] {
            let p = DeviceProperties {
                max_page_size,
                ..props()
            };
            for preset in [
                LayoutPreset::Balanced,
                LayoutPreset::ExclusivePages,
                LayoutPreset::Sliced,
            ] {
                let l = MemoryLayout::preset(preset, &p);
                // The largest page is the device's memory at most.
                assert_eq!(l.pools().last().unwrap().max_slice, p.total_memory);
                let unknown = DeviceProperties {
                    total_memory: 0,
                    ..p
                };
                let l0 = MemoryLayout::preset(preset, &unknown);
                assert_eq!(l0.pools().last().unwrap().max_slice, MAX_PAGE_SIZE);
                let again = MemoryLayout::new(l.pools(), l.alignment(), *l.policy());
                assert_eq!(again.as_ref(), Ok(&l), "{preset:?}");
            }
        }
        let huge_align = DeviceProperties {
            alignment: 1 << 63,
            ..props()
        };
        assert_eq!(
            MemoryLayout::try_for_device(&huge_align),
            Err(LayoutError::BadAlignment { alignment: 1 << 63 })
        );
        assert_eq!(MemoryLayout::for_device(&huge_align).alignment(), 256);
        assert_eq!(
            MemoryLayout::try_for_device(&props()),
            Ok(MemoryLayout::for_device(&props()))
        );
    }

    /// Defaults scale with the device: on a device of a few hundred KiB the
    /// small pools' pages are 1/16 of it (a 256 KiB device used to get
    /// 1 MiB pages and could allocate nothing), GPU-sized devices keep
    /// 1 MiB and 512 KiB pages; every preset fits its device, and a device
    /// smaller than one aligned page is a typed error.
    #[test]
    fn presets_scale_with_the_devices_memory() {
        for total in [
            4 * KIB,
            64 * KIB,
            256 * KIB,
            MIB,
            8 * MIB,
            16 * MIB,
            1 << 34,
            141 << 30,
        ] {
            let p = DeviceProperties {
                total_memory: total,
                max_page_size: total / 4,
                alignment: 256,
                integrated: true,
            };
            for preset in [
                LayoutPreset::Balanced,
                LayoutPreset::ExclusivePages,
                LayoutPreset::Sliced,
            ] {
                let l = MemoryLayout::try_preset(preset, &p).unwrap();
                assert_eq!(l.fits(total), Ok(()), "{preset:?} {total}");
                let small = l.pools()[0];
                assert!(
                    small.page_size <= (total / 16).max(256),
                    "{total}: {small:?}"
                );
                let again = MemoryLayout::new(l.pools(), l.alignment(), *l.policy());
                assert_eq!(again.as_ref(), Ok(&l), "{preset:?} {total}");
            }
            let l = MemoryLayout::for_device(&p);
            if total >= 16 * MIB {
                assert_eq!(
                    (l.pools()[0].page_size, l.pools()[1].page_size),
                    (MIB, 512 * KIB),
                    "{total}"
                );
            }
        }
        let tiny = DeviceProperties {
            total_memory: 100,
            max_page_size: 100,
            alignment: 256,
            integrated: true,
        };
        assert_eq!(
            MemoryLayout::try_for_device(&tiny),
            Err(LayoutError::DeviceTooSmall {
                total: 100,
                page: 256
            })
        );
        let big =
            MemoryLayout::new(&[PoolSpec::sliced(MIB, KIB)], 256, MemoryPolicy::default()).unwrap();
        assert_eq!(
            big.fits(256 * KIB),
            Err(LayoutError::PageLargerThanDevice {
                pool: 0,
                page: MIB,
                total: 256 * KIB
            })
        );
        assert!(alloc::format!("{}", big.fits(1).unwrap_err()).contains("do not fit"));
    }

    #[test]
    fn each_invalid_layout_has_its_error() {
        let pol = MemoryPolicy::default();
        assert_eq!(MemoryLayout::new(&[], 256, pol), Err(LayoutError::Empty));
        assert_eq!(
            MemoryLayout::new(&[PoolSpec::sliced(0, 0)], 256, pol),
            Err(LayoutError::ZeroSize { pool: 0 })
        );
        assert_eq!(
            MemoryLayout::new(&[PoolSpec::sliced(1024, 2048)], 256, pol),
            Err(LayoutError::SliceLargerThanPage {
                pool: 0,
                slice: 2048,
                page: 1024
            })
        );
        assert_eq!(
            MemoryLayout::new(&[PoolSpec::sliced(4096, 1024).with_cap(2048)], 256, pol),
            Err(LayoutError::CapSmallerThanPage {
                pool: 0,
                cap: 2048,
                page: 4096
            })
        );
        let many = [PoolSpec::exclusive(1 << 20); MAX_POOLS + 1];
        assert_eq!(
            MemoryLayout::new(&many, 256, pol),
            Err(LayoutError::TooManyPools {
                count: MAX_POOLS + 1,
                limit: MAX_POOLS
            })
        );
        let pages = MemoryPolicy {
            max_pages: MAX_PAGES + 1,
            ..pol
        };
        assert_eq!(
            MemoryLayout::new(&[PoolSpec::exclusive(1 << 20)], 256, pages),
            Err(LayoutError::TooManyPages {
                requested: MAX_PAGES + 1,
                limit: MAX_PAGES
            })
        );
        assert_eq!(
            MemoryLayout::new(
                &[PoolSpec::exclusive(1 << 20), PoolSpec::exclusive(1 << 10)],
                256,
                pol
            ),
            Err(LayoutError::Unordered { pool: 1 })
        );
        let persistent = PoolSpec {
            kind: PoolKind::Persistent,
            ..PoolSpec::exclusive(1 << 20)
        };
        assert_eq!(
            MemoryLayout::new(&[persistent], 256, pol),
            Err(LayoutError::ReservedKind { pool: 0 })
        );
        assert_eq!(
            MemoryLayout::new(&[PoolSpec::exclusive(1 << 20)], 96, pol),
            Err(LayoutError::BadAlignment { alignment: 96 })
        );
        let text = alloc::format!(
            "{}",
            LayoutError::CapSmallerThanPage {
                pool: 2,
                cap: 1,
                page: 4
            }
        );
        assert!(
            text.contains("pool 2") && text.contains("cap 1 B"),
            "{text}"
        );
    }
}
