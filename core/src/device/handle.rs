//! User-facing handles: buffers and graphs. Dropping the last clone of a
//! handle releases what it names — deferred: the drop only queues the id,
//! and the device processes the queue at its next call, so a drop never
//! takes the device lock, never calls the platform and never fails.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::buffer::BufferId;
use crate::platform::Access;
use crate::stream::StreamId;

/// Identifies a captured graph of a device.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GraphId(pub u64);

/// Identifies a kernel loaded on a device: the device that loaded it and
/// its index there. Any other device refuses it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelId {
    device: u64,
    index: u32,
}

impl KernelId {
    pub(crate) const fn new(device: u64, index: u32) -> Self {
        Self { device, index }
    }

    /// The kernel's index among the kernels its device loaded (in load order).
    pub const fn index(self) -> u32 {
        self.index
    }

    pub(crate) const fn device(self) -> u64 {
        self.device
    }
}

impl fmt::Display for KernelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kernel #{} of device {}", self.index, self.device)
    }
}

/// Ids whose last handle was dropped, waiting for the device to release them.
#[derive(Debug, Default)]
pub(crate) struct Releases {
    pub(crate) buffers: Vec<BufferId>,
    pub(crate) graphs: Vec<GraphId>,
}

/// The queue handles push their ids on when dropped. It has its own small
/// lock (a drop never takes the device lock) and a flag the device reads
/// without locking, so an operation with nothing to release touches no
/// shared lock.
#[derive(Debug, Default)]
pub(crate) struct ReleaseQueue {
    queue: spin::Mutex<Releases>,
    pending: AtomicBool,
}

impl ReleaseQueue {
    fn push(&self, f: impl FnOnce(&mut Releases)) {
        let mut q = self.queue.lock();
        f(&mut q);
        self.pending.store(true, Ordering::Release);
    }

    /// Whether ids may be waiting (cheap; no lock).
    pub(crate) fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Swaps the queued ids into `buffers` and `graphs` (which must be
    /// empty; their capacity is kept for the next swap). Returns whether
    /// anything was queued.
    pub(crate) fn take(&self, buffers: &mut Vec<BufferId>, graphs: &mut Vec<GraphId>) -> bool {
        let mut q = self.queue.lock();
        self.pending.store(false, Ordering::Relaxed);
        if q.buffers.is_empty() && q.graphs.is_empty() {
            return false;
        }
        core::mem::swap(&mut q.buffers, buffers);
        core::mem::swap(&mut q.graphs, graphs);
        true
    }

    /// Whether no buffer id is queued.
    pub(crate) fn no_buffers(&self) -> bool {
        self.queue.lock().buffers.is_empty()
    }
}

/// What a buffer handle points to. The device keeps one reference of its
/// own (in the buffer's table slot) and reuses the allocation for a later
/// buffer once every user handle is gone, so a warm `alloc` + drop
/// allocates nothing.
#[derive(Debug)]
pub(crate) struct BufferInner {
    id: BufferId,
    size: u64,
    owner: StreamId,
    device: u64,
    /// User handles (`Buffer` values) alive; the last one to drop queues
    /// the id for release.
    users: AtomicUsize,
    releases: Arc<ReleaseQueue>,
}

/// A device buffer. Cloning shares it; dropping the last clone frees it,
/// deferred until the device has finished every use queued before.
pub struct Buffer {
    inner: Arc<BufferInner>,
}

impl Clone for Buffer {
    fn clone(&self) -> Self {
        self.inner.users.fetch_add(1, Ordering::Relaxed);
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if self.inner.users.fetch_sub(1, Ordering::Release) == 1 {
            // Every other user's last access happened before.
            core::sync::atomic::fence(Ordering::Acquire);
            let id = self.inner.id;
            self.inner.releases.push(|q| q.buffers.push(id));
        }
    }
}

impl Buffer {
    /// A user handle for buffer `id`, and the device's own reference to
    /// keep in the table. Reuses an allocation from `spare` when no one
    /// else references it any more (a user thread may still be finishing
    /// its drop: that one is let go).
    pub(crate) fn issue(
        spare: &mut alloc::vec::Vec<Arc<BufferInner>>,
        id: BufferId,
        size: u64,
        owner: StreamId,
        device: u64,
        releases: &Arc<ReleaseQueue>,
    ) -> (Self, Arc<BufferInner>) {
        let kept = loop {
            let Some(mut a) = spare.pop() else {
                break Arc::new(BufferInner {
                    id,
                    size,
                    owner,
                    device,
                    users: AtomicUsize::new(1),
                    releases: Arc::clone(releases),
                });
            };
            if let Some(inner) = Arc::get_mut(&mut a) {
                inner.id = id;
                inner.size = size;
                inner.owner = owner;
                inner.device = device;
                *inner.users.get_mut() = 1;
                break a;
            }
        };
        (
            Self {
                inner: Arc::clone(&kept),
            },
            kept,
        )
    }

    /// The buffer's id on its device.
    pub fn id(&self) -> BufferId {
        self.inner.id
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.inner.size
    }

    /// The stream whose pools hold its bytes.
    pub fn owner(&self) -> StreamId {
        self.inner.owner
    }

    pub(crate) fn device(&self) -> u64 {
        self.inner.device
    }

    /// A binding of this buffer the kernel only reads.
    pub fn read(&self) -> Arg<'_> {
        Arg {
            buffer: self,
            access: Access::Read,
        }
    }

    /// A binding of this buffer the kernel only writes (all of it).
    pub fn write(&self) -> Arg<'_> {
        Arg {
            buffer: self,
            access: Access::Write,
        }
    }

    /// A binding of this buffer the kernel reads and writes.
    pub fn read_write(&self) -> Arg<'_> {
        Arg {
            buffer: self,
            access: Access::ReadWrite,
        }
    }
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("id", &self.inner.id)
            .field("size", &self.inner.size)
            .field("owner", &self.inner.owner)
            .finish()
    }
}

/// One kernel argument: a buffer and how the kernel uses it.
#[derive(Copy, Clone, Debug)]
pub struct Arg<'a> {
    /// The buffer.
    pub buffer: &'a Buffer,
    /// How the kernel uses it.
    pub access: Access,
}

struct GraphInner {
    id: GraphId,
    stream: StreamId,
    device: u64,
    releases: Arc<ReleaseQueue>,
}

impl Drop for GraphInner {
    fn drop(&mut self) {
        let id = self.id;
        self.releases.push(|q| q.graphs.push(id));
    }
}

/// A sealed capture. Replay it with `Device::replay`; dropping the last
/// clone destroys it and releases its pins (info buffers, memory slices,
/// the buffers it recorded).
#[derive(Clone)]
pub struct Graph {
    inner: Arc<GraphInner>,
}

impl Graph {
    pub(crate) fn new(
        id: GraphId,
        stream: StreamId,
        device: u64,
        releases: Arc<ReleaseQueue>,
    ) -> Self {
        Self {
            inner: Arc::new(GraphInner {
                id,
                stream,
                device,
                releases,
            }),
        }
    }

    /// The graph's id on its device.
    pub fn id(&self) -> GraphId {
        self.inner.id
    }

    /// The stream it was captured on.
    pub fn stream(&self) -> StreamId {
        self.inner.stream
    }

    pub(crate) fn device(&self) -> u64 {
        self.inner.device
    }
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("id", &self.inner.id)
            .field("stream", &self.inner.stream)
            .finish()
    }
}
