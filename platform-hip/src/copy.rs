//! Asynchronous copies between pinned host pages and device pages. Every
//! range is checked against the platform's live pages first, and the pages
//! stay locked (shared) until the copy is queued: a copy never touches
//! memory the platform did not hand out, or has freed.

use std::ffi::c_void;

use cubecl_hip_sys as hip;
use streamcore::platform::{DeviceRange, HostRange};

use crate::error::{HipError, check};
use crate::pages::PageUse;
use crate::shared::Shared;
use crate::stream::HipStream;

const CALL: &str = "hipMemcpyAsync";

fn length(src: u64, dst: u64) -> Result<usize, HipError> {
    if src != dst {
        return Err(HipError::invalid(
            CALL,
            "source and destination lengths differ",
        ));
    }
    usize::try_from(src).map_err(|_| HipError::invalid(CALL, "length exceeds the address space"))
}

/// Which pages a copy reads and writes.
#[derive(Clone, Copy)]
enum Ends {
    ToDevice(HostRange, DeviceRange),
    ToHost(DeviceRange, HostRange),
    DeviceToDevice(DeviceRange, DeviceRange),
}

/// Checks both ends, then queues the copy while the pages stay locked.
fn queue(shared: &Shared, stream: &mut HipStream, ends: Ends) -> Result<(), HipError> {
    stream.check_owner(shared, CALL)?;
    let device = shared.pages.device();
    let host = match ends {
        Ends::DeviceToDevice(..) => None,
        _ => Some(shared.pages.host()),
    };
    let dev = |r: DeviceRange| device.address(CALL, r.page, r.offset, r.len);
    let pinned = |r: HostRange| match &host {
        Some(view) => view.address(CALL, r.page, r.offset, r.len),
        None => Err(HipError::invalid(CALL, "no host side")),
    };
    let (src, dst, len, kind, uses) = match ends {
        Ends::ToDevice(s, d) => (
            pinned(s)?,
            dev(d)?,
            length(s.len, d.len)?,
            hip::hipMemcpyKind_hipMemcpyHostToDevice,
            [PageUse::host(s), PageUse::device(d)],
        ),
        Ends::ToHost(s, d) => (
            dev(s)?,
            pinned(d)?,
            length(s.len, d.len)?,
            hip::hipMemcpyKind_hipMemcpyDeviceToHost,
            [PageUse::device(s), PageUse::host(d)],
        ),
        Ends::DeviceToDevice(s, d) => (
            dev(s)?,
            dev(d)?,
            length(s.len, d.len)?,
            hip::hipMemcpyKind_hipMemcpyDeviceToDevice,
            [PageUse::device(s), PageUse::device(d)],
        ),
    };
    if len == 0 {
        return Ok(());
    }
    for u in uses {
        stream.note(u);
    }
    shared.make_current()?;
    // SAFETY: both sides were checked to lie inside live pages this
    // platform handed out (device pages of its device storages, pinned
    // pages of its host storages), `len` bytes from their addresses, and
    // the views keep those pages from being released until the copy is
    // queued; a release is followed by `hipFree`/`hipHostFree`, which wait
    // for queued copies. So the copy touches only memory the platform owns.
    // The stream is live and belongs to this platform, whose device is
    // current; `kind` names the direction exactly.
    let status = unsafe {
        hip::hipMemcpyAsync(
            dst as *mut c_void,
            src as *const c_void,
            len,
            kind,
            stream.raw,
        )
    };
    drop(host);
    drop(device);
    check(CALL, status)
}

/// Queues pinned host → device.
pub(crate) fn to_device(
    shared: &Shared,
    stream: &mut HipStream,
    src: HostRange,
    dst: DeviceRange,
) -> Result<(), HipError> {
    queue(shared, stream, Ends::ToDevice(src, dst))
}

/// Queues device → pinned host.
pub(crate) fn to_host(
    shared: &Shared,
    stream: &mut HipStream,
    src: DeviceRange,
    dst: HostRange,
) -> Result<(), HipError> {
    queue(shared, stream, Ends::ToHost(src, dst))
}

/// Queues device → device.
pub(crate) fn device_to_device(
    shared: &Shared,
    stream: &mut HipStream,
    src: DeviceRange,
    dst: DeviceRange,
) -> Result<(), HipError> {
    queue(shared, stream, Ends::DeviceToDevice(src, dst))
}
