//! Kernel launches: the write scope (taint), the info buffer (info cache,
//! bound in [`info`](super::info)), cross-stream waits (sync table), then
//! the platform call.

use alloc::sync::Arc;

use super::handle::{Arg, KernelId};
use super::info::words_bytes;
use super::lock::RawLock;
use super::state::{Deferred, Env, Inner, LaneGuard, LoadedKernel, Res, WindowUse, describe};
use crate::error::Error;
use crate::failure::{AllocId, Cause, Decision, FailureId, Operand, Operation, Region};
use crate::platform::{Access, Binding, LaunchDims, Platform, PlatformError};
use crate::stream::{DoomReason, StreamId, WriteMark};

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

/// What the locked part of a launch leaves to do.
pub(crate) enum Submitted<'a, P: Platform, L: RawLock>
where
    L::LaneMutex<super::state::Lane<P>>: 'a,
{
    /// Nothing: the launch was skipped, or submitted under the device lock.
    Done(Launched),
    /// The platform launch, to be made once the device lock is released,
    /// with only the stream's lane locked (taken under the device lock, so
    /// submissions on one stream keep their order). The bookkeeping of a
    /// successful launch is already done.
    Tail {
        /// The stream's lane, its `bindings` and `kernel` filled.
        lane: LaneGuard<'a, P, L>,
    },
}

/// How a launch submitted under the lock got there.
#[derive(Copy, Clone)]
struct LockedLaunch {
    /// The stream is recording a capture.
    recording: bool,
    /// No failure claims anything (booked in the argument pass, cursor
    /// taken and uses marked, when also not recording).
    clean: bool,
    /// An info slice no cache entry owns, freed after the launch.
    uncached_info: Option<crate::memory::SliceHandle>,
    /// Its bytes.
    info_bytes: u64,
}

impl<P: Platform> Inner<P> {
    /// Adds a kernel the platform loaded (outside the lock).
    pub(crate) fn add_kernel(
        &mut self,
        source: &crate::platform::KernelSource<'_>,
        kernel: P::Kernel,
    ) -> Res<KernelId, P> {
        let index = u32::try_from(self.kernels.len())
            .map_err(|_| Error::InvalidArgument("too many kernels loaded"))?;
        let bindings = u32::try_from(source.bindings)
            .map_err(|_| Error::InvalidArgument("a kernel declares too many bindings"))?;
        self.kernels.push(LoadedKernel {
            name: crate::failure::KernelName::new(source.name),
            kernel: Arc::new(kernel),
        });
        Ok(KernelId::new(self.id, index, bindings))
    }

    /// Refuses `k` unless this device loaded it, without reading its entry.
    #[inline]
    fn check_kernel(&self, k: KernelId) -> Res<(), P> {
        if k.device() != self.id || k.index() as usize >= self.kernels.len() {
            return Err(Error::UnknownKernel(k));
        }
        Ok(())
    }

    /// The kernel `k`, if this device loaded it.
    fn kernel(&self, k: KernelId) -> Res<&LoadedKernel<P>, P> {
        if k.device() != self.id {
            return Err(Error::UnknownKernel(k));
        }
        self.kernels
            .get(k.index() as usize)
            .ok_or_else(|| Error::UnknownKernel(k))
    }

    /// Fills `scratch_ops` with the operands of `args`.
    fn operands(&mut self, args: &[Arg<'_>]) -> Res<(), P> {
        self.scratch_ops.clear();
        for a in args {
            let id = self.check_buffer(a.buffer)?;
            let size = self.buffers.get(id)?.size;
            self.scratch_ops.push(Operand {
                region: taint_region(id, size),
                access: a.access,
            });
        }
        Ok(())
    }

    /// Queues `kernel` on `sid` over `args`, with `info` words served from
    /// the info cache as the last (read-only) binding when non-empty.
    ///
    /// On the common path (nothing claimed anywhere, no capture recording,
    /// the info words cached) everything but the platform call is done here
    /// as if the launch succeeded, and the call itself is left to the caller
    /// as [`Submitted::Tail`], to be made without the device lock; a failure
    /// there goes to [`Inner::tail_failed`]. Otherwise the launch is
    /// submitted here, under the lock.
    // Inlined into its one caller, `Device::launch`: the result then never
    // goes through memory.
    #[inline]
    pub(crate) fn launch<'a, L: RawLock>(
        &mut self,
        env: &'a Env<P, L>,
        sid: StreamId,
        kernel: KernelId,
        dims: LaunchDims,
        args: &[Arg<'_>],
        info: &[u64],
    ) -> Res<Submitted<'a, P, L>, P> {
        // Dropped handles are not processed here: nothing a launch does
        // needs their memory back (the operations that take memory, sync or
        // report do process them), and the release queue is a line of its
        // own that a launch would otherwise read every time.
        let recording = match self.streams.get(sid) {
            Some(st) => st.capture.is_recording(),
            None => self.stream(env, sid)?.capture.is_recording(),
        };
        // The kernel's declared parameters, exactly: refused before the
        // taint graph or the info cache is touched.
        self.check_kernel(kernel)?;
        if args.len() + usize::from(!info.is_empty()) != kernel.bindings() as usize {
            return Err(Error::InvalidArgument(
                "the launch's bindings differ from the kernel's declared count",
            ));
        }
        // On the clean path outside a capture the launch is booked in the
        // argument pass: its cursor taken and its uses marked, as if it
        // succeeded. Should it fail later (a wait, the platform call), the
        // marks stay: an extra wait later, never a missing one; the cursor
        // stays taken (cursors only order). Its info words are bound before
        // the cursor is taken: their upload may record a fence on `sid`,
        // which must not claim to cover the launch.
        let clean = self.taint.is_empty();
        let booked = clean && !recording;
        let mut info_range = None;
        let mut uncached_info = None;
        let mut memo_hit = false;
        if booked && !info.is_empty() {
            // The same words as the stream's last hit (a loop's launches)
            // are served without a call; the look changes nothing (the hit
            // is counted once the arguments passed).
            match self.streams.get(sid).and_then(|st| st.info_memo_hit(info)) {
                Some(range) => {
                    info_range = Some(range);
                    memo_hit = true;
                }
                // A launch its arguments refuse (a stale or foreign buffer,
                // one with no memory) leaves the info cache untouched: the
                // argument pass below returns its error.
                None if self.args_placed(args) => {
                    // A plain cache hit uploads nothing and cannot fail:
                    // served here; a miss is uploaded (not looked up again).
                    match self
                        .streams
                        .get_mut(sid)
                        .and_then(|st| st.info_lookup(info))
                    {
                        Some(range) => {
                            self.stats.info_hits += 1;
                            info_range = Some(range);
                        }
                        None => {
                            let (range, uncached) = self
                                .info_off_path(env, sid, info, true)
                                .map_err(|e| self.launch_refused(kernel, args, e))?;
                            info_range = Some(range);
                            uncached_info = uncached;
                        }
                    }
                }
                None => {}
            }
        }
        let cursor = if booked { self.sync.submit(sid)? } else { 0 };

        // One pass over the arguments: bindings, what the launch must be
        // ordered after (other streams' last writes, and for a write their
        // last uses, unless already synced or complete), and the operands
        // when the taint graph has claims (on the clean path nothing reads
        // them unless the launch fails).
        if !clean {
            self.scratch_ops.clear();
        }
        self.scratch_bindings.clear();
        self.scratch_marks.clear();
        let mut unplaced = false;
        let mut stale = None;
        for a in args {
            let id = a.buffer.id();
            let slot = match self.buffers.get_mut(id) {
                Ok(slot) if a.buffer.device() == self.id => slot,
                _ => {
                    stale = Some(id);
                    break;
                }
            };
            let mut slot = slot;
            if !clean {
                self.scratch_ops.push(Operand {
                    region: taint_region(id, slot.size),
                    access: a.access,
                });
            }
            match slot.range() {
                Some(range) => self.scratch_bindings.push(Binding {
                    range,
                    access: a.access,
                }),
                None => unplaced = true,
            }
            // (A stream the sync table does not know is kept as a mark: the
            // wait placement reports it.)
            if let Some(w) = slot.last_write() {
                if w.stream != sid
                    && self
                        .sync
                        .needs_wait(sid, w.stream, w.cursor)
                        .unwrap_or(true)
                {
                    self.scratch_marks.push(w);
                }
            }
            let writes = a.access.writes();
            // A buffer only this stream used needs no look at the others.
            if writes && !slot.used_only_by(sid) {
                for (s, &c) in slot.last_use().iter().enumerate() {
                    // At most MAX_STREAMS: fits a StreamId.
                    let s = StreamId(s as u16);
                    // (Its own uses never need a wait: `sid` is a stream
                    // the sync table knows, its state exists.)
                    if c > 0 && s != sid && self.sync.needs_wait(sid, s, c).unwrap_or(true) {
                        self.scratch_marks.push(WriteMark {
                            stream: s,
                            cursor: c,
                        });
                    }
                }
            }
            if booked {
                // After reading the marks: a later argument naming the same
                // buffer sees this launch's own use, which needs no wait
                // (a write argument has already collected every other
                // stream's use, last write included).
                slot.mark_use(sid, cursor, writes);
            }
        }
        // A refused argument leaves nothing bound: the booked path binds
        // info words only once `args_placed` said the arguments pass, the
        // other path only after these checks.
        if let Some(id) = stale {
            return Err(Error::StaleBuffer(id));
        }
        if !clean {
            if let Some(f) = self.claimed_input(sid, kernel)? {
                return Ok(Submitted::Done(Launched::Skipped(f)));
            }
        }
        if unplaced {
            return Err(Error::InvalidArgument("buffer has no memory"));
        }
        let info_bytes = words_bytes(info);
        if memo_hit {
            self.stats.info_hits += 1;
        }
        if !booked && !info.is_empty() {
            let (range, uncached) = self
                .info_off_path(env, sid, info, false)
                .map_err(|e| self.launch_refused(kernel, args, e))?;
            info_range = Some(range);
            uncached_info = uncached;
        }
        if let Some(range) = info_range {
            self.scratch_bindings.push(Binding {
                range,
                access: Access::Read,
            });
        }

        // Cross-stream order. The stream's lane, once taken for a wait, is
        // kept for the launch's own submission.
        let mut held = None;
        if !self.scratch_marks.is_empty() {
            let mut lane = env.lane(sid)?;
            if let Err(e) = self.wait_for_marks_on(env, sid, &mut lane) {
                drop(lane);
                let e = self.wait_failed(env, sid, e, uncached_info, info_bytes);
                return Err(self.launch_refused(kernel, args, e));
            }
            held = Some(lane);
        }

        if booked && uncached_info.is_none() {
            // The common path: booked as done, submitted unlocked.
            self.stats.launches += 1;
            let mut lane = match held {
                Some(lane) => lane,
                None => env.lane(sid)?,
            };
            // The bindings move to the lane (the vectors swap, no copy).
            core::mem::swap(&mut lane.bindings, &mut self.scratch_bindings);
            if lane.kernel.as_ref().is_none_or(|(id, _)| *id != kernel) {
                lane.kernel = Some((kernel, Arc::clone(&self.kernel(kernel)?.kernel)));
            }
            return Ok(Submitted::Tail { lane });
        }
        drop(held);
        let how = LockedLaunch {
            recording,
            clean,
            uncached_info,
            info_bytes,
        };
        self.launch_locked(env, sid, kernel, dims, args, how)
    }

    /// The rest of a launch not left to the caller (a capture recording, a
    /// claim somewhere, info words just uploaded): submitted under the lock.
    /// Out of line: the common path stays short.
    #[inline(never)]
    fn launch_locked<'a, L: RawLock>(
        &mut self,
        env: &'a Env<P, L>,
        sid: StreamId,
        kernel: KernelId,
        dims: LaunchDims,
        args: &[Arg<'_>],
        how: LockedLaunch,
    ) -> Res<Submitted<'a, P, L>, P> {
        let LockedLaunch {
            recording,
            clean,
            uncached_info,
            info_bytes,
        } = how;
        let booked = clean && !recording;
        if clean {
            // A refusal below claims the outputs: name them.
            self.operands(args)?;
        }
        let k = Arc::clone(&self.kernel(kernel)?.kernel);

        let result = env.on_stream(sid, |p, s| p.launch(s, &k, dims, &self.scratch_bindings))?;
        if let Some(h) = uncached_info {
            self.defer(env, sid, Deferred::Device(h), info_bytes);
        }
        match result {
            Ok(()) if recording => {
                self.stats.launches += 1;
                let st = self
                    .streams
                    .get_mut(sid)
                    .ok_or_else(|| Error::InvalidArgument("stream not created"))?;
                for a in args {
                    st.window.push(WindowUse {
                        buffer: a.buffer.clone(),
                        access: a.access,
                    });
                }
                Ok(Submitted::Done(Launched::Queued))
            }
            Ok(()) if booked => {
                self.stats.launches += 1;
                Ok(Submitted::Done(Launched::Queued))
            }
            Ok(()) => {
                self.launch_succeeded(sid, args)?;
                Ok(Submitted::Done(Launched::Queued))
            }
            Err(e) => {
                let op = Operation::Launch(self.kernel(kernel)?.name.clone());
                Err(self.work_failed(sid, "launch", op, e))
            }
        }
    }

    /// The taint scope of a launch over `scratch_ops` while claims exist:
    /// the failure claiming an input (the launch is skipped, its stream's
    /// window doomed), or `None`. Out of line: claims are rare.
    #[cold]
    #[inline(never)]
    fn claimed_input(&mut self, sid: StreamId, kernel: KernelId) -> Res<Option<FailureId>, P> {
        let op = Operation::Launch(self.kernel(kernel)?.name.clone());
        if let Decision::Skipped(f) = self.taint.begin(&op, &self.scratch_ops) {
            self.stats.skipped += 1;
            self.doom(sid, DoomReason::from(f));
            return Ok(Some(f));
        }
        Ok(None)
    }

    /// A launch's wait could not be placed: its stream's window is doomed
    /// and the info slice no cache entry owns goes back as after a launch.
    /// Returns the error. Out of line: the common path stays short.
    #[cold]
    #[inline(never)]
    fn wait_failed<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        e: Error<P::Error>,
        uncached_info: Option<crate::memory::SliceHandle>,
        info_bytes: u64,
    ) -> Error<P::Error> {
        self.doom_platform(sid, "wait", &e);
        if let Some(h) = uncached_info {
            self.defer(env, sid, Deferred::Device(h), info_bytes);
        }
        e
    }

    /// A launch refused before it was queued (its info words or its wait):
    /// its outputs are claimed ([`Inner::claim_refused`]); returns `e`.
    #[cold]
    #[inline(never)]
    fn launch_refused(
        &mut self,
        kernel: KernelId,
        args: &[Arg<'_>],
        e: Error<P::Error>,
    ) -> Error<P::Error> {
        if self.operands(args).is_ok() {
            if let Ok(k) = self.kernel(kernel) {
                let op = Operation::Launch(k.name.clone());
                self.claim_refused(op, &e);
            }
        }
        e
    }

    /// Whether every argument names a live, placed buffer of this device.
    fn args_placed(&self, args: &[Arg<'_>]) -> bool {
        args.iter().all(|a| {
            a.buffer.device() == self.id
                && self
                    .buffers
                    .get(a.buffer.id())
                    .is_ok_and(|b| b.range().is_some())
        })
    }

    /// Books an eager launch over `scratch_ops` as queued: a new cursor,
    /// its outputs' claims cleared, every argument's use marked.
    fn launch_succeeded(&mut self, sid: StreamId, args: &[Arg<'_>]) -> Res<(), P> {
        self.stats.launches += 1;
        let cursor = self.sync.submit(sid)?;
        if !self.taint.is_empty() {
            self.taint.succeeded(&self.scratch_ops);
        }
        for a in args {
            self.mark_use(a.buffer.id(), sid, cursor, a.access)?;
        }
        Ok(())
    }

    /// The platform refused a launch submitted as a [`Submitted::Tail`]:
    /// undoes the booking and claims its outputs, as a refusal under the
    /// lock would have. (The uses stay marked: an extra wait later, never a
    /// missing one.)
    pub(crate) fn tail_failed(
        &mut self,
        sid: StreamId,
        kernel: KernelId,
        args: &[Arg<'_>],
        e: P::Error,
    ) -> Error<P::Error> {
        self.stats.launches = self.stats.launches.saturating_sub(1);
        let op = match self.kernel(kernel) {
            Ok(k) => Operation::Launch(k.name.clone()),
            Err(e) => return e,
        };
        if let Err(e) = self.operands(args) {
            return e;
        }
        self.work_failed(sid, "launch", op, e)
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
}

/// The taint region of a buffer of `size` bytes: all of it, and at least
/// one byte, so a zero-byte buffer whose reservation failed still carries
/// its failure's claim.
#[inline]
pub(crate) fn taint_region(id: super::buffer::BufferId, size: u64) -> Region {
    Region::new(AllocId(id.as_u64()), 0, size.max(1))
}

/// `report` about buffer `id` of `size` bytes as its user knows it: a
/// zero-byte buffer's one-byte claim (see [`taint_region`]) shown as the
/// buffer's zero bytes.
pub(crate) fn as_sized(
    mut report: alloc::boxed::Box<crate::failure::TaintReport>,
    id: super::buffer::BufferId,
    size: u64,
) -> alloc::boxed::Box<crate::failure::TaintReport> {
    if size == 0 {
        let alloc = AllocId(id.as_u64());
        let sized = |r: &mut Region| {
            if r.alloc == alloc {
                *r = Region::new(alloc, 0, 0);
            }
        };
        sized(&mut report.read);
        sized(&mut report.claimed);
        sized(&mut report.origin);
        for link in &mut report.chain {
            sized(&mut link.output);
            sized(&mut link.input);
        }
    }
    report
}
