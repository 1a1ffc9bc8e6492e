//! The driver's virtual-memory calls, each behind a checked wrapper:
//! address ranges (`hipMemAddressReserve` / `hipMemAddressFree`), physical
//! chunks (`hipMemCreate` / `hipMemRelease`), mappings (`hipMemMap` /
//! `hipMemUnmap`, `hipMemSetAccess`) and the granularity they work in
//! (`hipMemGetAllocationGranularity`).
//!
//! Every status is checked and becomes a [`HipError`]. The wrappers that
//! take an address are `unsafe`: the caller vouches that the address came
//! from the matching call and that no queued work still touches it.

use std::ffi::c_void;
use std::ptr;

use cubecl_hip_sys as hip;

use crate::error::{HipError, check};
use crate::shared::Shared;

/// Properties of pinned memory on `device`, not exportable.
fn device_prop(device: i32) -> hip::hipMemAllocationProp {
    hip::hipMemAllocationProp {
        type_: hip::hipMemAllocationType_hipMemAllocationTypePinned,
        __bindgen_anon_1: hip::hipMemAllocationProp__bindgen_ty_1 {
            requestedHandleType: hip::hipMemAllocationHandleType_hipMemHandleTypeNone,
        },
        location: hip::hipMemLocation {
            type_: hip::hipMemLocationType_hipMemLocationTypeDevice,
            id: device,
        },
        win32HandleMetaData: ptr::null_mut(),
        allocFlags: hip::hipMemAllocationProp__bindgen_ty_2 {
            compressionType: 0,
            gpuDirectRDMACapable: 0,
            usage: 0,
        },
    }
}

/// Whether the device supports the virtual-memory calls: the device
/// attribute says so and the granularity call answers a usable power of two.
/// Returns that granularity, or `None` when unsupported. Errors are only
/// those that say the device itself is unusable (a runtime that answers
/// "not supported" or "invalid value" is an answer: `None`).
pub(crate) fn probe(shared: &Shared) -> Result<Option<u64>, HipError> {
    shared.make_current()?;
    let mut supported = 0i32;
    // SAFETY: `supported` is a valid out-pointer; the attribute is one HIP
    // defines and the ordinal was checked by the platform's constructor.
    let status = unsafe {
        hip::hipDeviceGetAttribute(
            &mut supported,
            hip::hipDeviceAttribute_t_hipDeviceAttributeVirtualMemoryManagementSupported,
            shared.device,
        )
    };
    match check("hipDeviceGetAttribute", status) {
        Ok(()) if supported != 0 => {}
        Ok(()) => return Ok(None),
        Err(e) if answers_unsupported(&e) => return Ok(None),
        Err(e) => return Err(e),
    }
    match granularity(shared.device) {
        Ok(g) if g.is_power_of_two() => Ok(Some(g)),
        Ok(_) => Ok(None),
        Err(e) if answers_unsupported(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A status that means "this runtime or device cannot do it", not "the
/// device is broken".
fn answers_unsupported(e: &HipError) -> bool {
    matches!(
        e.status(),
        Some(
            hip::hipError_t_hipErrorNotSupported
                | hip::hipError_t_hipErrorInvalidValue
                | hip::hipError_t_hipErrorNotInitialized
        )
    )
}

/// The larger of the minimum and the recommended granularity on `device`.
pub(crate) fn granularity(device: i32) -> Result<u64, HipError> {
    let prop = device_prop(device);
    let mut best = 0u64;
    for option in [
        hip::hipMemAllocationGranularity_flags_hipMemAllocationGranularityMinimum,
        hip::hipMemAllocationGranularity_flags_hipMemAllocationGranularityRecommended,
    ] {
        let mut g = 0usize;
        // SAFETY: `g` is a valid out-pointer, `prop` a fully initialized
        // property struct that outlives the call, `option` a defined flag.
        check("hipMemGetAllocationGranularity", unsafe {
            hip::hipMemGetAllocationGranularity(&mut g, &prop, option)
        })?;
        best = best.max(g as u64);
    }
    Ok(best)
}

fn bytes(call: &'static str, size: u64) -> Result<usize, HipError> {
    usize::try_from(size).map_err(|_| HipError::invalid(call, "size exceeds the address space"))
}

/// Reserves `size` bytes of device address space aligned to `alignment`,
/// with no memory behind them. Returns the start address.
pub(crate) fn reserve(size: u64, alignment: u64) -> Result<u64, HipError> {
    let size = bytes("hipMemAddressReserve", size)?;
    let alignment = bytes("hipMemAddressReserve", alignment)?;
    let mut address: *mut c_void = ptr::null_mut();
    // SAFETY: `address` is a valid out-pointer; no fixed address is asked
    // for (null) and the flags are 0 as HIP requires.
    check("hipMemAddressReserve", unsafe {
        hip::hipMemAddressReserve(&mut address, size, alignment, ptr::null_mut(), 0)
    })?;
    Ok(address as u64)
}

/// Frees an address range.
///
/// # Safety
/// `address` and `size` are exactly one range returned by [`reserve`],
/// freed once, with nothing mapped in it any more.
pub(crate) unsafe fn address_free(address: u64, size: u64) -> Result<(), HipError> {
    let size = bytes("hipMemAddressFree", size)?;
    // SAFETY: the caller vouches for the range (see `# Safety`).
    check("hipMemAddressFree", unsafe {
        hip::hipMemAddressFree(address as *mut c_void, size)
    })
}

/// One physical chunk of device memory from `hipMemCreate`. Released with
/// [`release`] (never implicitly: a release can fail and must be reported).
#[derive(Debug)]
pub(crate) struct Chunk {
    handle: hip::hipMemGenericAllocationHandle_t,
    size: u64,
}

// SAFETY: a generic allocation handle is a process-wide value the runtime
// lets any thread pass to its calls; `Chunk` owns it exclusively.
unsafe impl Send for Chunk {}
// SAFETY: `Chunk` offers no method that mutates through `&self`.
unsafe impl Sync for Chunk {}

impl Chunk {
    /// Its size in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }
}

/// Creates a chunk of `size` bytes (a multiple of the granularity) of
/// pinned memory on `device`. Out of memory is an error of kind
/// `OutOfMemory`.
pub(crate) fn create(device: i32, size: u64) -> Result<Chunk, HipError> {
    let len = bytes("hipMemCreate", size)?;
    let prop = device_prop(device);
    let mut handle: hip::hipMemGenericAllocationHandle_t = ptr::null_mut();
    // SAFETY: `handle` is a valid out-pointer, `prop` a fully initialized
    // property struct that outlives the call, flags 0 as HIP requires.
    check("hipMemCreate", unsafe {
        hip::hipMemCreate(&mut handle, len, &prop, 0)
    })?;
    Ok(Chunk { handle, size })
}

/// Releases a chunk. On failure the chunk is handed back with the error.
pub(crate) fn release(chunk: Chunk) -> Result<(), (Chunk, HipError)> {
    // SAFETY: the handle came from `hipMemCreate` and is released once: the
    // chunk is consumed here and handed back only when the release failed.
    match check("hipMemRelease", unsafe { hip::hipMemRelease(chunk.handle) }) {
        Ok(()) => Ok(()),
        Err(e) => Err((chunk, e)),
    }
}

/// Maps `chunk` whole at `address` (not yet accessible: see [`grant`]).
///
/// # Safety
/// `address .. address + chunk.size()` lies inside a live reserved range
/// and overlaps no other mapping.
pub(crate) unsafe fn map(address: u64, chunk: &Chunk) -> Result<(), HipError> {
    let len = bytes("hipMemMap", chunk.size)?;
    // SAFETY: the caller vouches for the range; the handle is live (owned
    // by `chunk`); offset 0 and flags 0 as HIP requires.
    check("hipMemMap", unsafe {
        hip::hipMemMap(address as *mut c_void, len, 0, chunk.handle, 0)
    })
}

/// Makes `size` bytes at `address` readable and writable by `device`.
///
/// # Safety
/// The range is exactly one mapping made by [`map`].
pub(crate) unsafe fn grant(device: i32, address: u64, size: u64) -> Result<(), HipError> {
    let len = bytes("hipMemSetAccess", size)?;
    let access = hip::hipMemAccessDesc {
        location: hip::hipMemLocation {
            type_: hip::hipMemLocationType_hipMemLocationTypeDevice,
            id: device,
        },
        flags: hip::hipMemAccessFlags_hipMemAccessFlagsProtReadWrite,
    };
    // SAFETY: the caller vouches for the mapping; `access` is one valid
    // descriptor that outlives the call.
    check("hipMemSetAccess", unsafe {
        hip::hipMemSetAccess(address as *mut c_void, len, &access, 1)
    })
}

/// Unmaps `size` bytes at `address` (exactly one earlier [`map`]).
///
/// # Safety
/// The range is exactly one mapping made by [`map`], and no work queued on
/// the device still touches it (the driver does not wait for it).
pub(crate) unsafe fn unmap(address: u64, size: u64) -> Result<(), HipError> {
    let len = bytes("hipMemUnmap", size)?;
    // SAFETY: the caller vouches for the range and that nothing touches it.
    check("hipMemUnmap", unsafe {
        hip::hipMemUnmap(address as *mut c_void, len)
    })
}
