//! The memory manager's errors.

use alloc::boxed::Box;
use core::fmt;

use super::handle::SliceHandle;
use super::layout::{LayoutError, PoolKind};
use super::report::{HumanBytes, MemoryReport};
use crate::stream::capture::{CaptureError, Phase};

/// Why a reserve ran out of memory.
#[derive(Debug)]
#[non_exhaustive]
pub enum OomCause<E> {
    /// The storage answered [`ErrorKind::OutOfMemory`](crate::platform::ErrorKind::OutOfMemory)
    /// (after idle pages were released and the reserve retried once).
    Storage(E),
    /// The pool's cap would be passed.
    PoolCap {
        /// The pool.
        pool: PoolKind,
        /// Its cap in bytes.
        cap: u64,
    },
    /// The layout's page budget is spent.
    PageLimit {
        /// The budget.
        limit: u32,
    },
    /// The page the request needs is larger than any reservation the
    /// storage offers (over a storage with resizable pages): it can never
    /// be backed, so nothing was asked of the storage.
    LargerThanReservation {
        /// The page's bytes.
        page: u64,
        /// The largest reservation, in bytes.
        max: u64,
    },
    /// The manager would hold more than it can count
    /// ([`MAX_HELD`](super::MAX_HELD)): only a storage that never refuses
    /// gets this far.
    HeldLimit {
        /// The bound, in bytes.
        limit: u64,
    },
}

/// An error of a [`MemoryManager`](super::MemoryManager), generic over the
/// storage's error `E`.
#[derive(Debug)]
#[non_exhaustive]
pub enum MemoryError<E> {
    /// A reserve of zero bytes, or of more than the manager can address.
    InvalidSize {
        /// The size asked for.
        size: u64,
    },
    /// No memory for the request; the manager is unchanged.
    OutOfMemory {
        /// The bytes requested.
        requested: u64,
        /// Why.
        cause: OomCause<E>,
        /// The pools when it happened.
        report: Box<MemoryReport>,
    },
    /// A storage call failed for another reason than exhaustion.
    Storage {
        /// The call (`"alloc"`, `"flush"`).
        op: &'static str,
        /// The storage's error.
        source: E,
    },
    /// The handle's slice was freed (or never came from this manager).
    StaleHandle(SliceHandle),
    /// `free` of a slice its owner already freed, which a capture window or
    /// a graph pin still holds.
    AlreadyFreed(SliceHandle),
    /// `unpin` of a slice no graph pins.
    NotPinned(SliceHandle),
    /// Inside an open capture the request would need new storage (the
    /// warm-up missed it); nothing was allocated.
    AllocationInCapture {
        /// The bytes the storage would have been asked for.
        bytes: u64,
    },
    /// Another stream of the device is recording a capture and the
    /// request would need new storage: drivers capture device-wide, so a
    /// storage allocation now would invalidate that capture. Nothing was
    /// allocated; the request may succeed once the capture ends.
    CaptureElsewhere {
        /// The bytes the storage would have been asked for.
        bytes: u64,
    },
    /// A capture transition out of order.
    Capture(CaptureError),
    /// The call would release memory while a capture window is open.
    WindowOpen {
        /// The phase.
        phase: Phase,
    },
    /// A layout can only be installed while nothing is live.
    InUse {
        /// Bytes still requested by live slices.
        bytes: u64,
    },
    /// `end_persistent` without a matching `begin_persistent`.
    NoPersistentWindow,
    /// The layout cannot serve requests over this storage (the storage's
    /// alignment is out of range); nothing was reserved.
    Layout(LayoutError),
}

impl<E: fmt::Display> fmt::Display for OomCause<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OomCause::Storage(e) => write!(f, "the storage is exhausted ({e})"),
            OomCause::PoolCap { pool, cap } => {
                write!(
                    f,
                    "the {pool} pool's cap of {} is reached",
                    HumanBytes(*cap)
                )
            }
            OomCause::PageLimit { limit } => write!(f, "the budget of {limit} pages is spent"),
            OomCause::LargerThanReservation { page, max } => write!(
                f,
                "a page of {} is larger than the storage's largest reservation ({})",
                HumanBytes(*page),
                HumanBytes(*max)
            ),
            OomCause::HeldLimit { limit } => {
                write!(f, "a manager holds at most {}", HumanBytes(*limit))
            }
        }
    }
}

impl<E: fmt::Display> fmt::Display for MemoryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryError::InvalidSize { size } => write!(f, "cannot reserve {size} bytes"),
            MemoryError::OutOfMemory {
                requested,
                cause,
                report,
            } => write!(
                f,
                "out of memory reserving {} ({requested} B): {cause}\n{report}",
                HumanBytes(*requested)
            ),
            MemoryError::Storage { op, source } => write!(f, "storage `{op}` failed: {source}"),
            MemoryError::StaleHandle(h) => write!(f, "{h} is stale (freed or foreign)"),
            MemoryError::AlreadyFreed(h) => {
                write!(f, "{h} was already freed (a capture still holds it)")
            }
            MemoryError::NotPinned(h) => write!(f, "{h} is not pinned by a graph"),
            MemoryError::AllocationInCapture { bytes } => write!(
                f,
                "a storage allocation of {bytes} bytes would be needed inside the capture"
            ),
            MemoryError::CaptureElsewhere { bytes } => write!(
                f,
                "a storage allocation of {bytes} bytes would be needed while another stream \
                 records a capture (it would invalidate that capture)"
            ),
            MemoryError::Capture(e) => write!(f, "capture: {e}"),
            MemoryError::WindowOpen { phase } => {
                write!(
                    f,
                    "nothing is released while a capture window is open ({phase:?})"
                )
            }
            MemoryError::InUse { bytes } => write!(
                f,
                "cannot install a layout: {} still in use",
                HumanBytes(*bytes)
            ),
            MemoryError::NoPersistentWindow => write!(f, "no persistent window is open"),
            MemoryError::Layout(e) => write!(f, "layout: {e}"),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> core::error::Error for MemoryError<E> {}

impl<E> From<CaptureError> for MemoryError<E> {
    fn from(e: CaptureError) -> Self {
        MemoryError::Capture(e)
    }
}
