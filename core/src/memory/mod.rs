//! Per-stream memory: pools that carve storage pages into slices.
//!
//! One [`MemoryManager`] per stream, generic over the platform's
//! [`Storage`](crate::platform::Storage). Its pools come from a
//! [`MemoryLayout`]:
//!
//! - a **small** pool for tiny requests (metadata churn never fragments the
//!   pages of larger data),
//! - **sliced** pools: fixed-size pages split into slices, free slices found
//!   through two-level segregated free lists (O(1)), neighbours coalesced on
//!   free,
//! - **exclusive** pools: one page per allocation, sized to it; an idle page
//!   is reused only when it fits a request tightly (O(log n) best fit),
//! - a **dedicated** path for requests larger than every pool (released on
//!   free), and a **persistent** pool for persistent mode.
//!
//! Policies (all in [`MemoryPolicy`]): trim before grow (idle pages go back
//! before the manager would hold more than it ever held), periodic release
//! of long-idle pages, explicit cleanup, OOM retry after releasing idle
//! pages. Nothing is released while a capture window is open.

mod error;
mod handle;
mod layout;
mod manager;
mod report;
mod size_index;
mod tlsf;

pub use error::{MemoryError, OomCause};
pub use handle::{AllocationMode, CapturedSlice, SliceHandle};
pub use layout::{
    LayoutError, LayoutPreset, MAX_PAGES, MAX_POOLS, MemoryLayout, MemoryPolicy, PoolKind, PoolSpec,
};
pub use manager::{MAX_REQUEST, MemoryManager, Released};
pub use report::{HumanBytes, MemoryReport, PoolReport};
