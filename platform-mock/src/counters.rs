//! What happened, for tests: counters, and the exact sequence of host calls.

use std::sync::Arc;

use streamcore::platform::{ErrorKind, PageId};

use crate::memory::MemoryKind;

/// How many times each thing happened (successful calls only; failures are
/// counted in `errors`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Counters {
    /// Streams created.
    pub streams: u64,
    /// Events recorded (including captured ones).
    pub records: u64,
    /// Event waits queued (including captured ones).
    pub waits: u64,
    /// Event queries answered.
    pub queries: u64,
    /// Host synchronizations completed.
    pub syncs: u64,
    /// Host → device copies queued.
    pub copies_to_device: u64,
    /// Device → host copies queued.
    pub copies_to_host: u64,
    /// Device → device copies queued.
    pub copies_device: u64,
    /// Kernels loaded.
    pub kernels_loaded: u64,
    /// Kernel launches queued (including captured ones).
    pub launches: u64,
    /// Captures begun.
    pub captures_begun: u64,
    /// Captures sealed into graphs.
    pub graphs_captured: u64,
    /// Captures invalidated.
    pub captures_invalidated: u64,
    /// Graph launches.
    pub graph_launches: u64,
    /// Graphs destroyed.
    pub graphs_destroyed: u64,
    /// Device pages allocated.
    pub allocs: u64,
    /// Device pages deallocated.
    pub deallocs: u64,
    /// Pinned host pages allocated.
    pub host_allocs: u64,
    /// Pinned host pages deallocated.
    pub host_deallocs: u64,
    /// Storage flushes (device and host) that succeeded.
    pub flushes: u64,
    /// Pages released by flushes.
    pub pages_released: u64,
    /// `HostStorage::write` calls.
    pub host_writes: u64,
    /// `HostStorage::read` calls.
    pub host_reads: u64,
    /// Commands completed by the scheduler.
    pub commands_completed: u64,
    /// Event handles dropped.
    pub events_dropped: u64,
    /// Calls that returned an error.
    pub errors: u64,
}

/// One host call, as recorded in [`MockPlatform::calls`](crate::MockPlatform::calls).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Call {
    /// `create_stream`.
    CreateStream {
        /// The new stream's id.
        stream: u32,
    },
    /// `record`.
    Record {
        /// Stream.
        stream: u32,
        /// The new event's id.
        event: u64,
    },
    /// `wait`.
    Wait {
        /// Stream.
        stream: u32,
        /// Event waited on.
        event: u64,
    },
    /// `query`.
    Query {
        /// Event.
        event: u64,
        /// The answer.
        passed: bool,
    },
    /// `synchronize`.
    Synchronize {
        /// Event.
        event: u64,
    },
    /// `copy_to_device`.
    CopyToDevice {
        /// Stream.
        stream: u32,
    },
    /// `copy_to_host`.
    CopyToHost {
        /// Stream.
        stream: u32,
    },
    /// `copy_device`.
    CopyDevice {
        /// Stream.
        stream: u32,
    },
    /// `load_kernel`.
    LoadKernel {
        /// Name.
        name: Arc<str>,
    },
    /// `launch`.
    Launch {
        /// Stream.
        stream: u32,
        /// Kernel name.
        kernel: Arc<str>,
    },
    /// `begin_capture`.
    BeginCapture {
        /// Stream.
        stream: u32,
    },
    /// `end_capture` that produced a graph.
    EndCapture {
        /// Stream.
        stream: u32,
        /// The graph's id.
        graph: u64,
    },
    /// `launch_graph`.
    LaunchGraph {
        /// Stream.
        stream: u32,
        /// Graph.
        graph: u64,
    },
    /// `destroy_graph`.
    DestroyGraph {
        /// Graph.
        graph: u64,
    },
    /// `Storage::alloc`.
    Alloc {
        /// Device or host.
        memory: MemoryKind,
        /// The page.
        page: PageId,
        /// Requested bytes.
        size: u64,
    },
    /// `Storage::dealloc`.
    Dealloc {
        /// Device or host.
        memory: MemoryKind,
        /// The page.
        page: PageId,
    },
    /// `Storage::flush` that succeeded.
    Flush {
        /// Device or host.
        memory: MemoryKind,
        /// Pages it released.
        released: u64,
    },
    /// `HostStorage::write`.
    HostWrite {
        /// Page.
        page: PageId,
        /// Offset.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// `HostStorage::read`.
    HostRead {
        /// Page.
        page: PageId,
        /// Offset.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// A call that failed.
    Failed {
        /// The method's name (e.g. `"synchronize"`).
        op: &'static str,
        /// The error's kind.
        kind: ErrorKind,
    },
}
