//! Asynchronous copies between pinned host pages and device pages. Every
//! range is checked against the platform's live pages first: a copy never
//! touches memory the platform did not hand out.

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

#[allow(clippy::too_many_arguments)] // reason: one private helper, each argument a distinct part of the call
fn copy(
    shared: &Shared,
    stream: &mut HipStream,
    dst: u64,
    src: u64,
    len: usize,
    kind: hip::hipMemcpyKind,
    uses: [PageUse; 2],
) -> Result<(), HipError> {
    stream.check_owner(shared, CALL)?;
    if len == 0 {
        return Ok(());
    }
    for u in uses {
        stream.note(u);
    }
    shared.make_current()?;
    // SAFETY: both sides were checked to lie inside live pages this
    // platform handed out (device pages of its device storages, pinned
    // pages of its host storages), `len` bytes from their addresses; pages
    // are freed only by `hipFree`/`hipHostFree`, which wait for queued
    // copies, so the copy never touches memory the platform does not own.
    // The stream is live and belongs to this platform; `kind` names the
    // direction exactly.
    let status = unsafe {
        hip::hipMemcpyAsync(
            dst as *mut c_void,
            src as *const c_void,
            len,
            kind,
            stream.raw,
        )
    };
    check(CALL, status)
}

/// Queues pinned host → device.
pub(crate) fn to_device(
    shared: &Shared,
    stream: &mut HipStream,
    src: HostRange,
    dst: DeviceRange,
) -> Result<(), HipError> {
    let len = length(src.len, dst.len)?;
    let from = shared.pages.host_address(CALL, src)?;
    let to = shared.pages.device_address(CALL, dst)?;
    copy(
        shared,
        stream,
        to,
        from,
        len,
        hip::hipMemcpyKind_hipMemcpyHostToDevice,
        [PageUse::host(src), PageUse::device(dst)],
    )
}

/// Queues device → pinned host.
pub(crate) fn to_host(
    shared: &Shared,
    stream: &mut HipStream,
    src: DeviceRange,
    dst: HostRange,
) -> Result<(), HipError> {
    let len = length(src.len, dst.len)?;
    let from = shared.pages.device_address(CALL, src)?;
    let to = shared.pages.host_address(CALL, dst)?;
    copy(
        shared,
        stream,
        to,
        from,
        len,
        hip::hipMemcpyKind_hipMemcpyDeviceToHost,
        [PageUse::device(src), PageUse::host(dst)],
    )
}

/// Queues device → device.
pub(crate) fn device_to_device(
    shared: &Shared,
    stream: &mut HipStream,
    src: DeviceRange,
    dst: DeviceRange,
) -> Result<(), HipError> {
    let len = length(src.len, dst.len)?;
    let from = shared.pages.device_address(CALL, src)?;
    let to = shared.pages.device_address(CALL, dst)?;
    copy(
        shared,
        stream,
        to,
        from,
        len,
        hip::hipMemcpyKind_hipMemcpyDeviceToDevice,
        [PageUse::device(src), PageUse::device(dst)],
    )
}
