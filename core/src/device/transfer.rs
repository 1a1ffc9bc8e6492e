//! Buffers in and out: reservation, uploads staged through the pinned host
//! pool, downloads with the taint check.

use alloc::vec::Vec;

use super::buffer::Location;
use super::handle::Buffer;
use super::launch::{as_sized, taint_region};
use super::lock::RawLock;
use super::state::{Deferred, Env, Fence, Inner, Res, WindowUse, host_err};
use crate::error::Error;
use crate::failure::{AllocId, Operand, Operation, Refused};
use crate::memory::{MemoryError, SliceHandle};
use crate::platform::{Access, DeviceRange, HostRange, HostStorage, Platform};
use crate::stream::{DoomReason, StreamId};

/// What an allocation attempt came to.
pub(crate) enum Alloc {
    /// The buffer.
    Done(Buffer),
    /// Out of memory while deferred frees may be waiting: synchronize the
    /// stream (without the device lock) and try once more.
    SyncFirst,
}

/// A read whose copy is queued: what the host waits for, and where the
/// bytes will be.
pub(crate) struct ReadTicket<Ev> {
    /// The buffer's size in bytes, as a host length.
    len: usize,
    /// Where the bytes go: room for `len` bytes, reserved before the copy
    /// was queued (a host that cannot hold them is refused up front).
    out: Vec<u8>,
    /// The staging slice the copy writes.
    staging: SliceHandle,
    /// Its bytes.
    at: DeviceRange,
    /// The event recorded after the copy, at this cursor of the stream.
    pub(crate) fence: Fence<Ev>,
}

impl<P: Platform> Inner<P> {
    /// Reserves `size` bytes in `sid`'s pools. With `may_sync`, out of
    /// memory outside a capture answers `Ok(None)`: deferred frees may come
    /// back once the stream is synchronized.
    #[inline]
    fn reserve<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        size: u64,
        may_sync: bool,
    ) -> Res<Option<(SliceHandle, DeviceRange)>, P> {
        self.process_releases(env);
        let st = match self.streams.get_mut(sid) {
            Some(st) => st,
            None => self.stream(env, sid)?,
        };
        match st.memory.reserve(size) {
            Ok(r) => Ok(Some(r)),
            Err(e) => self.reserve_failed(sid, e, may_sync).map(|()| None),
        }
    }

    /// A reservation on `sid` failed with `e`: out of memory outside a
    /// capture with `may_sync` asks for a sync first (`Ok(())`); an
    /// allocation inside a capture window dooms it.
    #[cold]
    fn reserve_failed(
        &mut self,
        sid: StreamId,
        e: MemoryError<P::Error>,
        may_sync: bool,
    ) -> Res<(), P> {
        let open = self.streams.get(sid).is_none_or(|st| st.capture.is_open());
        match e {
            MemoryError::OutOfMemory { .. } if may_sync && !open && self.recording == 0 => {
                self.stats.oom_retries += 1;
                Ok(())
            }
            e => {
                if let MemoryError::AllocationInCapture { bytes } = &e {
                    let bytes = *bytes;
                    self.doom(sid, DoomReason::AllocationInCapture { bytes });
                }
                Err(e.into())
            }
        }
    }

    /// A new buffer of `size` bytes in `sid`'s pools. Straight-line on
    /// purpose (it is the whole of `Device::alloc` when warm): the
    /// reservation's parts go into the new slot without passing through
    /// intermediate enums.
    #[inline(always)]
    pub(crate) fn alloc<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        size: u64,
        may_sync: bool,
    ) -> Res<Alloc, P> {
        self.process_releases(env);
        let st = match self.streams.get_mut(sid) {
            Some(st) => st,
            None => self.stream(env, sid)?,
        };
        let (handle, range) = match st.memory.reserve(size) {
            Ok(r) => r,
            Err(e) => {
                self.reserve_failed(sid, e, may_sync)?;
                return Ok(Alloc::SyncFirst);
            }
        };
        let reuse = st.memory.reuse_cursor();
        Ok(Alloc::Done(
            self.insert_placed(sid, size, handle, range, reuse)?,
        ))
    }

    /// A new buffer that never fails to exist: when the reservation fails it
    /// has no memory, and a failure claims it, so work over it is skipped
    /// and a read of it reports why.
    pub(crate) fn empty<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        size: u64,
        may_sync: bool,
    ) -> Res<Alloc, P> {
        match self.reserve(env, sid, size, may_sync) {
            Ok(Some((handle, range))) => {
                let reuse = self
                    .streams
                    .get(sid)
                    .map_or(0, |st| st.memory.reuse_cursor());
                Ok(Alloc::Done(
                    self.insert_placed(sid, size, handle, range, reuse)?,
                ))
            }
            Ok(None) => Ok(Alloc::SyncFirst),
            Err(Error::Memory(e)) => {
                let b = self.insert_buffer(sid, size, Location::Unplaced)?;
                let f = self.taint.reservation_failed(
                    AllocId(b.id().as_u64()),
                    size,
                    alloc::format!("{e}"),
                );
                self.stats.failures += 1;
                self.doom(sid, DoomReason::from(f));
                Ok(Alloc::Done(b))
            }
            Err(other) => Err(other),
        }
    }

    #[inline(always)]
    fn insert_buffer(
        &mut self,
        sid: StreamId,
        size: u64,
        location: Location<SliceHandle>,
    ) -> Res<Buffer, P> {
        self.buffers
            .insert(size, sid, location, self.id, self.releases)
            .map_err(|_| table_full())
    }

    /// A buffer over a fresh reservation from `sid`'s pools, whose
    /// `reuse_cursor` was `reuse` after it; when the table is full the
    /// reservation goes back to the pool.
    #[inline(always)]
    fn insert_placed(
        &mut self,
        sid: StreamId,
        size: u64,
        handle: SliceHandle,
        range: DeviceRange,
        reuse: u64,
    ) -> Res<Buffer, P> {
        let DeviceRange { page, offset, len } = range;
        let inserted = self.buffers.insert_placed(
            page,
            offset,
            len,
            handle,
            size,
            sid,
            self.id,
            self.releases,
        );
        let buffer = match inserted.map_err(|_| table_full()) {
            Ok(buffer) => buffer,
            Err(e) => {
                if let Some(st) = self.streams.get_mut(sid) {
                    let _ = st.memory.free(handle);
                }
                return Err(e);
            }
        };
        // The pool may hand out bytes freed in stream order whose last use
        // on `sid` is not known complete: to every other stream the new
        // buffer is written by `sid` at that cursor, so its first use there
        // (read or write) waits for it. The owner's own work runs after it
        // anyway.
        if reuse > 0 && reuse > self.sync.completed_cursor(sid)? {
            self.buffers
                .get_mut(buffer.id())?
                .mark_use(sid, reuse, true);
        }
        Ok(buffer)
    }

    /// A write refused before its copy was queued (at `step`): an open
    /// window on `sid` is doomed (it would miss the write) and the bytes
    /// the write would have replaced (`scratch_ops`) are claimed
    /// ([`Inner::claim_refused`]). Returns `e`.
    #[cold]
    #[inline(never)]
    fn write_refused(
        &mut self,
        sid: StreamId,
        step: &'static str,
        e: Error<P::Error>,
    ) -> Error<P::Error> {
        self.doom_platform(sid, step, &e);
        self.claim_refused(Operation::CopyToDevice, &e);
        e
    }

    /// Queues a copy of `data` into `buffer` on `sid`, staged through the
    /// pinned host pool (the staging bytes live until the copy's fence).
    pub(crate) fn write<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        buffer: &Buffer,
        data: &[u8],
    ) -> Res<(), P> {
        self.process_releases(env);
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
        let region = taint_region(id, slot.size);
        let Some(dst) = slot.range() else {
            return Err(self.taint.check_read(region).err().map_or(
                Error::InvalidArgument("buffer has no memory"),
                |mut report| {
                    report.refused = Refused::Write;
                    Error::Tainted(report)
                },
            ));
        };
        self.stream(env, sid)?;
        let bytes = data.len() as u64;
        self.scratch_ops.clear();
        self.scratch_ops.push(Operand {
            region,
            access: Access::Write,
        });
        // From here on a failure leaves the write undone: an open window on
        // `sid` would miss it, so it is doomed, and the bytes the write
        // would have replaced are claimed.
        let (h, hr) = match self.host.reserve(bytes) {
            Ok(r) => r,
            Err(e) => return Err(self.write_refused(sid, "write", host_err::<P>(e))),
        };
        if let Err(e) = self.host.storage_mut().write(hr.page, hr.offset, data) {
            let _ = self.host.free(h);
            let e = Error::platform("host_write", e);
            return Err(self.write_refused(sid, "write", e));
        }
        self.scratch_marks.clear();
        self.push_marks(id, Access::Write)?;
        if let Err(e) = self.wait_for_marks(env, sid) {
            let _ = self.host.free(h);
            return Err(self.write_refused(sid, "wait", e));
        }
        let src = HostRange {
            page: hr.page,
            offset: hr.offset,
            len: bytes,
        };
        let recording = self
            .streams
            .get(sid)
            .is_some_and(|s| s.capture.is_recording());
        let copied = env.on_stream(sid, |p, s| p.copy_to_device(s, src, dst))?;
        if let Err(e) = copied {
            let _ = self.host.free(h);
            return Err(self.work_failed(sid, "copy_to_device", Operation::CopyToDevice, e));
        }
        self.stats.uploads += 1;
        if recording {
            let st = self.stream(env, sid)?;
            st.window.push(WindowUse {
                buffer: buffer.clone(),
                access: Access::Write,
            });
        } else {
            let cursor = self.sync.submit(sid)?;
            self.taint.succeeded(&self.scratch_ops);
            self.mark_use(id, sid, cursor, Access::Write)?;
        }
        self.retire_host(env, sid, h, bytes)
    }

    /// The submit half of a read: checks the taint graph, queues the copy
    /// of `buffer` into a staging slice on `sid` and records the event the
    /// host will wait for. Fails with the taint report when a failure
    /// claims any of its bytes.
    ///
    /// Once the copy is queued the staging slice is never freed before a
    /// fence after the copy has passed: when recording the event fails, it
    /// goes to the drop queue and the error is returned.
    pub(crate) fn read_submit<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        buffer: &Buffer,
    ) -> Res<ReadTicket<P::Event>, P> {
        self.process_releases(env);
        let id = self.check_buffer(buffer)?;
        self.stream(env, sid)?;
        if self.recording > 0 {
            return Err(Error::NotWhileCapturing { op: "read" });
        }
        let slot = self.buffers.get(id)?;
        let size = slot.size;
        self.taint
            .check_read(taint_region(id, size))
            .map_err(|report| Error::Tainted(as_sized(report, id, size)))?;
        let src = slot
            .range()
            .ok_or_else(|| Error::InvalidArgument("buffer has no memory"))?;
        let len = usize::try_from(size).map_err(|_| {
            Error::InvalidArgument("the buffer is larger than this host's address space")
        })?;
        // The bytes' room on the host, before anything is queued: an
        // allocation that fails later aborts the process (panics without
        // `std`), whatever the buffer's size the caller asked for.
        let mut out = Vec::new();
        out.try_reserve_exact(len).map_err(|_| {
            Error::InvalidArgument("the host cannot allocate room for the buffer's bytes")
        })?;
        let (staging, at) = self.host.reserve(size).map_err(host_err::<P>)?;
        self.scratch_marks.clear();
        self.push_marks(id, Access::Read)?;
        if let Err(e) = self.wait_for_marks(env, sid) {
            // Nothing uses the staging slice yet.
            let _ = self.host.free(staging);
            return Err(e);
        }
        let dst = HostRange {
            page: at.page,
            offset: at.offset,
            len: size,
        };
        let copied = env
            .on_stream(sid, |p, s| p.copy_to_host(s, src, dst))
            .and_then(|r| r.map_err(|e| Error::platform("copy_to_host", e)));
        if let Err(e) = copied {
            // The copy was not queued.
            let _ = self.host.free(staging);
            return Err(e);
        }
        let cursor = self.sync.submit(sid)?;
        self.mark_use(id, sid, cursor, Access::Read)?;
        self.stats.downloads += 1;
        // Seal what is staged so the wait covers it too.
        if let Err(e) = self.flush(env, sid) {
            self.release_failed(e);
        }
        match env.record(sid) {
            Ok(event) => {
                self.stats.events_recorded += 1;
                Ok(ReadTicket {
                    len,
                    out,
                    staging,
                    at,
                    fence: Fence { cursor, event },
                })
            }
            Err(e) => {
                // The copy may still be queued: the slice waits for a fence.
                self.defer(env, sid, Deferred::Host(staging), size);
                Err(e)
            }
        }
    }

    /// The complete half of a read: the host waited for the ticket's event
    /// (`waited`). On success copies the staged bytes into `out` (exactly
    /// the buffer's size) and frees the staging slice; on failure the copy
    /// may still be queued, so the slice goes to the drop queue, never back
    /// to the pool.
    pub(crate) fn read_complete<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        ticket: ReadTicket<()>,
        waited: Result<(), P::Error>,
        out: &mut [u8],
    ) -> Res<(), P> {
        let ReadTicket {
            staging,
            at,
            fence: Fence { cursor, .. },
            ..
        } = ticket;
        if let Err(e) = waited {
            self.defer(env, sid, Deferred::Host(staging), at.len);
            return Err(Error::platform("synchronize", e));
        }
        let read = self
            .host
            .storage()
            .read(at.page, at.offset, out)
            .map_err(|e| Error::platform("host_read", e));
        // The copy completed: the slice is free.
        let freed = self.host.free(staging).map_err(host_err::<P>);
        if let Err(e) = self.sync_complete(env, sid, cursor) {
            self.release_failed(e);
        }
        read?;
        freed
    }
}

impl<Ev> ReadTicket<Ev> {
    /// Splits off the event to wait for.
    pub(crate) fn take_event(self) -> (ReadTicket<()>, Ev) {
        let ReadTicket {
            len,
            out,
            staging,
            at,
            fence: Fence { cursor, event },
        } = self;
        (
            ReadTicket {
                len,
                out,
                staging,
                at,
                fence: Fence { cursor, event: () },
            },
            event,
        )
    }

    /// The room for the bytes: `len` zeroed bytes, in the room reserved
    /// by the submit (no allocation here).
    pub(crate) fn take_out(&mut self) -> Vec<u8> {
        let mut out = core::mem::take(&mut self.out);
        out.resize(self.len, 0);
        out
    }
}

/// Every index of the buffer table is taken.
#[cold]
fn table_full<E>() -> Error<E> {
    Error::InvalidArgument("the device holds 2^32 - 1 buffers")
}
