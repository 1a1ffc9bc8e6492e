//! Asynchronous copies between pinned host pages and device pages.

use std::ffi::c_void;

use cubecl_hip_sys as hip;
use streamcore::platform::{DeviceRange, HostRange, PageId};

use crate::error::{HipError, check};
use crate::stream::HipStream;

/// The address of the byte at `offset` in the page `page` (page ids are
/// addresses on this platform).
pub(crate) fn address(call: &'static str, page: PageId, offset: u64) -> Result<u64, HipError> {
    page.0
        .checked_add(offset)
        .ok_or_else(|| HipError::invalid(call, "page address + offset overflows"))
}

/// The host address of a range, refused unless it lies inside a live pinned
/// page of this platform: a copy never touches host memory the platform did
/// not hand out.
fn host_address(stream: &HipStream, call: &'static str, range: HostRange) -> Result<u64, HipError> {
    let start = address(call, range.page, range.offset)?;
    if stream.shared.host_range_is_live(start, range.len) {
        Ok(start)
    } else {
        Err(HipError::invalid(
            call,
            "host range outside every live pinned page",
        ))
    }
}

fn length(call: &'static str, src: u64, dst: u64) -> Result<usize, HipError> {
    if src != dst {
        return Err(HipError::invalid(
            call,
            "source and destination lengths differ",
        ));
    }
    usize::try_from(src).map_err(|_| HipError::invalid(call, "length exceeds the address space"))
}

fn copy(
    stream: &mut HipStream,
    dst: u64,
    src: u64,
    len: usize,
    kind: hip::hipMemcpyKind,
) -> Result<(), HipError> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: a host side was checked to lie inside a live pinned page of
    // this platform, and pinned pages are freed only by `hipHostFree`, which
    // waits for queued copies; so host memory outside those pages is never
    // touched. Device addresses are only dereferenced by the device (a bad
    // one faults there, reported as a HIP error, not host memory damage).
    // The stream is live; `kind` names the direction exactly.
    let status = unsafe {
        hip::hipMemcpyAsync(
            dst as *mut c_void,
            src as *const c_void,
            len,
            kind,
            stream.raw,
        )
    };
    check("hipMemcpyAsync", status)
}

/// Queues pinned host → device.
pub(crate) fn to_device(
    stream: &mut HipStream,
    src: HostRange,
    dst: DeviceRange,
) -> Result<(), HipError> {
    const CALL: &str = "hipMemcpyAsync";
    let len = length(CALL, src.len, dst.len)?;
    let from = host_address(stream, CALL, src)?;
    let to = address(CALL, dst.page, dst.offset)?;
    copy(
        stream,
        to,
        from,
        len,
        hip::hipMemcpyKind_hipMemcpyHostToDevice,
    )
}

/// Queues device → pinned host.
pub(crate) fn to_host(
    stream: &mut HipStream,
    src: DeviceRange,
    dst: HostRange,
) -> Result<(), HipError> {
    const CALL: &str = "hipMemcpyAsync";
    let len = length(CALL, src.len, dst.len)?;
    let from = address(CALL, src.page, src.offset)?;
    let to = host_address(stream, CALL, dst)?;
    copy(
        stream,
        to,
        from,
        len,
        hip::hipMemcpyKind_hipMemcpyDeviceToHost,
    )
}

/// Queues device → device.
pub(crate) fn device_to_device(
    stream: &mut HipStream,
    src: DeviceRange,
    dst: DeviceRange,
) -> Result<(), HipError> {
    const CALL: &str = "hipMemcpyAsync";
    let len = length(CALL, src.len, dst.len)?;
    let from = address(CALL, src.page, src.offset)?;
    let to = address(CALL, dst.page, dst.offset)?;
    copy(
        stream,
        to,
        from,
        len,
        hip::hipMemcpyKind_hipMemcpyDeviceToDevice,
    )
}
