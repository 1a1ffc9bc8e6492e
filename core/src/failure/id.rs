//! Identifiers and byte regions of the taint graph.

use core::fmt;
use core::num::NonZeroU64;

use crate::platform::Access;
use crate::stream::capture::DoomReason;

/// One failure of the device, minted once by an [`ErrorGraph`] and never
/// reused.
///
/// `Option<FailureId>` is one word, and an id whose failure was pruned can
/// never be confused with a live one: the graph answers "unknown" for it.
///
/// [`ErrorGraph`]: super::ErrorGraph
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FailureId(NonZeroU64);

impl FailureId {
    /// The raw id, e.g. for [`DoomReason::Failure`].
    pub const fn get(self) -> NonZeroU64 {
        self.0
    }

    pub(crate) const fn from_raw(raw: NonZeroU64) -> Self {
        Self(raw)
    }
}

impl fmt::Display for FailureId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "failure #{}", self.0)
    }
}

impl From<FailureId> for DoomReason {
    /// A failure or skip inside an open capture window dooms it.
    fn from(id: FailureId) -> Self {
        DoomReason::Failure(id.get())
    }
}

/// A device-wide allocation (one buffer), minted by the device layer.
///
/// Ids are shared by every stream, so a failure on one stream claims bytes of
/// a buffer owned by another just like its own. The device layer MUST NOT
/// reuse an id while the graph still holds claims on it (free it first).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AllocId(pub u64);

/// `alloc #N`; an id past 2^32 as `alloc #INDEX.GENERATION` (its low and
/// high 32 bits): the device mints a buffer's id as its generation above
/// its slot index (`BufferId::as_u64`), and a report then names the buffer
/// as the buffer's own id shows it (`buffer INDEX.GENERATION`).
impl fmt::Display for AllocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (index, generation) = (self.0 & 0xFFFF_FFFF, self.0 >> 32);
        if generation == 0 {
            write!(f, "alloc #{index}")
        } else {
            write!(f, "alloc #{index}.{generation}")
        }
    }
}

/// A byte range `[offset, offset + len)` of one allocation.
///
/// The end saturates at `u64::MAX`; an empty region touches nothing.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// The allocation.
    pub alloc: AllocId,
    /// First byte, from the start of the allocation.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

impl Region {
    /// `len` bytes of `alloc` from `offset`.
    pub const fn new(alloc: AllocId, offset: u64, len: u64) -> Self {
        Self { alloc, offset, len }
    }

    /// One past the last byte (saturating).
    pub const fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }

    /// Whether the region touches no byte.
    pub const fn is_empty(&self) -> bool {
        self.end() <= self.offset
    }

    /// The region `[start, end)` of the same allocation.
    pub(crate) const fn span(alloc: AllocId, start: u64, end: u64) -> Self {
        Self {
            alloc,
            offset: start,
            len: end - start,
        }
    }

    /// Whether the two regions share at least one byte.
    pub const fn overlaps(&self, other: &Region) -> bool {
        self.alloc.0 == other.alloc.0
            && self.offset < other.end()
            && other.offset < self.end()
            && !self.is_empty()
            && !other.is_empty()
    }
}

/// `alloc #N bytes [A, B)`; an empty region `alloc #N (no bytes)`.
impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            write!(f, "{} (no bytes)", self.alloc)
        } else {
            write!(f, "{} bytes [{}, {})", self.alloc, self.offset, self.end())
        }
    }
}

/// One operand of a launch or copy: a region and how the work uses it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Operand {
    /// The bytes.
    pub region: Region,
    /// Whether the work reads them, writes them, or both.
    pub access: Access,
}

impl Operand {
    /// Bytes the work only reads.
    pub const fn read(region: Region) -> Self {
        Self {
            region,
            access: Access::Read,
        }
    }

    /// Bytes the work writes (all of them) without reading.
    pub const fn write(region: Region) -> Self {
        Self {
            region,
            access: Access::Write,
        }
    }

    /// Bytes the work reads and writes.
    pub const fn read_write(region: Region) -> Self {
        Self {
            region,
            access: Access::ReadWrite,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AllocId;
    use alloc::string::ToString;

    /// A device's packed buffer id reads as the buffer's own id does.
    #[test]
    fn a_packed_id_reads_as_index_and_generation() {
        assert_eq!(AllocId(7).to_string(), "alloc #7");
        assert_eq!(AllocId(1 << 32).to_string(), "alloc #0.1");
        assert_eq!(AllocId((3 << 32) | 5).to_string(), "alloc #5.3");
    }
}
