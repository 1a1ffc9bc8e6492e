//! Buffers in and out: reservation, uploads staged through the pinned host
//! pool, downloads with the taint check.

use alloc::vec;
use alloc::vec::Vec;

use super::buffer::Location;
use super::handle::Buffer;
use super::state::{Inner, Res, WindowUse, host_err};
use crate::error::Error;
use crate::failure::{AllocId, Operand, Operation, Region};
use crate::memory::MemoryError;
use crate::platform::{Access, DeviceRange, HostRange, HostStorage, Platform};
use crate::stream::{DoomReason, StreamId};

impl<P: Platform> Inner<P> {
    /// Reserves `size` bytes in `sid`'s pools. On out-of-memory, deferred
    /// frees are reclaimed (blocking on their fences, outside a capture) and
    /// the reservation retried once.
    fn reserve(
        &mut self,
        sid: StreamId,
        size: u64,
    ) -> Res<(crate::memory::SliceHandle, DeviceRange), P> {
        self.process_releases()?;
        let st = self.stream(sid)?;
        match st.memory.reserve(size) {
            Ok(r) => Ok(r),
            Err(MemoryError::OutOfMemory { .. })
                if !st.capture.is_open() && self.recording == 0 =>
            {
                self.stats.oom_retries += 1;
                self.sync_stream(sid)?;
                let st = self.stream(sid)?;
                Ok(st.memory.reserve(size)?)
            }
            Err(e) => {
                if let MemoryError::AllocationInCapture { bytes } = &e {
                    let bytes = *bytes;
                    self.doom(sid, DoomReason::AllocationInCapture { bytes });
                }
                Err(e.into())
            }
        }
    }

    /// A new buffer of `size` bytes in `sid`'s pools.
    pub(crate) fn alloc(&mut self, sid: StreamId, size: u64) -> Res<Buffer, P> {
        let (handle, range) = self.reserve(sid, size)?;
        Ok(self.insert_buffer(sid, size, Location::Placed { handle, range }))
    }

    /// A new buffer that never fails to exist: when the reservation fails it
    /// has no memory, and a failure claims it, so work over it is skipped
    /// and a read of it reports why.
    pub(crate) fn empty(&mut self, sid: StreamId, size: u64) -> Res<Buffer, P> {
        match self.reserve(sid, size) {
            Ok((handle, range)) => {
                Ok(self.insert_buffer(sid, size, Location::Placed { handle, range }))
            }
            Err(Error::Memory(e)) => {
                let b = self.insert_buffer(sid, size, Location::Unplaced);
                let f = self.taint.reservation_failed(
                    AllocId(b.id().as_u64()),
                    size,
                    alloc::format!("{e}"),
                );
                self.stats.failures += 1;
                self.doom(sid, DoomReason::from(f));
                Ok(b)
            }
            Err(other) => Err(other),
        }
    }

    fn insert_buffer(
        &mut self,
        sid: StreamId,
        size: u64,
        location: Location<crate::memory::SliceHandle>,
    ) -> Buffer {
        let id = self.buffers.insert(size, sid, location);
        Buffer::new(id, size, sid, self.id, self.releases.clone())
    }

    /// Queues a copy of `data` into `buffer` on `sid`, staged through the
    /// pinned host pool (the staging bytes live until the copy's fence).
    pub(crate) fn write(&mut self, sid: StreamId, buffer: &Buffer, data: &[u8]) -> Res<(), P> {
        self.process_releases()?;
        let id = self.check_buffer(buffer)?;
        let slot = self.buffers.get(id)?;
        if data.len() as u64 != slot.size {
            return Err(Error::InvalidArgument(
                "data length differs from the buffer size",
            ));
        }
        if data.is_empty() {
            return Err(Error::InvalidArgument("empty write"));
        }
        let region = Region::new(AllocId(id.as_u64()), 0, slot.size);
        let Some(dst) = slot.range() else {
            return Err(self.taint.check_read(region).err().map_or(
                Error::InvalidArgument("buffer has no memory"),
                Error::Tainted,
            ));
        };
        self.stream(sid)?;
        let bytes = data.len() as u64;
        // From here on a failure leaves the write undone: an open window on
        // `sid` would miss it, so it is doomed.
        let (h, hr) = match self.host.reserve(bytes) {
            Ok(r) => r,
            Err(e) => {
                let e = host_err::<P>(e);
                self.doom_platform(sid, "write", &e);
                return Err(e);
            }
        };
        if let Err(e) = self.host.storage_mut().write(hr.page, hr.offset, data) {
            let _ = self.host.free(h);
            let e = Error::platform("host_write", e);
            self.doom_platform(sid, "write", &e);
            return Err(e);
        }
        self.scratch_marks.clear();
        self.push_marks(id, Access::Write)?;
        if let Err(e) = self.wait_for_marks(sid) {
            let _ = self.host.free(h);
            self.doom_platform(sid, "wait", &e);
            return Err(e);
        }
        let src = HostRange {
            page: hr.page,
            offset: hr.offset,
            len: bytes,
        };
        self.scratch_ops.clear();
        self.scratch_ops.push(Operand {
            region,
            access: Access::Write,
        });
        let (recording, copied) = self.with_stream(sid, |platform, st, _| {
            (
                st.capture.is_recording(),
                platform.copy_to_device(&mut st.stream, src, dst),
            )
        })?;
        if let Err(e) = copied {
            let _ = self.host.free(h);
            return Err(self.work_failed(sid, "copy_to_device", Operation::CopyToDevice, e));
        }
        self.stats.uploads += 1;
        if recording {
            let st = self.stream(sid)?;
            st.window.push(WindowUse {
                buffer: buffer.clone(),
                access: Access::Write,
            });
        } else {
            let cursor = self.sync.submit(sid)?;
            self.taint.succeeded(&self.scratch_ops);
            self.mark_use(id, sid, cursor, Access::Write)?;
        }
        self.retire_host(sid, h, bytes)
    }

    /// Copies `buffer` back to the host through `sid` and waits for it.
    /// Fails with the taint report when a failure claims any of its bytes.
    pub(crate) fn read(&mut self, sid: StreamId, buffer: &Buffer) -> Res<Vec<u8>, P> {
        self.process_releases()?;
        let id = self.check_buffer(buffer)?;
        self.stream(sid)?;
        if self.recording > 0 {
            return Err(Error::NotWhileCapturing { op: "read" });
        }
        let slot = self.buffers.get(id)?;
        let size = slot.size;
        self.taint
            .check_read(Region::new(AllocId(id.as_u64()), 0, size))?;
        let src = slot
            .range()
            .ok_or(Error::InvalidArgument("buffer has no memory"))?;
        let (h, hr) = self.host.reserve(size).map_err(host_err::<P>)?;
        let result = self.read_staged(sid, id, src, hr, size);
        let freed = self.host.free(h).map_err(host_err::<P>);
        let out = result?;
        freed?;
        Ok(out)
    }

    fn read_staged(
        &mut self,
        sid: StreamId,
        id: super::buffer::BufferId,
        src: DeviceRange,
        hr: DeviceRange,
        size: u64,
    ) -> Res<Vec<u8>, P> {
        self.scratch_marks.clear();
        self.push_marks(id, Access::Read)?;
        self.wait_for_marks(sid)?;
        let dst = HostRange {
            page: hr.page,
            offset: hr.offset,
            len: size,
        };
        self.with_stream(sid, |platform, st, _| {
            platform.copy_to_host(&mut st.stream, src, dst)
        })?
        .map_err(|e| Error::platform("copy_to_host", e))?;
        let cursor = self.sync.submit(sid)?;
        self.mark_use(id, sid, cursor, Access::Read)?;
        self.stats.downloads += 1;
        self.sync_stream(sid)?;
        let mut out = vec![0u8; size as usize];
        self.host
            .storage()
            .read(hr.page, hr.offset, &mut out)
            .map_err(|e| Error::platform("host_read", e))?;
        Ok(out)
    }
}
