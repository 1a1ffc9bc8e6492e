//! The platform contract: what a driver binding (real HIP, the mock) must
//! provide so the core can run on it.
//!
//! The core never touches the outside world itself. Every driver call, every
//! clock, every byte of device memory comes through these traits. Static
//! dispatch only: the core is generic over one `P: Platform`.
//!
//! Each method states what an implementation MUST guarantee. The core relies
//! on those guarantees for memory safety of the *device* (no use-after-free of
//! device pages, no unsynchronized cross-stream access); the mock platform
//! checks them at run time.

use core::fmt;

mod capabilities;
mod capture;
mod terms;

pub use capabilities::Capabilities;
pub use capture::{GraphCapture, GraphOf, NoGraphs};
pub use terms::{CallCost, ResizableTerms, StorageCosts, StorageTerms};

/// Identifies one page handed out by a [`Storage`].
///
/// The meaning of the number belongs to the storage (a device address for
/// HIP, an index for the mock); the core only compares and passes it back.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PageId(pub u64);

/// A byte range inside one page of device memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceRange {
    /// The page the bytes live in.
    pub page: PageId,
    /// Offset of the first byte inside the page.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

/// A byte range inside one page of pinned host memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostRange {
    /// The pinned host page the bytes live in.
    pub page: PageId,
    /// Offset of the first byte inside the page.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

/// How a kernel uses one of its bindings.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// The kernel only reads the bytes.
    Read,
    /// The kernel only writes the bytes (and writes all of them).
    Write,
    /// The kernel reads and writes the bytes.
    ReadWrite,
}

impl Access {
    /// Whether the kernel reads the bytes.
    pub const fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }
    /// Whether the kernel writes the bytes.
    pub const fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
}

/// One kernel argument: a device range and how the kernel uses it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The bytes.
    pub range: DeviceRange,
    /// How the kernel uses them.
    pub access: Access,
}

/// Launch geometry.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct LaunchDims {
    /// Number of blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchDims {
    /// A one-dimensional launch of `blocks` blocks of `threads` threads.
    pub const fn linear(blocks: u32, threads: u32) -> Self {
        Self {
            grid: [blocks, 1, 1],
            block: [threads, 1, 1],
            shared_mem_bytes: 0,
        }
    }
}

/// What a kernel is built from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelSource<'a> {
    /// The entry point's name (also the key a mock platform looks kernels up by).
    pub name: &'a str,
    /// Source text for platforms that compile (HIP C++ for `platform-hip`);
    /// platforms that do not compile may ignore it.
    pub source: &'a str,
    /// How many bindings every launch of the kernel passes — its parameter
    /// count under a platform's launch ABI (the info buffer the device adds
    /// for non-empty info words included). A platform that passes bindings
    /// as kernel parameters refuses a launch with any other count
    /// ([`Platform::launch`]), so a kernel never reads a parameter it was
    /// not given.
    pub bindings: usize,
}

/// Static facts about the device, read once by the core.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceProperties {
    /// Total device memory in bytes.
    pub total_memory: u64,
    /// Largest single page the core should ask a storage for by default.
    pub max_page_size: u64,
    /// Alignment of every page address and of every offset the core hands out.
    pub alignment: u64,
    /// Integrated GPU (APU) sharing memory with the host: picks tighter
    /// drop-queue thresholds.
    pub integrated: bool,
}

/// Coarse classification of a platform error, so the core can react
/// (retry after cleanup on out-of-memory, stop on device loss) without
/// knowing the driver's numbers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The storage could not provide the requested bytes.
    OutOfMemory,
    /// The device is gone or in a state that accepts no more work.
    DeviceLost,
    /// No runtime or no device present.
    NotAvailable,
    /// The operation is not permitted while the stream is capturing
    /// (e.g. a host synchronization); the capture is invalidated.
    CaptureUnsupported,
    /// The capture was invalidated by an earlier operation; `end_capture`
    /// cannot produce a graph.
    CaptureInvalidated,
    /// A kernel failed to compile, load or run.
    Kernel,
    /// A bad argument (caller bug the driver caught).
    InvalidValue,
    /// The platform does not offer the operation (it lacks the
    /// [`Capabilities`] flag the operation needs).
    NotSupported,
    /// Anything else.
    Other,
}

/// The error type of a platform: printable, and classifiable.
pub trait PlatformError: fmt::Debug + fmt::Display {
    /// What kind of failure this is.
    fn kind(&self) -> ErrorKind;
}

/// Pages of memory for one pool set: device memory for a stream's pools, or
/// pinned host memory for the staging pool.
///
/// An implementation MUST guarantee:
/// - `alloc` returns a page of at least `size` bytes whose id is not the id of
///   any other live page, aligned to [`Storage::alignment`]; on exhaustion it
///   returns an error whose [`PlatformError::kind`] is
///   [`ErrorKind::OutOfMemory`] and changes nothing.
/// - `dealloc` of a live page never fails and never blocks; the page's memory
///   stays valid for work already queued until the next `flush` (which may
///   release it, after whatever synchronization the platform needs).
/// - ids passed to `dealloc` are never reused by `alloc` before that `flush`.
/// - [`terms`](Storage::terms) states what the storage really charges and
///   what its calls cost, and does not change over the storage's life.
///
/// When a device is torn down (after its queued work completed), every
/// page it still holds — idle or under live handles — is passed to
/// `dealloc`, every chunk decommitted and every reservation released, and
/// the storage flushed, before it is dropped
/// ([`MemoryManager::close`](crate::memory::MemoryManager::close)): a
/// storage need not free anything in its own `Drop` (one that does finds
/// nothing left).
///
/// # Resizable pages (virtual memory)
///
/// A storage whose [`StorageTerms::resizable`] is `Some` also serves
/// *reservations*: [`reserve`](Storage::reserve) takes an address range with
/// no memory behind it, [`commit`](Storage::commit) backs a chunk of it
/// with physical memory, [`decommit`](Storage::decommit) gives a chunk back
/// in place. Offsets and lengths are whole multiples of
/// [`ResizableTerms::granularity`]. The core, for its part, guarantees:
/// - it commits only ranges of a live reservation that overlap no committed
///   chunk, and never while the manager's own stream is recording a capture
///   (exactly where it would not `alloc`);
/// - it decommits exactly one earlier commit (same offset and length), only
///   once no queued work touches those bytes and none can (every slice carved
///   from them was freed, and the device frees slices through fence-gated
///   drop queues or in its stream's order, a chunk then decommitted only
///   once the stream has passed its fence), and never while any stream of
///   the device records a capture
///   (while flushes are held): the storage MAY unmap at once, without
///   synchronizing the device;
/// - it passes a reservation to `dealloc` only once every chunk of it is
///   decommitted; its address range is freed at the next `flush`, which needs
///   no synchronization for it.
///
/// The defaults serve storages without virtual memory: `reserve` is `alloc`
/// (a page backed from the start), `commit` and `decommit` do nothing. The
/// core only calls them when `terms().resizable` is `Some`.
pub trait Storage {
    /// The platform's error.
    type Error: PlatformError;

    /// Alignment every page start honours, in bytes (a power of two).
    fn alignment(&self) -> u64;

    /// Allocates one page of `size` bytes.
    fn alloc(&mut self, size: u64) -> Result<PageId, Self::Error>;

    /// Marks a page for release; the memory is released at the next `flush`.
    fn dealloc(&mut self, page: PageId);

    /// Releases every page passed to `dealloc` since the last flush.
    fn flush(&mut self) -> Result<(), Self::Error>;

    /// What the storage charges and what its calls cost. Read once, when a
    /// memory manager is built over the storage. The default:
    /// [`StorageTerms::plain`] of the alignment (exact sizes, unknown costs,
    /// no resizable pages).
    fn terms(&self) -> StorageTerms {
        StorageTerms::plain(self.alignment())
    }

    /// Reserves an address range of `size` bytes (a multiple of the
    /// resizable granularity, at most [`ResizableTerms::max_reservation`])
    /// with nothing committed; its id is not the id of any other live page
    /// or reservation, its start is aligned to the granularity. On
    /// exhaustion of addresses: [`ErrorKind::OutOfMemory`], nothing changed.
    fn reserve(&mut self, size: u64) -> Result<PageId, Self::Error> {
        self.alloc(size)
    }

    /// Backs `len` bytes at `offset` of reservation `page` with memory that
    /// every stream of the platform may use once this returns. On exhaustion:
    /// [`ErrorKind::OutOfMemory`], nothing changed.
    fn commit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), Self::Error> {
        let _ = (page, offset, len);
        Ok(())
    }

    /// Gives back the chunk committed at `offset` (`len` bytes) of
    /// reservation `page`, at once (see the guarantees above). On an error
    /// the chunk stays committed and usable.
    fn decommit(&mut self, page: PageId, offset: u64, len: u64) -> Result<(), Self::Error> {
        let _ = (page, offset, len);
        Ok(())
    }
}

/// Pinned host memory the host can read and write directly; the staging area
/// for uploads and downloads.
///
/// An implementation MUST guarantee that `write` and `read` touch exactly the
/// given bytes of a live page and fail (not panic) on a range outside it.
/// The core only reads bytes after synchronizing with every copy into them
/// and only writes bytes no queued copy still reads.
pub trait HostStorage: Storage {
    /// Copies `data` into the page at `offset`.
    fn write(&mut self, page: PageId, offset: u64, data: &[u8]) -> Result<(), Self::Error>;
    /// Copies bytes of the page at `offset` into `out`.
    fn read(&self, page: PageId, offset: u64, out: &mut [u8]) -> Result<(), Self::Error>;
}

/// A GPU (or a firmware command queue): streams, events, copies and kernels,
/// and optionally graph capture.
///
/// All work submitted to one stream runs in submission order. Work on
/// different streams is unordered unless an event orders it.
///
/// What a platform offers beyond the required methods it declares in
/// [`Platform::capabilities`]; graph capture lives in its own trait,
/// [`GraphCapture`], reached through [`Platform::capture`], so a platform
/// without graphs writes `type Capture = NoGraphs;` and nothing else.
///
/// Threads: a device shared between threads (which needs the platform to be
/// `Sync`) calls these methods from several threads at once — a launch on
/// one stream while another thread records on a second or waits in
/// [`Platform::synchronize`] — but never two calls on one stream at once.
pub trait Platform {
    /// An in-order queue of device work.
    type Stream;
    /// A point recorded on a stream. Dropping it releases the driver object
    /// exactly once (the driver may keep it alive while waits still use it).
    type Event;
    /// Device pages for one stream's pools.
    type Storage: Storage<Error = Self::Error>;
    /// Pinned host pages for staging.
    type HostStorage: HostStorage<Error = Self::Error>;
    /// Graph capture: `Self` for a platform that implements
    /// [`GraphCapture`] itself, [`NoGraphs`] for a platform without graphs.
    type Capture: GraphCapture<Self>;
    /// A loaded kernel.
    type Kernel;
    /// The platform's error.
    type Error: PlatformError;

    /// Static facts about the device.
    fn properties(&self) -> DeviceProperties;

    /// What the platform offers beyond the required methods. MUST answer the
    /// same set for the platform's whole lifetime, and contain
    /// [`Capabilities::GRAPH_CAPTURE`] exactly when [`Platform::capture`]
    /// returns `Some` (the core treats capture as missing unless both agree).
    fn capabilities(&self) -> Capabilities;

    /// The platform's graph capture, or `None` (the default) for a platform
    /// without graphs. MUST answer alike for the platform's whole lifetime.
    fn capture(&self) -> Option<&Self::Capture> {
        None
    }

    /// Creates a stream. MUST NOT implicitly synchronize with other streams
    /// (non-blocking with respect to the legacy default stream).
    fn create_stream(&self) -> Result<Self::Stream, Self::Error>;

    /// Creates the stream a [`Device`](crate::device::Device) calls `id`
    /// (devices create their streams lazily, so the platform's own order
    /// of creation need not be the device's numbering). A platform that
    /// names streams in what it reports (the mock's hazard checker) keeps
    /// `id` for that; the default is [`create_stream`](Self::create_stream).
    fn create_stream_for(&self, id: crate::stream::StreamId) -> Result<Self::Stream, Self::Error> {
        let _ = id;
        self.create_stream()
    }

    /// A storage for one stream's device pools. Pages from it MAY be used on
    /// any stream of this platform.
    fn device_storage(&self) -> Result<Self::Storage, Self::Error>;

    /// A storage of pinned host pages.
    fn host_storage(&self) -> Result<Self::HostStorage, Self::Error>;

    /// Records an event after all work queued on `stream` so far. The event
    /// passes once that work has completed. While the stream is capturing the
    /// event is captured too (it orders work inside the graph); such an
    /// event MAY be refused by `query`, `synchronize` and `wait` from outside
    /// the capture (HIP-on-CUDA answers `InvalidValue`, the mock refuses), so
    /// the core never uses it there.
    fn record(&self, stream: &mut Self::Stream) -> Result<Self::Event, Self::Error>;

    /// Makes all work queued on `stream` after this call wait until `event`
    /// has passed. MUST NOT block the host.
    fn wait(&self, stream: &mut Self::Stream, event: &Self::Event) -> Result<(), Self::Error>;

    /// Whether `event` has passed. MUST NOT block the host. Once it answers
    /// `true` for an event, it answers `true` for it forever.
    fn query(&self, event: &Self::Event) -> Result<bool, Self::Error>;

    /// Blocks the host until `event` has passed. Called during a capture it
    /// MUST fail with [`ErrorKind::CaptureUnsupported`] (and the capture is
    /// invalidated), as drivers do.
    fn synchronize(&self, event: &Self::Event) -> Result<(), Self::Error>;

    /// Queues a copy of `src` (pinned host) into `dst` (device) on `stream`.
    /// `src.len == dst.len`. The host bytes MUST stay untouched until an
    /// event recorded after this call has passed.
    fn copy_to_device(
        &self,
        stream: &mut Self::Stream,
        src: HostRange,
        dst: DeviceRange,
    ) -> Result<(), Self::Error>;

    /// Queues a copy of `src` (device) into `dst` (pinned host) on `stream`.
    /// The host bytes are valid once an event recorded after this call has
    /// passed.
    fn copy_to_host(
        &self,
        stream: &mut Self::Stream,
        src: DeviceRange,
        dst: HostRange,
    ) -> Result<(), Self::Error>;

    /// Queues a device-to-device copy on `stream`.
    fn copy_device(
        &self,
        stream: &mut Self::Stream,
        src: DeviceRange,
        dst: DeviceRange,
    ) -> Result<(), Self::Error>;

    /// Loads a kernel: compiles [`KernelSource::source`] on a platform with
    /// [`Capabilities::RUNTIME_COMPILATION`], otherwise finds the kernel
    /// built in ahead of time under [`KernelSource::name`].
    fn load_kernel(&self, source: &KernelSource<'_>) -> Result<Self::Kernel, Self::Error>;

    /// Queues a kernel launch on `stream`. The kernel touches only the bytes
    /// of `bindings`, as their [`Access`] says. An error means the launch was
    /// not queued, or (for drivers that report it) that it failed.
    ///
    /// A platform that passes bindings to the driver MUST refuse, with an
    /// [`ErrorKind::InvalidValue`] error and nothing queued, a launch whose
    /// binding count differs from the kernel's declared
    /// [`KernelSource::bindings`], and every binding whose range is not
    /// inside a live page of one of its device storages.
    fn launch(
        &self,
        stream: &mut Self::Stream,
        kernel: &Self::Kernel,
        dims: LaunchDims,
        bindings: &[Binding],
    ) -> Result<(), Self::Error>;
}
