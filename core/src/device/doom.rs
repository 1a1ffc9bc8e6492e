//! What a failure does to an open capture window (dooms it, so
//! `end_capture` refuses to seal a graph missing work), and the storage
//! flushes and growth held while any stream records.

use super::state::{Inner, Res, host_err};
use crate::error::Error;
use crate::platform::{Platform, PlatformError};
use crate::stream::StreamId;

impl<P: Platform> Inner<P> {
    /// Holds every pool's storage flushes and growth while any stream
    /// records a capture (drivers in global capture mode forbid allocating
    /// and releasing memory, and would invalidate the capture), and resumes
    /// them once none does. Call after every change of `recording`.
    pub(crate) fn hold_flushes_while_recording(&mut self) -> Res<(), P> {
        let hold = self.recording > 0;
        let mut result = Ok(());
        for (_, st) in self.streams.iter_mut() {
            if let Err(e) = st.memory.hold_flushes(hold) {
                result = Err(Error::Memory(e));
            }
        }
        self.host.hold_flushes(hold).map_err(host_err::<P>)?;
        result
    }

    /// Dooms `sid`'s open window because work asked for inside it failed
    /// on the platform before it was queued (the graph would miss it).
    pub(crate) fn doom_platform(&mut self, sid: StreamId, op: &'static str, e: &Error<P::Error>) {
        let kind = error_kind(e);
        self.doom(sid, crate::stream::DoomReason::Platform { op, kind });
    }

    /// Work whose arguments were accepted was refused before it was queued
    /// (its info words, its staging, its cross-stream wait): what it would
    /// have written (the writes among `scratch_ops`) is claimed by a new
    /// failure of `op` whose message is the refusal, as a refusal of the
    /// work's own platform call claims it. A later read of those bytes then
    /// reports the refusal instead of returning bytes the work never
    /// replaced, and work reading them is skipped until they are rewritten.
    #[cold]
    #[inline(never)]
    pub(crate) fn claim_refused(&mut self, op: crate::failure::Operation, e: &Error<P::Error>) {
        if !self.scratch_ops.iter().any(|o| o.access.writes()) {
            return;
        }
        let message = alloc::format!("{e}");
        let _ = self
            .taint
            .failed(crate::failure::Cause::new(op, message), &self.scratch_ops);
        self.stats.failures += 1;
    }

    /// Dooms `sid`'s open capture window, if any.
    pub(crate) fn doom(&mut self, sid: StreamId, reason: crate::stream::DoomReason) {
        if let Some(st) = self.streams.get_mut(sid) {
            st.capture.doom(reason);
        }
    }
}

/// The platform classification of a core error, for a capture window's
/// doom reason (`Other` for errors that carry none).
pub(crate) fn error_kind<E: PlatformError>(e: &Error<E>) -> crate::platform::ErrorKind {
    use crate::memory::{MemoryError, OomCause};
    use crate::platform::ErrorKind;
    match e {
        Error::Platform { source, .. } => source.kind(),
        Error::Failed { kind, .. } => *kind,
        Error::Memory(MemoryError::Storage { source, .. }) => source.kind(),
        Error::Memory(MemoryError::OutOfMemory {
            cause: OomCause::Storage(source),
            ..
        }) => source.kind(),
        Error::Memory(MemoryError::OutOfMemory { .. }) => ErrorKind::OutOfMemory,
        _ => ErrorKind::Other,
    }
}
