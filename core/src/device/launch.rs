//! Kernel launches: the write scope (taint), the info buffer (info cache),
//! cross-stream waits (sync table), then the platform call.

use super::doom::error_kind;
use super::handle::{Arg, KernelId};
use super::state::{Deferred, Inner, Res, WindowUse, describe};
use crate::error::Error;
use crate::failure::{AllocId, Cause, Decision, FailureId, Operand, Operation, Region};
use crate::info_cache::InsertError;
use crate::memory::MemoryError;
use crate::platform::{
    Access, Binding, DeviceRange, HostRange, HostStorage, LaunchDims, Platform, PlatformError,
};
use crate::stream::{DoomReason, StreamId};

/// What became of a launch.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[must_use]
pub enum Launched {
    /// The kernel was queued (or recorded, inside a capture).
    Queued,
    /// An input carries a failure's claim: the kernel did not run and its
    /// outputs now carry the same claim.
    Skipped(FailureId),
}

impl<P: Platform> Inner<P> {
    /// Loads a kernel.
    pub(crate) fn load_kernel(
        &mut self,
        source: &crate::platform::KernelSource<'_>,
    ) -> Res<KernelId, P> {
        let kernel = self
            .platform
            .load_kernel(source)
            .map_err(|e| Error::platform("load_kernel", e))?;
        let id = KernelId(self.kernels.len() as u32);
        self.kernels
            .push((crate::failure::KernelName::new(source.name), kernel));
        Ok(id)
    }

    /// Fills `scratch_ops` with the operands of `args`.
    fn operands(&mut self, args: &[Arg<'_>]) -> Res<(), P> {
        self.scratch_ops.clear();
        for a in args {
            let id = self.check_buffer(a.buffer)?;
            let size = self.buffers.get(id)?.size;
            self.scratch_ops.push(Operand {
                region: Region::new(AllocId(id.as_u64()), 0, size),
                access: a.access,
            });
        }
        Ok(())
    }

    /// Queues `kernel` on `sid` over `args`, with `info` words served from
    /// the info cache as the last (read-only) binding when non-empty.
    pub(crate) fn launch(
        &mut self,
        sid: StreamId,
        kernel: KernelId,
        dims: LaunchDims,
        args: &[Arg<'_>],
        info: &[u64],
    ) -> Res<Launched, P> {
        self.process_releases()?;
        self.stream(sid)?;
        let name = self
            .kernels
            .get(kernel.0 as usize)
            .map(|(n, _)| n.clone())
            .ok_or(Error::UnknownKernel(kernel))?;
        self.operands(args)?;
        let op = Operation::Launch(name);
        let recording = self
            .streams
            .get(sid)
            .is_some_and(|s| s.capture.is_recording());
        if let Decision::Skipped(f) = self.taint.begin(&op, &self.scratch_ops) {
            self.stats.skipped += 1;
            self.doom(sid, DoomReason::from(f));
            return Ok(Launched::Skipped(f));
        }

        // Bindings, in argument order, then the info buffer.
        self.scratch_bindings.clear();
        for a in args {
            let range = self
                .buffers
                .get(a.buffer.id())?
                .range()
                .ok_or(Error::InvalidArgument("buffer has no memory"))?;
            self.scratch_bindings.push(Binding {
                range,
                access: a.access,
            });
        }
        let mut uncached_info = None;
        if !info.is_empty() {
            match self.info_binding(sid, info) {
                Ok((range, uncached)) => {
                    uncached_info = uncached;
                    self.scratch_bindings.push(Binding {
                        range,
                        access: Access::Read,
                    });
                }
                Err(e) => {
                    // The launch is not queued: an open window would miss it.
                    let reason = match &e {
                        Error::Memory(MemoryError::AllocationInCapture { bytes }) => {
                            DoomReason::AllocationInCapture { bytes: *bytes }
                        }
                        other => DoomReason::Platform {
                            op: "launch",
                            kind: error_kind(other),
                        },
                    };
                    self.doom(sid, reason);
                    return Err(e);
                }
            }
        }

        // Cross-stream order.
        self.scratch_marks.clear();
        for a in args {
            self.push_marks(a.buffer.id(), a.access)?;
        }
        if let Err(e) = self.wait_for_marks(sid) {
            self.doom_platform(sid, "wait", &e);
            // The info slice no cache entry owns goes back like after a launch.
            if let Some(h) = uncached_info {
                self.defer(sid, Deferred::Device(h), (info.len() * 8) as u64)?;
            }
            return Err(e);
        }

        let Self {
            platform,
            streams,
            kernels,
            scratch_bindings,
            ..
        } = self;
        let st = streams
            .get_mut(sid)
            .ok_or(Error::InvalidArgument("stream not created"))?;
        let k = &kernels[kernel.0 as usize].1;
        let result = platform.launch(&mut st.stream, k, dims, scratch_bindings);
        if let Some(h) = uncached_info {
            self.defer(sid, Deferred::Device(h), (info.len() * 8) as u64)?;
        }
        match result {
            Ok(()) => {
                self.stats.launches += 1;
                if recording {
                    let st = self
                        .streams
                        .get_mut(sid)
                        .ok_or(Error::InvalidArgument("stream not created"))?;
                    for a in args {
                        st.window.push(WindowUse {
                            buffer: a.buffer.clone(),
                            access: a.access,
                        });
                    }
                } else {
                    let cursor = self.sync.submit(sid)?;
                    self.taint.succeeded(&self.scratch_ops);
                    for a in args {
                        self.mark_use(a.buffer.id(), sid, cursor, a.access)?;
                    }
                }
                Ok(Launched::Queued)
            }
            Err(e) => Err(self.work_failed(sid, "launch", op, e)),
        }
    }

    /// A launch or copy failed on the platform: claim what it would have
    /// written with a new failure, doom an open window, build the error.
    pub(crate) fn work_failed(
        &mut self,
        sid: StreamId,
        what: &'static str,
        op: Operation,
        e: P::Error,
    ) -> Error<P::Error> {
        let kind = e.kind();
        let message = describe(&e);
        let failure = self
            .taint
            .failed(Cause::new(op, message.clone()), &self.scratch_ops);
        self.stats.failures += 1;
        self.doom(sid, DoomReason::from(failure));
        Error::Failed {
            op: what,
            failure,
            kind,
            message,
        }
    }

    /// The device range holding `info`: a cache hit, or a fresh slice
    /// uploaded through the staging pool and cached. The second value is a
    /// slice to free after the launch when the cache refused it.
    fn info_binding(
        &mut self,
        sid: StreamId,
        info: &[u64],
    ) -> Res<(DeviceRange, Option<crate::memory::SliceHandle>), P> {
        let st = self.stream(sid)?;
        if let Some(&(_, range)) = st.info.get(info) {
            self.stats.info_hits += 1;
            return Ok((range, None));
        }
        let bytes = (info.len() * 8) as u64;
        let (handle, range) = st.memory.reserve(bytes)?;
        self.stats.info_misses += 1;
        if let Err(e) = self.upload_words(sid, info, range) {
            if let Some(st) = self.streams.get_mut(sid) {
                let _ = st.memory.free(handle);
            }
            return Err(e);
        }
        if self
            .streams
            .get(sid)
            .is_some_and(|s| s.capture.is_recording())
        {
            // The upload was recorded, not run: the bytes exist only while
            // the graph runs, so eager work must never be served them. The
            // slice is freed after the launch; the capture's pin keeps it
            // for the graph's life.
            return Ok((range, Some(handle)));
        }
        let uncached = self.with_stream(sid, |_, st, evicted| {
            match st.info.insert(info, (handle, range), |(h, _)| {
                evicted.push(Deferred::Device(h))
            }) {
                Ok(_) => None,
                Err(InsertError::AlreadyCached(v)) | Err(InsertError::TooLarge(v)) => Some(v.0),
                Err(_) => Some(handle),
            }
        })?;
        Ok((range, uncached))
    }

    /// Copies `words` (little-endian) to `dst` through the staging pool.
    fn upload_words(&mut self, sid: StreamId, words: &[u64], dst: DeviceRange) -> Res<(), P> {
        let bytes = (words.len() * 8) as u64;
        let (h, hr) = self
            .host
            .reserve(bytes)
            .map_err(super::state::host_err::<P>)?;
        let mut buf = [0u8; 8];
        for (i, w) in words.iter().enumerate() {
            buf.copy_from_slice(&w.to_le_bytes());
            if let Err(e) = self
                .host
                .storage_mut()
                .write(hr.page, hr.offset + (i * 8) as u64, &buf)
            {
                let _ = self.host.free(h);
                return Err(Error::platform("host_write", e));
            }
        }
        let src = HostRange {
            page: hr.page,
            offset: hr.offset,
            len: bytes,
        };
        let copied = self.with_stream(sid, |platform, st, _| {
            platform.copy_to_device(&mut st.stream, src, dst)
        })?;
        if let Err(e) = copied {
            let _ = self.host.free(h);
            return Err(Error::platform("copy_to_device", e));
        }
        self.retire_host(sid, h, bytes)
    }

    /// A staging slice used by queued work: freed after the stream's next
    /// fence, or kept for the graph's life when recorded in a capture.
    pub(crate) fn retire_host(
        &mut self,
        sid: StreamId,
        h: crate::memory::SliceHandle,
        bytes: u64,
    ) -> Res<(), P> {
        let st = self.stream(sid)?;
        if st.capture.is_recording() {
            st.window_host.push(h);
            Ok(())
        } else {
            self.defer(sid, Deferred::Host(h), bytes)
        }
    }
}
