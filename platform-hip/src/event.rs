//! Fences: HIP events with timing disabled, recorded once per use, kept
//! for reuse by the thread that drops them (`idle_events`).

use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use cubecl_hip_sys as hip;
use streamcore::platform::ErrorKind;

use crate::error::{HipError, check};
use crate::idle_events;
use crate::shared::{Shared, ensure_current};
use crate::stream::HipStream;

/// A point recorded on a stream (a HIP event created with
/// `hipEventDisableTiming`).
///
/// Dropping it keeps the driver event in the dropping thread's small cache
/// of idle events, so the next `record` on that thread re-records it
/// instead of creating one (creating and destroying an event costs more
/// than recording one); events recorded inside a capture, and any beyond
/// the cache's bound, are destroyed. Neither record nor drop takes a lock or
/// touches a shared counter. A wait
/// already queued on a re-recorded event still waits for the record it saw
/// (HIP's rule for `hipStreamWaitEvent`). Once a query found the event
/// passed, later queries answer from memory.
#[derive(Debug)]
pub struct HipEvent {
    raw: hip::hipEvent_t,
    captured: bool,
    /// A query or synchronization saw the event pass.
    passed: AtomicBool,
    /// The device the event was created on.
    device: i32,
}

// SAFETY: a HIP event handle is a process-wide object the runtime lets any
// thread record, wait on, query and synchronize with; `HipEvent` owns it
// and only destroys it in `drop`.
unsafe impl Send for HipEvent {}
// SAFETY: every method taking `&HipEvent` is a thread-safe HIP call
// (`hipEventQuery`, `hipEventSynchronize`, `hipStreamWaitEvent`).
unsafe impl Sync for HipEvent {}

impl HipEvent {
    /// Creates an event and records it after the work queued on `stream`
    /// (a stream of the platform `shared` belongs to).
    pub(crate) fn record(shared: &Shared, stream: &mut HipStream) -> Result<Self, HipError> {
        stream.check_owner(shared, "hipEventRecord")?;
        shared.make_current()?;
        let raw = match idle_events::take(shared.device) {
            Some(raw) => raw,
            None => {
                let mut raw: hip::hipEvent_t = ptr::null_mut();
                // SAFETY: `raw` is a valid out-pointer for one event handle;
                // the flag is one HIP defines; the device is current.
                let status =
                    unsafe { hip::hipEventCreateWithFlags(&mut raw, hip::hipEventDisableTiming) };
                check("hipEventCreateWithFlags", status)?;
                raw
            }
        };
        // Owned from here on, so an error below still releases it.
        let event = Self {
            raw,
            captured: stream.is_capturing(),
            passed: AtomicBool::new(false),
            device: shared.device,
        };
        // SAFETY: the event and the stream are live handles.
        check("hipEventRecord", unsafe {
            hip::hipEventRecord(event.raw, stream.raw)
        })?;
        Ok(event)
    }

    /// Whether the event was recorded inside a capture (it then orders work
    /// inside the graph, not on the device's timeline). Such an event is for
    /// `wait` inside the same capture only: querying or synchronizing it is
    /// left to the driver, which refuses (CUDA 13 through the shim answered
    /// `hipErrorInvalidValue` once the capture had ended).
    pub fn is_captured(&self) -> bool {
        self.captured
    }

    /// Makes work queued on `stream` from now on wait for this event.
    pub(crate) fn wait_on(&self, shared: &Shared, stream: &mut HipStream) -> Result<(), HipError> {
        stream.check_owner(shared, "hipStreamWaitEvent")?;
        shared.make_current()?;
        // SAFETY: the stream and the event are live handles; flag 0 is
        // `hipEventWaitDefault`.
        check("hipStreamWaitEvent", unsafe {
            hip::hipStreamWaitEvent(stream.raw, self.raw, 0)
        })
    }

    /// Non-blocking: whether the work before the event has completed.
    pub(crate) fn query(&self) -> Result<bool, HipError> {
        if self.passed.load(Ordering::Relaxed) {
            return Ok(true);
        }
        // SAFETY: the event is a live handle; the call does not block.
        let status = unsafe { hip::hipEventQuery(self.raw) };
        if status == hip::hipError_t_hipSuccess {
            self.passed.store(true, Ordering::Relaxed);
            Ok(true)
        } else if status == hip::hipError_t_hipErrorNotReady {
            Ok(false)
        } else {
            Err(HipError::hip("hipEventQuery", status))
        }
    }

    /// Blocks the host until the event has passed. Refused (and every open
    /// capture doomed) while any stream of the platform is capturing.
    pub(crate) fn synchronize(&self, shared: &Shared) -> Result<(), HipError> {
        if shared.capturing() {
            shared.doom_open_captures();
            return Err(HipError::platform(
                "hipEventSynchronize",
                ErrorKind::CaptureUnsupported,
                Some(hip::hipError_t_hipErrorStreamCaptureUnsupported),
                "hipErrorStreamCaptureUnsupported",
                "a host synchronization while a stream is capturing; the capture is invalidated",
            ));
        }
        if self.passed.load(Ordering::Relaxed) {
            return Ok(());
        }
        // SAFETY: the event is a live handle.
        check("hipEventSynchronize", unsafe {
            hip::hipEventSynchronize(self.raw)
        })?;
        self.passed.store(true, Ordering::Relaxed);
        Ok(())
    }
}

impl Drop for HipEvent {
    fn drop(&mut self) {
        let raw = std::mem::replace(&mut self.raw, ptr::null_mut());
        if raw.is_null() {
            return;
        }
        // Kept unless captured: the next `record` on this thread re-records
        // it (a wait already queued on it keeps waiting for the record it
        // saw).
        let spare = if self.captured {
            Some(raw)
        } else {
            idle_events::give_back(self.device, raw)
        };
        if let Some(raw) = spare {
            destroy(self.device, raw);
        }
    }
}

/// Destroys an event created on `device`.
pub(crate) fn destroy(device: i32, raw: hip::hipEvent_t) {
    // A failure cannot be reported from `drop`; the destroy then fails
    // harmlessly.
    let _ = ensure_current(device);
    // SAFETY: `raw` is a live event this crate created, owned by the caller
    // and destroyed exactly once here; HIP defers the release while queued
    // waits still reference it.
    let _ = unsafe { hip::hipEventDestroy(raw) };
}
