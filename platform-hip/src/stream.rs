//! Streams: non-blocking HIP streams that remember whether they capture.

use std::ptr;
use std::sync::Arc;

use cubecl_hip_sys as hip;

use crate::error::{HipError, check};
use crate::shared::Shared;

/// A HIP stream created with `hipStreamNonBlocking`: it never synchronizes
/// implicitly with the legacy default stream.
///
/// Dropping it ends an open capture (discarding the graph) and destroys the
/// stream; work already queued still completes.
#[derive(Debug)]
pub struct HipStream {
    pub(crate) raw: hip::hipStream_t,
    /// The doom epoch the open capture began under, if one is open.
    pub(crate) capture: Option<u64>,
    pub(crate) shared: Arc<Shared>,
}

// SAFETY: a HIP stream handle is a process-wide object that the runtime lets
// any thread use; `HipStream` holds it exclusively, and `&mut` access to it
// is what the platform methods require.
unsafe impl Send for HipStream {}

impl HipStream {
    /// Creates a non-blocking stream on the platform's device.
    pub(crate) fn create(shared: &Arc<Shared>) -> Result<Self, HipError> {
        shared.make_current()?;
        let mut raw: hip::hipStream_t = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer for one stream handle; the
        // flag is one HIP defines.
        let status = unsafe { hip::hipStreamCreateWithFlags(&mut raw, hip::hipStreamNonBlocking) };
        check("hipStreamCreateWithFlags", status)?;
        Ok(Self {
            raw,
            capture: None,
            shared: Arc::clone(shared),
        })
    }

    /// Whether this stream is capturing.
    pub fn is_capturing(&self) -> bool {
        self.capture.is_some()
    }

    /// The raw handle, for code that calls HIP directly (benches).
    pub fn as_raw(&self) -> hip::hipStream_t {
        self.raw
    }

    /// Blocks the host until all work queued on the stream has completed.
    /// Fails with a capture error while the stream is capturing.
    pub fn synchronize(&self) -> Result<(), HipError> {
        // SAFETY: `self.raw` is a live stream owned by `self`.
        check("hipStreamSynchronize", unsafe {
            hip::hipStreamSynchronize(self.raw)
        })
    }
}

impl Drop for HipStream {
    fn drop(&mut self) {
        if self.capture.take().is_some() {
            let mut graph: hip::hipGraph_t = ptr::null_mut();
            // SAFETY: the stream is live and capturing; `graph` is a valid
            // out-pointer. A failure leaves nothing to release.
            let status = unsafe { hip::hipStreamEndCapture(self.raw, &mut graph) };
            if status == hip::hipError_t_hipSuccess && !graph.is_null() {
                // SAFETY: `graph` was just produced by the capture and is
                // owned here; it is destroyed once.
                let _ = unsafe { hip::hipGraphDestroy(graph) };
            }
            self.shared.capture_ended();
        }
        // SAFETY: `self.raw` is a live stream owned by `self`, destroyed
        // exactly once here. A failure cannot be reported from `drop`.
        let _ = unsafe { hip::hipStreamDestroy(self.raw) };
    }
}
