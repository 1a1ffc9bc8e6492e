//! Streams: non-blocking HIP streams that remember whether they capture.

use std::ptr;
use std::sync::Arc;
use std::vec::Vec;

use cubecl_hip_sys as hip;

use streamcore::platform::Binding;

use crate::error::{HipError, check};
use crate::pages::PageUse;
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
    /// The pages work recorded by the open capture touches, so its graph's
    /// replays can be refused once any of them is no longer live.
    pub(crate) captured_pages: Vec<PageUse>,
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
            captured_pages: Vec::new(),
            shared: Arc::clone(shared),
        })
    }

    /// Refuses a stream of another platform: a platform's calls check ranges
    /// against its own pages and run on its own device.
    #[inline]
    pub(crate) fn check_owner(&self, shared: &Shared, call: &'static str) -> Result<(), HipError> {
        if std::ptr::eq(&*self.shared, shared) {
            Ok(())
        } else {
            Err(HipError::invalid(call, "a stream of another platform"))
        }
    }

    /// Notes the pages of `bindings` when the stream is capturing.
    #[inline]
    pub(crate) fn note_bindings(&mut self, bindings: &[Binding]) {
        if self.capture.is_some() {
            self.captured_pages
                .extend(bindings.iter().map(|b| PageUse::device(b.range)));
        }
    }

    /// Notes one page use when the stream is capturing.
    #[inline]
    pub(crate) fn note(&mut self, page: PageUse) {
        if self.capture.is_some() {
            self.captured_pages.push(page);
        }
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
        self.shared.make_current()?;
        // SAFETY: `self.raw` is a live stream owned by `self`.
        check("hipStreamSynchronize", unsafe {
            hip::hipStreamSynchronize(self.raw)
        })
    }
}

impl Drop for HipStream {
    fn drop(&mut self) {
        // A failure cannot be reported from `drop`; the calls below then
        // fail harmlessly.
        let _ = self.shared.make_current();
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
