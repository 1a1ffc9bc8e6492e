//! User-facing handles: buffers and graphs. Dropping the last clone of a
//! handle releases what it names — deferred: the drop only queues the id,
//! and the device processes the queue at its next call, so a drop never
//! takes the device lock, never calls the platform and never fails.

use alloc::sync::Arc;
use core::fmt;
use core::sync::atomic::Ordering;

use super::buffer::BufferId;
use super::release_queue::{HandleShare, ReleaseQueue};
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
    /// The bindings it declared at load, carried in the handle so a launch
    /// checks its argument count without reading the kernel's entry.
    bindings: u32,
}

impl KernelId {
    pub(crate) const fn new(device: u64, index: u32, bindings: u32) -> Self {
        Self {
            device,
            index,
            bindings,
        }
    }

    /// The bindings the kernel declared at load (every launch passes
    /// exactly these: its buffers, then its info words when it has any).
    pub const fn bindings(self) -> u32 {
        self.bindings
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
    share: &'static HandleShare,
}

impl Clone for Buffer {
    fn clone(&self) -> Self {
        self.share.users.fetch_add(1, Ordering::Relaxed);
        Self {
            id: self.id,
            owner: self.owner,
            size: self.size,
            device: self.device,
            share: self.share,
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
            self.share
                .releases
                .push_buffer(self.device, self.id, self.share);
        }
    }
}

impl Buffer {
    /// The first user handle of buffer `id`, over the slot index's shared
    /// allocation `share`. The index's previous buffer was released, so
    /// none of its user handles is left (one may still be finishing its
    /// drop: it touches the count no more).
    #[inline(always)]
    pub(crate) fn issue(
        share: &'static HandleShare,
        id: BufferId,
        size: u64,
        owner: StreamId,
        device: u64,
    ) -> Self {
        share.users.store(1, Ordering::Relaxed);
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
    releases: &'static ReleaseQueue,
}

impl Drop for GraphInner {
    fn drop(&mut self) {
        let id = self.id;
        self.releases.push_graph(self.device, id);
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
        releases: &'static ReleaseQueue,
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
