//! Slice handles: small `Copy` tokens with a generation, so a stale handle
//! (freed, or from another generation of the same slot) is detected and
//! rejected with a typed error instead of touching someone else's slice.

use core::fmt;

/// A reserved slice of one [`MemoryManager`](super::MemoryManager).
///
/// Handles are only meaningful to the manager that made them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SliceHandle {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl SliceHandle {
    /// The slot index (stable while the slice lives; reused after).
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The slot's generation when the handle was made.
    pub const fn generation(self) -> u32 {
        self.generation
    }
}

impl fmt::Display for SliceHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "slice #{}.{}", self.index, self.generation)
    }
}

/// Which pools serve reserves.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum AllocationMode {
    /// Pools chosen by size.
    #[default]
    Auto,
    /// The persistent pool (exact-size pages that trimming and periodic
    /// release leave alone): for data that lives as long as the program,
    /// such as weights.
    Persistent,
}

/// A slice handed out inside a capture window, returned by
/// [`MemoryManager::end_capture`](super::MemoryManager::end_capture): the
/// graph holds a pin on it until [`MemoryManager::unpin`](super::MemoryManager::unpin).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct CapturedSlice {
    /// The slice (still valid for `unpin`, `range`, `cursor`).
    pub handle: SliceHandle,
    /// Its bytes.
    pub range: crate::platform::DeviceRange,
}
