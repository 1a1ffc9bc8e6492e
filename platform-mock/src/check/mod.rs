//! The hazard checker: what it reports and how it decides.
//!
//! Like PyTorch's CUDA sanitizer, but deterministic and byte-range precise.
//! Every agent (the host, each stream) carries a vector clock. Submitting a
//! command joins the host's clock into its stream's clock (work queued after
//! a host action is ordered after it) and ticks the stream; recording an
//! event snapshots the stream's clock; waiting on an event joins it into the
//! waiting stream; a host `synchronize`, or a `query` answering `true`, joins
//! it into the host's clock.
//!
//! Every byte of every page has a shadow: the last access that wrote it and
//! the last read of it by each agent since. An access is checked against the
//! shadow of the bytes it touches *when it is submitted* (host accesses: when
//! they happen), so a race is reported whether or not the seeded schedule
//! happened to run the two accesses in a harmful order. Two accesses of the
//! same agent are always ordered (streams are FIFO, the host is sequential).

mod clock;
pub(crate) mod range_map;
pub(crate) mod shadow;

pub(crate) use clock::VectorClock;

use std::fmt;
use std::sync::Arc;

use streamcore::platform::PageId;

use crate::memory::MemoryKind;

/// Who performs an access: the host, or the commands of one stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Agent {
    /// The host thread calling the platform.
    Host,
    /// Commands queued on one stream: in reports
    /// ([`MockPlatform::hazards`](crate::MockPlatform::hazards)), the
    /// device's number for it where a device created it (`StreamId(n)` is
    /// `Stream(n)`), else its order of creation on the platform.
    Stream(u32),
}

impl Agent {
    /// Index in a vector clock: the host is `0`, stream `s` is `s + 1`.
    pub(crate) fn index(self) -> usize {
        match self {
            Agent::Host => 0,
            Agent::Stream(s) => s as usize + 1,
        }
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Agent::Host => f.write_str("host"),
            Agent::Stream(s) => write!(f, "stream {s}"),
        }
    }
}

/// What an operation was.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OpKind {
    /// A pinned-host → device copy.
    CopyToDevice,
    /// A device → pinned-host copy.
    CopyToHost,
    /// A device → device copy.
    CopyDevice,
    /// A kernel launch, by kernel name.
    Kernel(Arc<str>),
    /// `HostStorage::write`.
    HostWrite,
    /// `HostStorage::read`.
    HostRead,
    /// `Storage::dealloc`.
    Dealloc,
    /// `Platform::synchronize`.
    Synchronize,
    /// `Platform::query`.
    Query,
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpKind::CopyToDevice => f.write_str("copy_to_device"),
            OpKind::CopyToHost => f.write_str("copy_to_host"),
            OpKind::CopyDevice => f.write_str("copy_device"),
            OpKind::Kernel(name) => write!(f, "kernel `{name}`"),
            OpKind::HostWrite => f.write_str("host write"),
            OpKind::HostRead => f.write_str("host read"),
            OpKind::Dealloc => f.write_str("dealloc"),
            OpKind::Synchronize => f.write_str("synchronize"),
            OpKind::Query => f.write_str("query"),
        }
    }
}

/// One operation named in a report.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OpRef {
    /// The operation's index: one counter over every command submitted and
    /// every host access, in program order (the same index appears in the
    /// event log).
    pub op: u64,
    /// Who performed it.
    pub agent: Agent,
    /// What it was.
    pub kind: OpKind,
}

impl fmt::Display for OpRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "op #{} ({}) on {}", self.op, self.kind, self.agent)
    }
}

/// The bytes a hazard is about: the smallest range covering every
/// conflicting byte of one page.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ByteRange {
    /// Device or pinned host memory.
    pub memory: MemoryKind,
    /// The page.
    pub page: PageId,
    /// First conflicting byte.
    pub offset: u64,
    /// Bytes from `offset` to the last conflicting byte, inclusive.
    pub len: u64,
}

/// What kind of hazard was found.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum HazardKind {
    /// `current` reads bytes `previous` (another stream) writes, and nothing
    /// orders them.
    WriteRead,
    /// `current` writes bytes `previous` (another stream) reads, and nothing
    /// orders them.
    ReadWrite,
    /// Both write the bytes, and nothing orders them.
    WriteWrite,
    /// The host reads pinned bytes a queued command (`previous`) writes, and
    /// the host has not synchronized with it.
    HostReadPending,
    /// The host writes pinned bytes a queued command (`previous`) still reads
    /// or writes, and the host has not synchronized with it.
    HostWritePending,
    /// An access to a page after `previous` deallocated it.
    UseAfterFree,
    /// A read of bytes nothing wrote since the page was allocated.
    UninitializedRead,
    /// A host synchronization (`synchronize`, or `query` where the config
    /// forbids it) while a capture was open.
    SyncDuringCapture,
    /// A `dealloc` of a page that is not live in that storage (double free,
    /// unknown page, or a page of another storage).
    InvalidFree,
}

/// One hazard: what, which two operations, which bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Hazard {
    /// What was found.
    pub kind: HazardKind,
    /// The operation that found it (the later one).
    pub current: OpRef,
    /// The earlier, conflicting operation (none for an uninitialized read or
    /// a sync during capture).
    pub previous: Option<OpRef>,
    /// The bytes (none for a sync during capture).
    pub bytes: Option<ByteRange>,
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.current)?;
        if let Some(p) = &self.previous {
            write!(f, " conflicts with {p}")?;
        }
        if let Some(b) = &self.bytes {
            write!(
                f,
                " on {:?} page {} bytes {}..{}",
                b.memory,
                b.page.0,
                b.offset,
                b.offset.saturating_add(b.len)
            )?;
        }
        Ok(())
    }
}
