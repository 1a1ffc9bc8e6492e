//! The driver's own stream-ordered pool (`hipMallocAsync` /
//! `hipFreeAsync` on the device's default pool): the baseline streamcore's
//! pools are measured against, side by side, in the same process. Plus the
//! two calls a trace replay on the device needs: `hipMemsetAsync` into a
//! page and `hipMemGetInfo`.

use std::ffi::c_void;
use std::ptr;

use cubecl_hip_sys as hip;
use streamcore::platform::DeviceRange;

use crate::error::{HipError, check};
use crate::pages::PageUse;
use crate::platform::HipPlatform;
use crate::stream::HipStream;

/// One block from the driver's pool, owned until [`HipPlatform::pool_free`]
/// gives it back (a block dropped without it is leaked, never freed twice).
#[derive(Debug)]
pub struct PoolBlock {
    address: u64,
    size: u64,
}

impl PoolBlock {
    /// The block's device address.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// Its size in bytes, as asked.
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// Free and total device memory as the driver reports them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryInfo {
    /// Bytes free.
    pub free: u64,
    /// Bytes in all.
    pub total: u64,
}

impl MemoryInfo {
    /// Bytes in use (by every process on the device).
    pub fn used(&self) -> u64 {
        self.total.saturating_sub(self.free)
    }
}

impl HipPlatform {
    /// `hipMallocAsync` of `size` bytes on `stream`, from the device's
    /// default pool. Out of memory is an error of kind `OutOfMemory`.
    pub fn pool_alloc(&self, stream: &mut HipStream, size: u64) -> Result<PoolBlock, HipError> {
        self.require_pool("hipMallocAsync")?;
        let bytes = usize::try_from(size.max(1))
            .map_err(|_| HipError::invalid("hipMallocAsync", "size exceeds the address space"))?;
        let mut raw: *mut c_void = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer, `bytes` non-zero, the stream
        // live (owned by `stream`).
        check("hipMallocAsync", unsafe {
            hip::hipMallocAsync(&mut raw, bytes, stream.raw)
        })?;
        Ok(PoolBlock {
            address: raw as u64,
            size,
        })
    }

    /// `hipFreeAsync` of a block on `stream`: the pool may reuse it for
    /// work queued on that stream after this call. On an error the block
    /// is handed back.
    pub fn pool_free(
        &self,
        stream: &mut HipStream,
        block: PoolBlock,
    ) -> Result<(), (PoolBlock, HipError)> {
        if let Err(e) = self.require_pool("hipFreeAsync") {
            return Err((block, e));
        }
        // SAFETY: the block came from `hipMallocAsync` and is freed once
        // (consumed here, handed back only on failure); the stream is live.
        let status = unsafe { hip::hipFreeAsync(block.address as *mut c_void, stream.raw) };
        check("hipFreeAsync", status).map_err(|e| (block, e))
    }

    /// Queues `hipMemsetAsync` of the first `len` bytes of `block` to `byte`.
    pub fn pool_fill(
        &self,
        stream: &mut HipStream,
        block: &PoolBlock,
        len: u64,
        byte: u8,
    ) -> Result<(), HipError> {
        let len = len.min(block.size);
        self.memset(stream, block.address, len, byte)
    }

    /// Queues `hipMemsetAsync` of `range` to `byte` on `stream`; refused
    /// unless the range lies inside a live device page of this platform.
    pub fn fill(
        &self,
        stream: &mut HipStream,
        range: DeviceRange,
        byte: u8,
    ) -> Result<(), HipError> {
        // Held until the call has queued the work (see `pages`).
        let pages = self.shared.pages.device();
        let start = pages.address("hipMemsetAsync", range.page, range.offset, range.len)?;
        stream.note(PageUse::device(range));
        self.memset(stream, start, range.len, byte)
    }

    /// Free and total device memory (`hipMemGetInfo`).
    pub fn memory_info(&self) -> Result<MemoryInfo, HipError> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both are valid out-pointers.
        check("hipMemGetInfo", unsafe {
            hip::hipMemGetInfo(&mut free, &mut total)
        })?;
        Ok(MemoryInfo {
            free: free as u64,
            total: total as u64,
        })
    }

    /// An error naming `call` unless the runtime has the driver's pool
    /// calls (checked once, when the platform was made).
    fn require_pool(&self, call: &'static str) -> Result<(), HipError> {
        if self.entry.pool {
            Ok(())
        } else {
            Err(crate::runtime::lacks(call))
        }
    }

    fn memset(
        &self,
        stream: &mut HipStream,
        start: u64,
        len: u64,
        byte: u8,
    ) -> Result<(), HipError> {
        if len == 0 {
            return Ok(());
        }
        self.require_pool("hipMemsetAsync")?;
        let bytes = usize::try_from(len)
            .map_err(|_| HipError::invalid("hipMemsetAsync", "length exceeds the address space"))?;
        // SAFETY: the stream is live; the range is a device range, only
        // dereferenced by the device (a bad one faults there and is reported as
        // a HIP error, never host memory damage), as for the copies.
        check("hipMemsetAsync", unsafe {
            hip::hipMemsetAsync(start as *mut c_void, i32::from(byte), bytes, stream.raw)
        })
    }
}
