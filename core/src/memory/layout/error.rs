//! Why a layout was refused.

use core::fmt;

use super::MAX_ALIGNMENT;
#[cfg(doc)]
use super::{MAX_PAGE_SIZE, MAX_PAGES, MAX_POOLS, MemoryLayout};

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
        /// Its page size, rounded up to the alignment.
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
        /// Its page size, rounded up to the alignment.
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
            LayoutError::BadAlignment { alignment } if alignment.is_power_of_two() => write!(
                f,
                "alignment {alignment} is above the largest supported, {MAX_ALIGNMENT}"
            ),
            LayoutError::BadAlignment { alignment } => {
                write!(f, "alignment {alignment} is not a power of two")
            }
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
