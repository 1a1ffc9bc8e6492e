//! A launch's info words: bound from the stream's info cache (a hit), or
//! uploaded through the staging pool into a fresh slice and cached (a
//! miss); the staging slices retired after the stream's next fence.

use super::doom::error_kind;
use super::lock::RawLock;
use super::state::{Deferred, Env, Inner, Res, host_err};
use crate::error::Error;
use crate::info_cache::InsertError;
use crate::memory::MemoryError;
use crate::platform::{DeviceRange, HostRange, HostStorage, Platform};
use crate::stream::{DoomReason, StreamId};

/// A launch's info binding: the device range holding its info words, and
/// the slice to free after the launch when no cache entry owns it.
type InfoBinding = (DeviceRange, Option<crate::memory::SliceHandle>);

impl<P: Platform> Inner<P> {
    /// The info binding of a launch off the common path: for a booked
    /// launch whose words the cache missed, uploaded
    /// ([`info_upload`](Self::info_upload)); for one not booked (a capture
    /// recording, a claim somewhere), [`info_binding`](Self::info_binding).
    /// A failure dooms an open window on `sid` (the launch is not queued,
    /// the window would miss it). Out of line: the common path's frame
    /// stays small.
    #[cold]
    #[inline(never)]
    pub(crate) fn info_off_path<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        info: &[u64],
        booked: bool,
    ) -> Res<InfoBinding, P> {
        let r = if booked {
            self.info_upload(env, sid, info)
        } else {
            self.info_binding(env, sid, info)
        };
        if let Err(e) = &r {
            let reason = match e {
                Error::Memory(MemoryError::AllocationInCapture { bytes }) => {
                    DoomReason::AllocationInCapture { bytes: *bytes }
                }
                other => DoomReason::Platform {
                    op: "launch",
                    kind: error_kind(other),
                },
            };
            self.doom(sid, reason);
        }
        r
    }

    /// The device range holding `info`: a cache hit, or a fresh slice
    /// uploaded through the staging pool and cached. The second value is a
    /// slice to free after the launch when the cache refused it.
    fn info_binding<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        info: &[u64],
    ) -> Res<InfoBinding, P> {
        if let Some(range) = self.stream(env, sid)?.info_get(info) {
            self.stats.info_hits += 1;
            return Ok((range, None));
        }
        self.info_upload(env, sid, info)
    }

    /// The miss of [`info_binding`](Self::info_binding): `info` uploaded
    /// into a fresh slice through the staging pool and cached (words the
    /// caller looked up and did not find).
    fn info_upload<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        info: &[u64],
    ) -> Res<InfoBinding, P> {
        // The one part of a launch that takes memory: the handles dropped
        // since the last operation that did give theirs back first (the
        // common path leaves them, for its lines' sake).
        self.process_releases(env);
        let st = self.stream(env, sid)?;
        let bytes = words_bytes(info);
        let (handle, range) = st.memory.reserve(bytes)?;
        self.stats.info_misses += 1;
        if let Err(e) = self.upload_words(env, sid, info, range) {
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
        let uncached = self.with_stream(env, sid, |st, evicted| {
            match st.info_mut().insert(info, (handle, range), |(h, _)| {
                evicted.push(Deferred::Device(h))
            }) {
                Ok(_) => None,
                Err(InsertError::AlreadyCached(v)) | Err(InsertError::TooLarge(v)) => Some(v.0),
                Err(_) => Some(handle),
            }
        })?;
        Ok((range, uncached))
    }

    /// Copies `words` (little-endian) to `dst` through the staging pool:
    /// one host write of all the words, one copy.
    fn upload_words<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        words: &[u64],
        dst: DeviceRange,
    ) -> Res<(), P> {
        let bytes = words_bytes(words);
        let (h, hr) = self.host.reserve(bytes).map_err(host_err::<P>)?;
        let mut staged = core::mem::take(&mut self.scratch_bytes);
        staged.clear();
        staged.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        let written = self.host.storage_mut().write(hr.page, hr.offset, &staged);
        self.scratch_bytes = staged;
        if let Err(e) = written {
            let _ = self.host.free(h);
            return Err(Error::platform("host_write", e));
        }
        let src = HostRange {
            page: hr.page,
            offset: hr.offset,
            len: bytes,
        };
        let copied = env.on_stream(sid, |p, s| p.copy_to_device(s, src, dst))?;
        if let Err(e) = copied {
            let _ = self.host.free(h);
            return Err(Error::platform("copy_to_device", e));
        }
        self.retire_host(env, sid, h, bytes)
    }

    /// A staging slice used by queued work: freed after the stream's next
    /// fence, or kept for the graph's life when recorded in a capture.
    pub(crate) fn retire_host<L: RawLock>(
        &mut self,
        env: &Env<P, L>,
        sid: StreamId,
        h: crate::memory::SliceHandle,
        bytes: u64,
    ) -> Res<(), P> {
        let st = self.stream(env, sid)?;
        if st.capture.is_recording() {
            st.window_host.push(h);
        } else {
            self.defer(env, sid, Deferred::Host(h), bytes);
        }
        Ok(())
    }
}

/// The bytes of `words` info words (no overflow: a slice of `u64`s spans
/// fewer than 2^64 bytes, and `usize` is at most 64 bits wide).
pub(crate) fn words_bytes(words: &[u64]) -> u64 {
    (words.len() as u64).saturating_mul(8)
}
