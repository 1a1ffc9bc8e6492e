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
//!
//! The parts: [`PoolSpec`] and [`PoolKind`] (`spec.rs`), [`MemoryPolicy`],
//! [`StrandGuard`] and [`Favour`] (`policy.rs`), the presets shaped by a
//! device's properties (`preset.rs`), [`LayoutError`] (`error.rs`).

use alloc::vec::Vec;

mod error;
mod policy;
mod preset;
mod spec;
#[cfg(test)]
mod tests;

pub use error::LayoutError;
pub use policy::{Favour, MemoryPolicy, StrandGuard};
pub use preset::LayoutPreset;
pub use spec::{PoolKind, PoolSpec};

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

/// `page` rounded up to `alignment` (both within the layout's limits, so
/// the rounding cannot overflow; saturates if it could).
fn aligned(page: u64, alignment: u64) -> u64 {
    super::rounding::round_up(page, alignment).unwrap_or(u64::MAX)
}

/// A validated pool layout and its policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLayout {
    pools: Vec<PoolSpec>,
    alignment: u64,
    policy: MemoryPolicy,
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
                // A page costs its size rounded to the alignment.
                let page = aligned(p.page_size, alignment);
                if cap < page {
                    return Err(LayoutError::CapSmallerThanPage { pool: i, cap, page });
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

    /// Whether every page of this layout fits a device of `total` bytes
    /// (0: unknown, always fits): else the first pool whose page does not.
    /// A page counts at its size rounded up to the alignment, what the
    /// manager asks its storage for.
    pub fn fits(&self, total: u64) -> Result<(), LayoutError> {
        if total == 0 {
            return Ok(());
        }
        for (i, p) in self.pools.iter().enumerate() {
            let page = match p.kind {
                // Exclusive pages are sized to their requests.
                PoolKind::Exclusive => self.alignment,
                _ => aligned(p.page_size, self.alignment),
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
