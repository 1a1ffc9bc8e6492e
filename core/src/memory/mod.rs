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
//! before the manager would hold more than it ever held), page rounding (a
//! 1/128 size class, so nearby sizes share pages), periodic release of
//! long-idle pages, explicit cleanup, OOM retry after releasing idle pages,
//! and over a resizable storage the strand guard ([`StrandGuard`]). Nothing
//! is released while a capture window is open.
//!
//! Frees come in two kinds: [`MemoryManager::free`] once no queued work
//! touches the slice (a fence passed), or
//! [`MemoryManager::free_ordered`] at once, in stream order, naming the
//! stream cursor of its last use (see [`Progress`]).
//!
//! ```
//! use streamcore::memory::{MemoryError, MemoryLayout, MemoryManager};
//! use streamcore::platform::{DeviceProperties, ErrorKind, PageId, PlatformError, Storage};
//!
//! #[derive(Debug)]
//! struct Exhausted;
//! impl core::fmt::Display for Exhausted {
//!     fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
//!         f.write_str("exhausted")
//!     }
//! }
//! impl PlatformError for Exhausted {
//!     fn kind(&self) -> ErrorKind { ErrorKind::OutOfMemory }
//! }
//! /// A storage of at most 64 MiB that only counts.
//! struct Counted { held: u64, next: u64 }
//! impl Storage for Counted {
//!     type Error = Exhausted;
//!     fn alignment(&self) -> u64 { 256 }
//!     fn alloc(&mut self, size: u64) -> Result<PageId, Exhausted> {
//!         if self.held + size > 64 << 20 { return Err(Exhausted); }
//!         self.held += size;
//!         self.next += 1;
//!         Ok(PageId(self.next))
//!     }
//!     fn dealloc(&mut self, _: PageId) {}
//!     fn flush(&mut self) -> Result<(), Exhausted> { Ok(()) }
//! }
//!
//! let props = DeviceProperties {
//!     total_memory: 64 << 20,
//!     max_page_size: 16 << 20,
//!     alignment: 256,
//!     integrated: false,
//! };
//! let mut m = MemoryManager::new(Counted { held: 0, next: 0 }, MemoryLayout::for_device(&props));
//! let (h, range) = m.reserve(1000)?;
//! assert_eq!((range.len, range.offset % 256), (1000, 0));
//! m.set_cursor(h, 42)?;
//! m.free(h)?;
//! assert!(matches!(m.free(h), Err(MemoryError::StaleHandle(_))));
//! match m.reserve(100 << 20) {
//!     Err(MemoryError::OutOfMemory { requested, .. }) => assert_eq!(requested, 100 << 20),
//!     other => panic!("{other:?}"),
//! }
//! println!("{}", m.report());
//! # Ok::<(), MemoryError<Exhausted>>(())
//! ```

mod bounded;
mod budget;
mod chunks;
mod decommit;
mod error;
mod free;
mod grow;
mod growth;
mod guard;
mod handle;
mod lanes;
mod large;
mod layout;
mod manager;
mod pages;
mod pool;
mod priming;
mod progress;
mod release;
mod report;
mod reserve;
mod round_trips;
mod rounding;
mod segment;
mod size_index;
mod slots;
mod tlsf;

pub use budget::ChurnBudget;
pub use error::{MemoryError, OomCause};
pub use handle::{AllocationMode, CapturedSlice, SliceHandle};
pub use layout::{
    Favour, LayoutError, LayoutPreset, MAX_ALIGNMENT, MAX_PAGE_SIZE, MAX_PAGES, MAX_POOLS,
    MemoryLayout, MemoryPolicy, PoolKind, PoolSpec, StrandGuard,
};
pub use manager::{MAX_HELD, MAX_REQUEST, MemoryManager, Released};
pub use progress::{NoWait, Progress};
pub use report::{HumanBytes, MemoryReport, PoolReport, Trimming};
