//! The operations that block the host: a host synchronization (`sync`,
//! `sync_all`, a read, the settling sync before a capture, the wait for
//! deferred frees when memory runs out, `install_pools`) and a kernel
//! compile. Each is split so the device lock is never held while the host
//! waits: submit under the lock, wait with no lock held, complete under the
//! lock. Other threads keep launching on other streams meanwhile.

use alloc::vec::Vec;

use super::Device;
use super::handle::{Buffer, KernelId};
use super::lock::{LockFamilyMutex, RawLock};
use super::state::{Env, Inner, Res};
use super::transfer::Alloc;
use crate::error::Error;
use crate::memory::{MemoryError, MemoryLayout};
use crate::platform::{KernelSource, Platform};
use crate::stream::StreamId;

/// Rounds of [`Device::sync_all`] before it reports that it could not
/// settle. Without concurrent work two rounds always settle (the first
/// completes every stream and moves the cross-stream pins it releases to
/// their owners' queues, the second releases those); the third is margin.
pub const SYNC_ALL_ROUNDS: usize = 3;

impl<P: Platform, L: RawLock> Device<P, L> {
    /// Compiles and loads a kernel. The compile runs without the device
    /// lock.
    pub fn load_kernel(&self, source: &KernelSource<'_>) -> Result<KernelId, Error<P::Error>> {
        let kernel = self
            .shared
            .env
            .platform
            .load_kernel(source)
            .map_err(|e| Error::platform("load_kernel", e))?;
        self.shared.state.lock().add_kernel(source, kernel)
    }

    /// A new buffer of `size` bytes in `stream`'s pools. Out of memory is an
    /// error only after the stream was synchronized (without the device
    /// lock), its deferred frees released, the idle pages every stream holds
    /// given back (as [`cleanup`](Self::cleanup)) and the reservation
    /// retried once. While another stream records a capture, a request that
    /// would need new storage fails with
    /// [`MemoryError::CaptureElsewhere`]
    /// and leaves that capture untouched (drivers capture device-wide: the
    /// allocation would invalidate it); what the stream's pools hold still
    /// serves.
    pub fn alloc(&self, stream: StreamId, size: u64) -> Result<Buffer, Error<P::Error>> {
        // The first attempt written out (not through `allocate`'s closure):
        // the warm path is this one lock and one reservation.
        {
            let (mut inner, env) = self.parts();
            if let Alloc::Done(b) = inner.alloc(env, stream, size, true)? {
                return Ok(b);
            }
        }
        self.alloc_after_sync(stream, size)
    }

    /// [`alloc`](Self::alloc) out of memory with deferred frees possibly
    /// waiting: see [`retry_after_sync`](Self::retry_after_sync).
    #[cold]
    fn alloc_after_sync(&self, stream: StreamId, size: u64) -> Result<Buffer, Error<P::Error>> {
        self.retry_after_sync(stream, "alloc", |inner, env, may_sync| {
            inner.alloc(env, stream, size, may_sync)
        })
    }

    /// Runs an allocation attempt; when it asks for a sync first (out of
    /// memory), see [`retry_after_sync`](Self::retry_after_sync).
    pub(crate) fn allocate(
        &self,
        stream: StreamId,
        op: &'static str,
        mut attempt: impl FnMut(&mut Inner<P>, &Env<P, L>, bool) -> Res<Alloc, P>,
    ) -> Result<Buffer, Error<P::Error>> {
        {
            let (mut inner, env) = self.parts();
            if let Alloc::Done(b) = attempt(&mut inner, env, true)? {
                return Ok(b);
            }
        }
        self.retry_after_sync(stream, op, attempt)
    }

    /// The second attempt of an allocation that ran out of memory: syncs
    /// `stream` without the lock, gives back the idle pages of every stream
    /// (best effort: an error there leaves the attempt to say what is
    /// wrong), and tries once more, not asking to sync again. A refused
    /// sync names `op`, the caller's operation.
    fn retry_after_sync(
        &self,
        stream: StreamId,
        op: &'static str,
        mut attempt: impl FnMut(&mut Inner<P>, &Env<P, L>, bool) -> Res<Alloc, P>,
    ) -> Result<Buffer, Error<P::Error>> {
        self.host_sync(stream).map_err(|e| e.in_call(op))?;
        let (mut inner, env) = self.parts();
        let _ = inner.release_idle_everywhere(env);
        match attempt(&mut inner, env, false)? {
            Alloc::Done(b) => Ok(b),
            // Unreachable: without `may_sync` an attempt never asks.
            Alloc::SyncFirst => Err(Error::InvalidArgument("allocation asked to sync twice")),
        }
    }

    /// Reads `buffer` back through `stream`, waiting for it (without the
    /// device lock). Fails with the taint report when a failure claims any
    /// of its bytes. When the wait fails the staging bytes stay reserved
    /// until a later fence on `stream` passes (the copy may still be queued),
    /// so no later read can see them overwritten.
    pub fn read(&self, stream: StreamId, buffer: &Buffer) -> Result<Vec<u8>, Error<P::Error>> {
        let ticket = {
            let (mut inner, env) = self.parts();
            inner.read_submit(env, stream, buffer)?
        };
        let (mut ticket, event) = ticket.take_event();
        let mut out = ticket.take_out();
        let waited = self.shared.env.platform.synchronize(&event);
        drop(event);
        let (mut inner, env) = self.parts();
        inner.read_complete(env, stream, ticket, waited, &mut out)?;
        Ok(out)
    }

    /// Waits for everything queued on `stream` so far, then releases its
    /// deferred frees that this covers.
    pub fn sync(&self, stream: StreamId) -> Result<(), Error<P::Error>> {
        self.host_sync(stream)
    }

    /// Waits for every stream and releases every deferred free: afterwards
    /// nothing queued before the call holds memory, and nothing stays pinned
    /// by a completed use. Fails with [`Error::NotSettled`] when other
    /// threads keep queuing work so that it could not settle in
    /// [`SYNC_ALL_ROUNDS`] rounds (everything already completed was
    /// released all the same).
    pub fn sync_all(&self) -> Result<(), Error<P::Error>> {
        let mut left = (0, 0);
        for _ in 0..SYNC_ALL_ROUNDS {
            let streams = self.shared.state.lock().sync.streams();
            for s in 0..streams {
                // At most MAX_STREAMS: fits a StreamId.
                self.host_sync(StreamId(s as u16))
                    .map_err(|e| e.in_call("sync_all"))?;
            }
            let (mut inner, env) = self.parts();
            inner.process_releases(env);
            let deferred: usize = inner.streams.iter().map(|(_, s)| s.drops.len()).sum();
            let pins = inner.pins.total();
            if deferred == 0 && pins == 0 && inner.releases.no_buffers() {
                return Ok(());
            }
            left = (deferred, pins);
        }
        Err(Error::NotSettled {
            deferred: left.0,
            cross_pins: left.1,
        })
    }

    /// One host synchronization of `stream`: submit (seal its staged drops,
    /// record an event) under the lock, wait with no lock held, complete
    /// (release what the wait covered) under the lock.
    pub(crate) fn host_sync(&self, stream: StreamId) -> Result<(), Error<P::Error>> {
        let fence = {
            let (mut inner, env) = self.parts();
            inner.process_releases(env);
            inner.sync_submit(env, stream)?
        };
        let Some(fence) = fence else {
            return Ok(());
        };
        let waited = self.shared.env.platform.synchronize(&fence.event);
        drop(fence.event);
        waited.map_err(|e| Error::platform("synchronize", e))?;
        let (mut inner, env) = self.parts();
        inner.sync_complete(env, stream, fence.cursor)
    }

    /// Starts recording `stream` (after `prepare` and a warm-up run). When
    /// no stream records yet, the stream is settled first by a host sync
    /// (without the device lock), so staging slices behind fences can be
    /// reused inside the window.
    ///
    /// While it records, no stream may ask its storage for memory or wait
    /// on the host (drivers capture device-wide): allocations on other
    /// streams are served from what their pools hold or refused with
    /// [`MemoryError::CaptureElsewhere`].
    /// A launch in the window that reads a buffer another stream wrote
    /// after the warm-up needs a wait on an event from outside the capture,
    /// which drivers refuse (the window is doomed): synchronize the writing
    /// stream (or `sync_all`) before `begin_capture`.
    pub fn begin_capture(&self, stream: StreamId) -> Result<(), Error<P::Error>> {
        let settle = {
            let (mut inner, env) = self.parts();
            inner.begin_check(env, stream)?
        };
        if settle {
            self.host_sync(stream)
                .map_err(|e| e.in_call("begin_capture"))?;
        }
        let (mut inner, env) = self.parts();
        inner.begin_capture(env, stream)
    }

    /// Swaps the pool layout of every stream and of streams created
    /// afterwards. Refuses, changing nothing, a layout whose pages exceed
    /// the device's memory (`LayoutError::PageLargerThanDevice`), and
    /// while a capture window is open or the caller holds live buffers
    /// (the error gives their bytes).
    /// Otherwise cached info buffers no graph pins are released (waiting for
    /// their fences without the device lock), and the swap is refused only
    /// if memory is still held by live graphs or by buffers other threads
    /// allocated meanwhile (the error gives the bytes); the layout is then
    /// unchanged everywhere.
    pub fn install_pools(&self, layout: MemoryLayout) -> Result<(), Error<P::Error>> {
        // A page larger than the device is refused before anything moves.
        layout
            .fits(self.shared.env.platform.properties().total_memory)
            .map_err(|e| Error::Memory(MemoryError::Layout(e)))?;
        {
            let (mut inner, env) = self.parts();
            inner.process_releases(env);
            install_check(&inner)?;
            // Cached info buffers are the device's, not the caller's: drop
            // the unpinned ones, so only what the caller (or a live graph)
            // holds counts as in use.
            for s in 0..inner.sync.streams() {
                let id = StreamId(s as u16);
                if inner.streams.get(id).is_some() {
                    inner.with_stream(env, id, |st, evicted| {
                        st.info_mut().clear_unpinned(|(h, _)| {
                            evicted.push(super::state::Deferred::Device(h))
                        });
                    })?;
                }
            }
        }
        // Settled as `sync_all` settles: one stream's sync can hand a free
        // pinned by its use to a stream already synced (a buffer read
        // across streams), so one pass over the streams is not enough.
        // Work other threads keep queuing is refused below by its bytes.
        match self.sync_all() {
            Ok(()) | Err(Error::NotSettled { .. }) => {}
            Err(e) => return Err(e.in_call("install_pools")),
        }
        let (mut inner, _) = self.parts();
        install_check(&inner)?;
        let in_use: u64 = inner
            .streams
            .iter()
            .map(|(_, st)| st.memory.report().total().in_use)
            .sum();
        if in_use > 0 {
            return Err(Error::Memory(MemoryError::InUse { bytes: in_use }));
        }
        for (_, st) in inner.streams.iter_mut() {
            st.memory.install(layout.clone())?;
        }
        inner.layout = layout;
        Ok(())
    }
}

/// What refuses `install_pools` before anything changes: an open capture
/// window, or buffers the caller holds.
fn install_check<P: Platform>(inner: &Inner<P>) -> Res<(), P> {
    if inner.streams.iter().any(|(_, st)| st.capture.is_open()) {
        return Err(Error::NotWhileCapturing {
            op: "install_pools",
        });
    }
    let held = inner.buffers.placed_bytes();
    if held > 0 {
        return Err(Error::Memory(MemoryError::InUse { bytes: held }));
    }
    Ok(())
}
