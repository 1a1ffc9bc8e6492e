//! User-facing handles: buffers and graphs. Dropping the last clone of a
//! handle releases what it names — deferred: the drop only queues the id,
//! and the device processes the queue at its next call, so a drop never
//! takes the device lock, never calls the platform and never fails.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

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

/// The queue handles push their ids on when dropped. A released buffer
/// usually goes through the mailbox: one atomic word holding its slot index
/// (a buffer's slot stays taken until the device processed its release, so
/// the index names it), claimed with one compare-and-swap and emptied by the
/// device with a plain load and store. When the mailbox is taken the id goes
/// to the queue behind its own small lock (graphs always do). A drop never
/// takes the device lock; the device reads both without locking, so an
/// operation with nothing to release touches no shared lock.
#[derive(Debug, Default)]
pub(crate) struct ReleaseQueue {
    /// A released buffer's slot index + 1; 0: empty.
    mailbox: AtomicU32,
    /// Whether `queue` may hold ids.
    pending: AtomicBool,
    queue: spin::Mutex<Releases>,
}

impl ReleaseQueue {
    fn push(&self, f: impl FnOnce(&mut Releases)) {
        let mut q = self.queue.lock();
        f(&mut q);
        self.pending.store(true, Ordering::Release);
    }

    /// Queues the release of buffer `id`: in the mailbox when it is empty.
    #[inline]
    fn push_buffer(&self, id: BufferId) {
        // At most 2^32 - 2 (the table refuses index u32::MAX): no overflow.
        let word = id.index().wrapping_add(1);
        if word == 0
            || self
                .mailbox
                .compare_exchange(0, word, Ordering::Release, Ordering::Relaxed)
                .is_err()
        {
            self.push(|q| q.buffers.push(id));
        }
    }

    /// Whether ids may be waiting (cheap; no lock).
    #[inline]
    pub(crate) fn is_pending(&self) -> bool {
        self.mailbox.load(Ordering::Acquire) != 0 || self.pending.load(Ordering::Acquire)
    }

    /// Whether the locked queue may hold ids (cheap; no lock).
    #[inline]
    pub(crate) fn is_queued(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// Empties the mailbox: the slot index of the buffer released there.
    /// Only the device calls it, under its lock (one taker at a time), so a
    /// load and a store suffice: between them no drop can fill it.
    #[inline]
    pub(crate) fn take_mailbox(&self) -> Option<u32> {
        let word = self.mailbox.load(Ordering::Acquire);
        if word == 0 {
            return None;
        }
        self.mailbox.store(0, Ordering::Relaxed);
        Some(word - 1)
    }

    /// Moves the queued ids to the end of `buffers` and `graphs` (every
    /// vector keeps its capacity). Returns whether anything was queued.
    pub(crate) fn take(&self, buffers: &mut Vec<BufferId>, graphs: &mut Vec<GraphId>) -> bool {
        if !self.pending.load(Ordering::Acquire) {
            return false;
        }
        let mut q = self.queue.lock();
        self.pending.store(false, Ordering::Relaxed);
        if q.buffers.is_empty() && q.graphs.is_empty() {
            return false;
        }
        // Element by element: usually one or two ids.
        for &id in &q.buffers {
            buffers.push(id);
        }
        q.buffers.clear();
        for &g in &q.graphs {
            graphs.push(g);
        }
        q.graphs.clear();
        true
    }

    /// Whether no buffer id is queued (the mailbox included).
    pub(crate) fn no_buffers(&self) -> bool {
        self.mailbox.load(Ordering::Acquire) == 0 && self.queue.lock().buffers.is_empty()
    }
}

/// What the user handles of one buffer share: how many are alive, and the
/// queue the last one to drop pushes the buffer's id on. The allocation
/// belongs to the buffer table's slot index and serves every buffer that
/// index holds (the device keeps one reference): once a buffer is released
/// no user handle of it is left, so the next buffer there starts the count
/// again, and a warm `alloc` + drop allocates nothing.
#[derive(Debug)]
pub(crate) struct HandleShare {
    /// User handles (`Buffer` values) alive; the last one to drop queues
    /// the id for release.
    users: AtomicUsize,
    releases: Arc<ReleaseQueue>,
}

/// A device buffer. Cloning shares it; dropping the last clone frees it,
/// deferred until the device has finished every use queued before.
///
/// What launches check (id, device, size, owner) is held in the handle
/// itself, so reading it touches no shared memory.
pub struct Buffer {
    id: BufferId,
    owner: StreamId,
    size: u64,
    device: u64,
    share: Arc<HandleShare>,
}

impl Clone for Buffer {
    fn clone(&self) -> Self {
        self.share.users.fetch_add(1, Ordering::Relaxed);
        Self {
            id: self.id,
            owner: self.owner,
            size: self.size,
            device: self.device,
            share: Arc::clone(&self.share),
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let users = &self.share.users;
        // A count of one seen with `Acquire` means this is the only handle,
        // and none can appear (cloning needs a handle): no decrement needed
        // (the next buffer of the slot starts the count again). Otherwise
        // the handle that takes the count to zero releases the buffer.
        let last = users.load(Ordering::Acquire) == 1
            || (users.fetch_sub(1, Ordering::Release) == 1 && {
                // Every other user's last access happened before.
                core::sync::atomic::fence(Ordering::Acquire);
                true
            });
        if last {
            self.share.releases.push_buffer(self.id);
        }
    }
}

impl Buffer {
    /// The first user handle of buffer `id`, over the slot index's shared
    /// allocation `share` (made on the index's first use). The index's
    /// previous buffer was released, so none of its user handles is left
    /// (one may still be finishing its drop: it touches the count no more).
    #[inline(always)]
    pub(crate) fn issue(
        share: &mut Option<Arc<HandleShare>>,
        id: BufferId,
        size: u64,
        owner: StreamId,
        device: u64,
        releases: &Arc<ReleaseQueue>,
    ) -> Self {
        let share = match share {
            Some(s) => {
                s.users.store(1, Ordering::Relaxed);
                Arc::clone(s)
            }
            None => Arc::clone(share.insert(Arc::new(HandleShare {
                users: AtomicUsize::new(1),
                releases: Arc::clone(releases),
            }))),
        };
        Self {
            id,
            owner,
            size,
            device,
            share,
        }
    }

    /// The buffer's id on its device.
    pub fn id(&self) -> BufferId {
        self.id
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The stream whose pools hold its bytes.
    pub fn owner(&self) -> StreamId {
        self.owner
    }

    pub(crate) fn device(&self) -> u64 {
        self.device
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
            .field("id", &self.id)
            .field("size", &self.size)
            .field("owner", &self.owner)
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
