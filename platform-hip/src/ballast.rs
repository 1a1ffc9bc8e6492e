//! Ballast: device memory a platform takes and holds so that only a given
//! amount stays free, to reach out-of-memory on a large device quickly.

use std::ffi::c_void;
use std::ptr;

use cubecl_hip_sys as hip;

use crate::error::{HipError, check};
use crate::platform::HipPlatform;
use crate::shared::Shared;

/// The largest single ballast allocation.
const PIECE: u64 = 16 << 30;
/// Ballast is taken in whole units of this size (the driver's 2 MiB).
const UNIT: u64 = 2 << 20;

/// `hipMalloc` allocations held until the platform is dropped.
#[derive(Debug, Default)]
pub(crate) struct Ballast {
    pieces: Vec<u64>,
    bytes: u64,
}

impl Ballast {
    /// Takes device memory until at most `leave` bytes (plus less than one
    /// unit) are free. Fails with the allocation's error when the device
    /// cannot be filled; what was taken is freed again.
    pub(crate) fn fill(shared: &Shared, leave: u64) -> Result<Self, HipError> {
        shared.make_current()?;
        let mut ballast = Ballast::default();
        // The first pass may leave a little (the context grows); a few
        // passes settle it.
        for _ in 0..4 {
            let free = free_bytes()?;
            let mut want = free.saturating_sub(leave) / UNIT * UNIT;
            if want == 0 {
                break;
            }
            while want > 0 {
                let piece = want.min(PIECE);
                let mut address: *mut c_void = ptr::null_mut();
                // SAFETY: `address` is a valid out-pointer; `piece` is
                // non-zero and fits `usize` (at most 16 GiB).
                check("hipMalloc", unsafe {
                    hip::hipMalloc(&mut address, piece as usize)
                })?;
                ballast.pieces.push(address as u64);
                ballast.bytes += piece;
                want -= piece;
            }
        }
        Ok(ballast)
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

fn free_bytes() -> Result<u64, HipError> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: both are valid out-pointers.
    check("hipMemGetInfo", unsafe {
        hip::hipMemGetInfo(&mut free, &mut total)
    })?;
    Ok(free as u64)
}

impl Drop for Ballast {
    fn drop(&mut self) {
        for &address in &self.pieces {
            // SAFETY: each address came from `hipMalloc` and is freed once;
            // no work was ever queued on ballast memory.
            let _ = unsafe { hip::hipFree(address as *mut c_void) };
        }
    }
}

impl HipPlatform {
    /// Fills the device with ballast held until the platform is dropped, so
    /// that about `bytes` stay free: out-of-memory is reached quickly on a
    /// large device. Fails (an error of kind `OutOfMemory` or the driver's)
    /// when the device cannot be filled; the platform is then dropped and
    /// what was taken freed.
    pub fn leave_free(mut self, bytes: u64) -> Result<Self, HipError> {
        let ballast = Ballast::fill(&self.shared, bytes)?;
        self.ballast_bytes += ballast.bytes();
        self.ballast.push(ballast);
        Ok(self)
    }

    /// Bytes of ballast held (see [`HipPlatform::leave_free`]).
    pub fn ballast_bytes(&self) -> u64 {
        self.ballast_bytes
    }
}
