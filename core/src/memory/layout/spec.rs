//! One pool of a layout: how it carves its pages and which requests it
//! serves.

use core::fmt;

#[cfg(doc)]
use super::MemoryPolicy;

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
