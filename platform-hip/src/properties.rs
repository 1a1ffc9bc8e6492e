//! Device properties read from the driver.

use std::ffi::c_char;

use cubecl_hip_sys as hip;
use streamcore::platform::DeviceProperties;

use crate::error::{HipError, check};
use crate::shared::Shared;
use crate::storage::DEVICE_ALIGNMENT;

/// Reads what the core needs to know about the current device.
pub(crate) fn read(shared: &Shared) -> Result<DeviceProperties, HipError> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: both are valid out-pointers; the device is current.
    check("hipMemGetInfo", unsafe {
        hip::hipMemGetInfo(&mut free, &mut total)
    })?;
    let mut integrated = 0i32;
    // SAFETY: `integrated` is a valid out-pointer; the attribute is one HIP
    // defines and the ordinal was checked by the constructor.
    check("hipDeviceGetAttribute", unsafe {
        hip::hipDeviceGetAttribute(
            &mut integrated,
            hip::hipDeviceAttribute_t_hipDeviceAttributeIntegrated,
            shared.device,
        )
    })?;
    let total = total as u64;
    Ok(DeviceProperties {
        total_memory: total,
        max_page_size: max_page_size(total),
        alignment: DEVICE_ALIGNMENT,
        integrated: integrated != 0,
    })
}

/// A quarter of the device's memory, rounded down to the alignment (and at
/// least one aligned unit).
pub(crate) fn max_page_size(total: u64) -> u64 {
    ((total / 4) & !(DEVICE_ALIGNMENT - 1)).max(DEVICE_ALIGNMENT)
}

/// The device's marketing name.
pub(crate) fn device_name(shared: &Shared) -> Result<String, HipError> {
    let mut buffer = [0u8; 256];
    // SAFETY: `buffer` has the length passed; HIP writes a NUL-terminated
    // name of at most that many bytes.
    check("hipDeviceGetName", unsafe {
        hip::hipDeviceGetName(
            buffer.as_mut_ptr().cast::<c_char>(),
            buffer.len() as i32,
            shared.device,
        )
    })?;
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    Ok(String::from_utf8_lossy(&buffer[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_page_size_is_an_aligned_quarter() {
        assert_eq!(max_page_size(141 << 30), (141u64 << 30) / 4);
        assert_eq!(max_page_size(1000), 256);
        assert_eq!(max_page_size(0), 256);
        assert_eq!(max_page_size(4 * 1000 + 3) % 256, 0);
    }
}
