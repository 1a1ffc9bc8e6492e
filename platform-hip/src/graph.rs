//! Graph capture: `hipStreamBeginCapture` → `hipStreamEndCapture` →
//! `hipGraphInstantiate`, replayed with `hipGraphLaunch`.

use std::ptr;

use cubecl_hip_sys as hip;
use streamcore::platform::ErrorKind;

use crate::error::{HipError, check};
use crate::pages::{PageUse, all_live, merge_uses};
use crate::shared::{Shared, ensure_current};
use crate::stream::HipStream;

/// How streams capture: relaxed, so a non-blocking `query` of an earlier
/// fence stays legal during a capture. The rule the platform contract does
/// impose (no host synchronization while capturing) is enforced by the
/// platform itself, on every stream, see `HipEvent::synchronize`.
const CAPTURE_MODE: hip::hipStreamCaptureMode =
    hip::hipStreamCaptureMode_hipStreamCaptureModeRelaxed;

/// A sealed capture: the graph and its executable instance. Both are
/// destroyed exactly once, by [`crate::HipPlatform`]'s `destroy_graph` or
/// when dropped.
///
/// A replay touches the addresses the capture recorded, so the graph keeps
/// the pages its recorded copies and launches used, and a replay is refused
/// once any of them is no longer a live page of the platform (a storage
/// handed it back): a graph never writes memory the platform gave up.
#[derive(Debug)]
pub struct HipGraph {
    graph: hip::hipGraph_t,
    exec: hip::hipGraphExec_t,
    /// The device the graph was captured on.
    device: i32,
    /// The pages the recorded work touches (merged, one entry per page).
    pages: Box<[PageUse]>,
}

// SAFETY: graph and executable-graph handles are process-wide objects that
// HIP lets any thread launch; `HipGraph` owns both and releases them once.
unsafe impl Send for HipGraph {}
// SAFETY: the only operation through `&HipGraph` is `hipGraphLaunch`, which
// is thread-safe.
unsafe impl Sync for HipGraph {}

/// Starts capturing `stream`.
pub(crate) fn begin(shared: &Shared, stream: &mut HipStream) -> Result<(), HipError> {
    const CALL: &str = "hipStreamBeginCapture";
    stream.check_owner(shared, CALL)?;
    if stream.capture.is_some() {
        return Err(HipError::platform(
            CALL,
            ErrorKind::InvalidValue,
            Some(hip::hipError_t_hipErrorIllegalState),
            "hipErrorIllegalState",
            "the stream is already capturing",
        ));
    }
    shared.make_current()?;
    // SAFETY: the stream is live and not capturing; the mode is one HIP
    // defines.
    check(CALL, unsafe {
        hip::hipStreamBeginCapture(stream.raw, CAPTURE_MODE)
    })?;
    stream.captured_pages.clear();
    stream.capture = Some(stream.shared.capture_begun());
    Ok(())
}

/// Ends the capture of `stream` and instantiates what it recorded.
pub(crate) fn end(shared: &Shared, stream: &mut HipStream) -> Result<HipGraph, HipError> {
    const CALL: &str = "hipStreamEndCapture";
    stream.check_owner(shared, CALL)?;
    let Some(epoch) = stream.capture.take() else {
        return Err(HipError::platform(
            CALL,
            ErrorKind::InvalidValue,
            Some(hip::hipError_t_hipErrorIllegalState),
            "hipErrorIllegalState",
            "the stream is not capturing",
        ));
    };
    // Leaving the capture cannot wait for the device switch: a failure to
    // make the device current shows in `hipStreamEndCapture`'s status.
    let _ = shared.make_current();
    let mut raw: hip::hipGraph_t = ptr::null_mut();
    // SAFETY: the stream is live and capturing; `raw` is a valid out-pointer.
    let status = unsafe { hip::hipStreamEndCapture(stream.raw, &mut raw) };
    stream.shared.capture_ended();
    let mut pages = core::mem::take(&mut stream.captured_pages);
    merge_uses(&mut pages);
    // Owned from here on: every early return below destroys it.
    let mut graph = HipGraph {
        graph: raw,
        exec: ptr::null_mut(),
        device: shared.device,
        pages: pages.into_boxed_slice(),
    };
    check(CALL, status)?;
    if stream.shared.doomed_since(epoch) {
        return Err(HipError::platform(
            CALL,
            ErrorKind::CaptureInvalidated,
            Some(hip::hipError_t_hipErrorStreamCaptureInvalidated),
            "hipErrorStreamCaptureInvalidated",
            "a host synchronization during the capture invalidated it",
        ));
    }
    // SAFETY: `graph.graph` is the graph the capture just produced;
    // `graph.exec` is a valid out-pointer; no error node or log buffer is
    // requested (null, size 0).
    let status = unsafe {
        hip::hipGraphInstantiate(
            &mut graph.exec,
            graph.graph,
            ptr::null_mut(),
            ptr::null_mut(),
            0,
        )
    };
    check("hipGraphInstantiate", status)?;
    Ok(graph)
}

impl HipGraph {
    /// Queues one replay on `stream`, refused when a page the recorded
    /// work touches is no longer live.
    pub(crate) fn launch(&self, shared: &Shared, stream: &mut HipStream) -> Result<(), HipError> {
        const CALL: &str = "hipGraphLaunch";
        stream.check_owner(shared, CALL)?;
        if self.device != shared.device {
            return Err(HipError::invalid(
                CALL,
                "a graph captured on another device",
            ));
        }
        let (device, host) = (shared.pages.device(), shared.pages.host());
        if !all_live(&device, &host, &self.pages) {
            return Err(HipError::invalid(
                CALL,
                "a page the graph touches is no longer live",
            ));
        }
        shared.make_current()?;
        // SAFETY: the executable graph is live (owned by `self`) and the
        // stream is live and belongs to this platform, whose device is
        // current. Every page the recorded work touches is still a live page
        // of this platform, at least as large as the capture used it, and
        // the views keep them from being released until the replay is
        // queued; so the replay touches only memory the platform owns.
        let status = unsafe { hip::hipGraphLaunch(self.exec, stream.raw) };
        drop((device, host));
        check(CALL, status)
    }

    /// Destroys the executable graph and the graph, reporting the first
    /// failure. Each handle is released at most once, even on failure.
    pub(crate) fn destroy(mut self) -> Result<(), HipError> {
        self.release()
    }

    fn release(&mut self) -> Result<(), HipError> {
        if !self.exec.is_null() || !self.graph.is_null() {
            // A failure shows in the destroy calls' statuses.
            let _ = ensure_current(self.device);
        }
        let exec = core::mem::replace(&mut self.exec, ptr::null_mut());
        let graph = core::mem::replace(&mut self.graph, ptr::null_mut());
        let mut first = Ok(());
        if !exec.is_null() {
            // SAFETY: `exec` is live, owned here, and was taken out of `self`
            // so it is destroyed exactly once; replays already queued still
            // complete.
            first = check("hipGraphExecDestroy", unsafe {
                hip::hipGraphExecDestroy(exec)
            });
        }
        if !graph.is_null() {
            // SAFETY: `graph` is live, owned here, taken out of `self`, and
            // destroyed exactly once.
            let second = check("hipGraphDestroy", unsafe { hip::hipGraphDestroy(graph) });
            first = first.and(second);
        }
        first
    }
}

impl Drop for HipGraph {
    fn drop(&mut self) {
        // A failure cannot be reported from `drop`.
        let _ = self.release();
    }
}
