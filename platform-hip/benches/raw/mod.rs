//! Bare HIP calls for the bench's baselines: a kernel compiled and loaded
//! without streamcore, a stream, device memory, events and copies. Every
//! status is checked; a failure becomes a `String` naming the call.

use std::ffi::{CString, c_char, c_void};
use std::ptr;

use cubecl_hip_sys as hip;

/// Result of a bench step: the error names the call that failed.
pub type R<T> = Result<T, String>;

/// Turns a HIP status into `Ok(())` or an error naming `call`.
pub fn ck(call: &str, status: hip::hipError_t) -> R<()> {
    if status == hip::hipError_t_hipSuccess {
        Ok(())
    } else {
        Err(format!("{call} failed with HIP status {status}"))
    }
}

fn ck_rtc(call: &str, status: hip::hiprtcResult) -> R<()> {
    if status == hip::hiprtcResult_HIPRTC_SUCCESS {
        Ok(())
    } else {
        Err(format!("{call} failed with hiprtc status {status}"))
    }
}

/// A kernel compiled with hiprtc and loaded as a module, by hand.
pub struct RawKernel {
    module: hip::hipModule_t,
    function: hip::hipFunction_t,
}

impl RawKernel {
    /// Compiles `source` and looks up the `extern "C"` entry point `name`.
    pub fn load(source: &str, name: &str) -> R<Self> {
        let text = CString::new(source).map_err(|e| e.to_string())?;
        let cname = CString::new(name).map_err(|e| e.to_string())?;
        let mut program: hip::hiprtcProgram = ptr::null_mut();
        // SAFETY: `program` is a valid out-pointer; both strings are
        // NUL-terminated and outlive the call; no headers (count 0, nulls).
        ck_rtc("hiprtcCreateProgram", unsafe {
            hip::hiprtcCreateProgram(
                &mut program,
                text.as_ptr(),
                cname.as_ptr(),
                0,
                ptr::null(),
                ptr::null(),
            )
        })?;
        let code = Self::compile(program);
        // SAFETY: the program is live and destroyed exactly once, here.
        let _ = unsafe { hip::hiprtcDestroyProgram(&mut program) };
        let code = code?;
        let mut module: hip::hipModule_t = ptr::null_mut();
        // SAFETY: `module` is a valid out-pointer; `code` is the whole image
        // hiprtc produced and outlives the call.
        ck("hipModuleLoadData", unsafe {
            hip::hipModuleLoadData(&mut module, code.as_ptr().cast::<c_void>())
        })?;
        let mut kernel = Self {
            module,
            function: ptr::null_mut(),
        };
        // SAFETY: the module is live; `function` is a valid out-pointer and
        // `cname` NUL-terminated.
        ck("hipModuleGetFunction", unsafe {
            hip::hipModuleGetFunction(&mut kernel.function, kernel.module, cname.as_ptr())
        })?;
        Ok(kernel)
    }

    fn compile(program: hip::hiprtcProgram) -> R<Vec<u8>> {
        // SAFETY: the program is live; no options (count 0, null array).
        ck_rtc("hiprtcCompileProgram", unsafe {
            hip::hiprtcCompileProgram(program, 0, ptr::null())
        })?;
        let mut size = 0usize;
        // SAFETY: the program is live and compiled; `size` is a valid
        // out-pointer.
        ck_rtc("hiprtcGetCodeSize", unsafe {
            hip::hiprtcGetCodeSize(program, &mut size)
        })?;
        let mut code = vec![0u8; size];
        // SAFETY: `code` has the `size` bytes hiprtc just reported.
        ck_rtc("hiprtcGetCode", unsafe {
            hip::hiprtcGetCode(program, code.as_mut_ptr().cast::<c_char>())
        })?;
        Ok(code)
    }

    /// Queues one launch of `blocks` x 256 threads on `stream`, passing each
    /// of `pointers` as one pointer argument, in order.
    pub fn launch(&self, stream: &RawStream, blocks: u32, pointers: &[u64]) -> R<()> {
        let mut values: [*mut c_void; 8] = [ptr::null_mut(); 8];
        let mut params: [*mut c_void; 8] = [ptr::null_mut(); 8];
        let n = pointers.len().min(8);
        for i in 0..n {
            values[i] = pointers[i] as *mut c_void;
            params[i] = ptr::from_mut(&mut values[i]).cast::<c_void>();
        }
        // SAFETY: the function belongs to the live module owned by `self`;
        // the stream is live. `params` holds one pointer per kernel argument,
        // each pointing at a pointer-sized slot of `values`, both alive until
        // the call returns (HIP copies argument values at launch); `extra`
        // is null. The device addresses came from `hipMalloc` and are only
        // dereferenced by the device, inside the buffers' sizes.
        ck("hipModuleLaunchKernel", unsafe {
            hip::hipModuleLaunchKernel(
                self.function,
                blocks,
                1,
                1,
                256,
                1,
                1,
                0,
                stream.0,
                params.as_mut_ptr(),
                ptr::null_mut(),
            )
        })
    }
}

// SAFETY: a module and its function are process-wide HIP handles: any host
// thread may launch them (the runtime serializes what it must), and the
// bench only launches them, never unloads them while another thread may
// (the module is unloaded in `drop`, which needs ownership).
unsafe impl Send for RawKernel {}
// SAFETY: as for `Send`; `launch` takes `&self` and mutates nothing of it.
unsafe impl Sync for RawKernel {}

impl Drop for RawKernel {
    fn drop(&mut self) {
        // SAFETY: the module is live, owned here, unloaded exactly once.
        let _ = unsafe { hip::hipModuleUnload(self.module) };
    }
}

/// A non-blocking stream.
pub struct RawStream(pub hip::hipStream_t);

impl RawStream {
    /// Creates a non-blocking stream on the current device.
    pub fn new() -> R<Self> {
        let mut raw: hip::hipStream_t = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the flag is HIP's.
        ck("hipStreamCreateWithFlags", unsafe {
            hip::hipStreamCreateWithFlags(&mut raw, hip::hipStreamNonBlocking)
        })?;
        Ok(Self(raw))
    }

    /// Blocks until everything queued on the stream has completed.
    pub fn sync(&self) -> R<()> {
        // SAFETY: the stream is live.
        ck("hipStreamSynchronize", unsafe {
            hip::hipStreamSynchronize(self.0)
        })
    }

    /// Makes later work on this stream wait for `event`.
    pub fn wait(&self, event: &RawEvent) -> R<()> {
        // SAFETY: both handles are live; flags 0.
        ck("hipStreamWaitEvent", unsafe {
            hip::hipStreamWaitEvent(self.0, event.0, 0)
        })
    }
}

// SAFETY: a HIP stream may be used from any host thread (the runtime makes
// its calls on one stream from several threads safe); it is destroyed only
// in `drop`, which needs ownership.
unsafe impl Send for RawStream {}
// SAFETY: as for `Send`; every method takes `&self` and only queues work
// on the stream or waits for it.
unsafe impl Sync for RawStream {}

impl Drop for RawStream {
    fn drop(&mut self) {
        // SAFETY: the stream is live, owned here, destroyed exactly once.
        let _ = unsafe { hip::hipStreamDestroy(self.0) };
    }
}

/// An event with timing disabled.
pub struct RawEvent(hip::hipEvent_t);

impl RawEvent {
    /// Creates an event.
    pub fn new() -> R<Self> {
        let mut raw: hip::hipEvent_t = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the flag is HIP's.
        ck("hipEventCreateWithFlags", unsafe {
            hip::hipEventCreateWithFlags(&mut raw, hip::hipEventDisableTiming)
        })?;
        Ok(Self(raw))
    }

    /// Records the event on `stream`.
    pub fn record(&self, stream: &RawStream) -> R<()> {
        // SAFETY: both handles are live.
        ck("hipEventRecord", unsafe {
            hip::hipEventRecord(self.0, stream.0)
        })
    }
}

impl RawEvent {
    /// Whether the event has passed (`hipEventQuery`).
    pub fn query(&self) -> R<bool> {
        // SAFETY: the event is live; the call does not block.
        let status = unsafe { hip::hipEventQuery(self.0) };
        if status == hip::hipError_t_hipErrorNotReady {
            return Ok(false);
        }
        ck("hipEventQuery", status).map(|()| true)
    }
}

impl Drop for RawEvent {
    fn drop(&mut self) {
        // SAFETY: the event is live, owned here, destroyed exactly once.
        let _ = unsafe { hip::hipEventDestroy(self.0) };
    }
}

/// Device memory from `hipMalloc`, freed on drop.
pub struct RawBuffer {
    /// The device address.
    pub address: u64,
    /// Size in bytes.
    pub bytes: usize,
}

impl RawBuffer {
    /// `hipMalloc`s `bytes` bytes.
    pub fn new(bytes: usize) -> R<Self> {
        Ok(Self {
            address: malloc(bytes)?,
            bytes,
        })
    }

    /// Copies `data` (at most the buffer's size) in, and waits.
    pub fn upload(&self, stream: &RawStream, data: &[u8]) -> R<()> {
        let len = data.len().min(self.bytes);
        // SAFETY: the destination is this live buffer and `len` fits it;
        // the source is `len` readable host bytes that outlive the copy (the
        // stream is synchronized before returning).
        ck("hipMemcpyAsync", unsafe {
            hip::hipMemcpyAsync(
                self.address as *mut c_void,
                data.as_ptr().cast::<c_void>(),
                len,
                hip::hipMemcpyKind_hipMemcpyHostToDevice,
                stream.0,
            )
        })?;
        stream.sync()
    }

    /// Copies the whole buffer out, after the work queued on `stream`.
    pub fn download(&self, stream: &RawStream) -> R<Vec<u8>> {
        let mut out = vec![0u8; self.bytes];
        // SAFETY: the source is this live buffer, `self.bytes` long; the
        // destination has exactly that many writable bytes and outlives the
        // copy (the stream is synchronized before it is read).
        ck("hipMemcpyAsync", unsafe {
            hip::hipMemcpyAsync(
                out.as_mut_ptr().cast::<c_void>(),
                self.address as *const c_void,
                self.bytes,
                hip::hipMemcpyKind_hipMemcpyDeviceToHost,
                stream.0,
            )
        })?;
        stream.sync()?;
        Ok(out)
    }
}

impl Drop for RawBuffer {
    fn drop(&mut self) {
        let _ = free(self.address);
    }
}

/// Copies `bytes` bytes from device address `src` to device address `dst`
/// and waits.
pub fn copy_device(dst: u64, src: u64, bytes: usize, stream: &RawStream) -> R<()> {
    // SAFETY: callers pass two live device allocations of at least `bytes`
    // bytes each; the copy completes before returning.
    ck("hipMemcpyAsync", unsafe {
        hip::hipMemcpyAsync(
            dst as *mut c_void,
            src as *const c_void,
            bytes,
            hip::hipMemcpyKind_hipMemcpyDeviceToDevice,
            stream.0,
        )
    })?;
    stream.sync()
}

/// `hipGetDevice`.
pub fn get_device() -> R<i32> {
    let mut device = -1;
    // SAFETY: `device` is a valid out-pointer.
    ck("hipGetDevice", unsafe { hip::hipGetDevice(&mut device) })?;
    Ok(device)
}

/// `hipSetDevice`.
pub fn set_device(device: i32) -> R<()> {
    // SAFETY: the ordinal is passed by value; callers pass one that exists.
    ck("hipSetDevice", unsafe { hip::hipSetDevice(device) })
}

/// `hipMalloc`.
pub fn malloc(bytes: usize) -> R<u64> {
    let mut address: *mut c_void = ptr::null_mut();
    // SAFETY: `address` is a valid out-pointer; `bytes` is non-zero.
    ck("hipMalloc", unsafe { hip::hipMalloc(&mut address, bytes) })?;
    Ok(address as u64)
}

/// `hipFree` of an address `malloc` returned and not freed since.
pub fn free(address: u64) -> R<()> {
    // SAFETY: callers pass an address from `hipMalloc`, freed once.
    ck("hipFree", unsafe { hip::hipFree(address as *mut c_void) })
}

/// `hipMallocAsync` on `stream`.
pub fn malloc_async(bytes: usize, stream: &RawStream) -> R<u64> {
    let mut address: *mut c_void = ptr::null_mut();
    // SAFETY: `address` is a valid out-pointer; `bytes` is non-zero; the
    // stream is live.
    ck("hipMallocAsync", unsafe {
        hip::hipMallocAsync(&mut address, bytes, stream.0)
    })?;
    Ok(address as u64)
}

/// `hipFreeAsync` on `stream` of an address `malloc_async` returned.
pub fn free_async(address: u64, stream: &RawStream) -> R<()> {
    // SAFETY: callers pass an address from `hipMallocAsync`, freed once;
    // the stream is live.
    ck("hipFreeAsync", unsafe {
        hip::hipFreeAsync(address as *mut c_void, stream.0)
    })
}
