//! Kernels: compiled from source with hiprtc, loaded as modules, launched
//! with `hipModuleLaunchKernel`.
//!
//! # Launch ABI
//!
//! A kernel takes exactly one pointer argument per [`Binding`], in the order
//! of the `bindings` slice, and nothing else:
//!
//! ```text
//! extern "C" __global__ void name(T0* binding0, T1* binding1, ...);
//! ```
//!
//! Each argument is the device address of the binding's first byte (the
//! page id, which is the page's device address, plus the range's offset).
//! Sizes, shapes and scalars travel in a binding of their own (an info
//! buffer), never as by-value arguments. The entry point must be
//! `extern "C"` so its symbol is the [`KernelSource::name`] unmangled.
//!
//! # What the platform checks, and what the kernel promises
//!
//! A launch passes exactly [`KernelSource::bindings`] arguments (any other
//! count is refused, so no parameter is ever left unset), and every binding
//! must lie inside a live device page of the platform (refused otherwise).
//! The kernel's source is trusted code, like any foreign function: it must
//! take exactly the declared number of pointer parameters and touch only the
//! bytes of its bindings. The platform cannot check what compiled code does
//! with the addresses it is given.

use std::ffi::{CString, c_char, c_void};
use std::ptr;
use std::vec::Vec;

use cubecl_hip_sys as hip;
use streamcore::platform::{Binding, KernelSource, LaunchDims};

use crate::error::{HipError, check, check_rtc};
use crate::shared::{Shared, ensure_current};
use crate::stream::HipStream;

/// The most bindings one launch may pass (the argument array lives on the
/// stack, so a launch allocates nothing).
pub const MAX_BINDINGS: usize = 64;

/// Launches with at most this many bindings use arrays of this size.
const SMALL: usize = 8;

/// The call a launch's errors name.
const CALL: &str = "hipModuleLaunchKernel";

/// A loaded kernel: the module and the entry point inside it. Dropping it
/// unloads the module; graphs that launch it must be destroyed first.
#[derive(Debug)]
pub struct HipKernel {
    module: hip::hipModule_t,
    function: hip::hipFunction_t,
    /// The parameter count declared at load ([`KernelSource::bindings`]).
    bindings: usize,
    /// The device the module was loaded on.
    device: i32,
}

// SAFETY: module and function handles are process-wide objects that HIP lets
// any thread launch; `HipKernel` owns the module and only unloads it in
// `drop`.
unsafe impl Send for HipKernel {}
// SAFETY: the only operation through `&HipKernel` is a launch, which HIP
// allows from several threads at once.
unsafe impl Sync for HipKernel {}

/// A hiprtc program, destroyed exactly once when dropped.
struct Program(hip::hiprtcProgram);

impl Program {
    fn create(source: &CString, name: &CString) -> Result<Self, HipError> {
        let mut raw: hip::hiprtcProgram = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; `source` and `name` are
        // NUL-terminated strings that outlive the call; no headers are passed
        // (count 0, null arrays).
        let status = unsafe {
            hip::hiprtcCreateProgram(
                &mut raw,
                source.as_ptr(),
                name.as_ptr(),
                0,
                ptr::null(),
                ptr::null(),
            )
        };
        check_rtc("hiprtcCreateProgram", status)?;
        Ok(Self(raw))
    }

    fn compile(&self) -> Result<(), HipError> {
        // SAFETY: the program is live; no options (count 0, null array):
        // hiprtc targets the current device by default.
        let status = unsafe { hip::hiprtcCompileProgram(self.0, 0, ptr::null()) };
        check_rtc("hiprtcCompileProgram", status).map_err(|e| e.with_detail(&self.log()))
    }

    /// The compiler's log, or a note that it could not be read.
    fn log(&self) -> String {
        let mut size = 0usize;
        // SAFETY: the program is live; `size` is a valid out-pointer.
        let status = unsafe { hip::hiprtcGetProgramLogSize(self.0, &mut size) };
        if status != hip::hiprtcResult_HIPRTC_SUCCESS || size == 0 {
            return String::from("(no compiler log)");
        }
        let mut log = vec![0u8; size];
        // SAFETY: `log` has the `size` bytes hiprtc just asked for.
        let status = unsafe { hip::hiprtcGetProgramLog(self.0, log.as_mut_ptr().cast::<c_char>()) };
        if status != hip::hiprtcResult_HIPRTC_SUCCESS {
            return String::from("(compiler log unreadable)");
        }
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        String::from_utf8_lossy(&log[..end]).into_owned()
    }

    fn code(&self) -> Result<Vec<u8>, HipError> {
        let mut size = 0usize;
        // SAFETY: the program is live and compiled; `size` is a valid
        // out-pointer.
        check_rtc("hiprtcGetCodeSize", unsafe {
            hip::hiprtcGetCodeSize(self.0, &mut size)
        })?;
        let mut code = vec![0u8; size];
        // SAFETY: `code` has the `size` bytes hiprtc just reported.
        check_rtc("hiprtcGetCode", unsafe {
            hip::hiprtcGetCode(self.0, code.as_mut_ptr().cast::<c_char>())
        })?;
        Ok(code)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program is live and destroyed exactly once, here. A
        // failure cannot be reported from `drop`.
        let _ = unsafe { hip::hiprtcDestroyProgram(&mut self.0) };
    }
}

impl HipKernel {
    /// Compiles `source.source`, loads it and looks up `source.name`.
    pub(crate) fn load(shared: &Shared, source: &KernelSource<'_>) -> Result<Self, HipError> {
        if source.bindings > MAX_BINDINGS {
            return Err(HipError::invalid(
                "hipModuleLoadData",
                "the kernel declares more bindings than MAX_BINDINGS",
            )
            .in_kernel_context());
        }
        let text = CString::new(source.source).map_err(|_| {
            HipError::invalid("hiprtcCreateProgram", "source contains a NUL byte")
                .in_kernel_context()
        })?;
        let name = CString::new(source.name).map_err(|_| {
            HipError::invalid("hipModuleGetFunction", "name contains a NUL byte")
                .in_kernel_context()
        })?;
        shared.make_current()?;
        let program = Program::create(&text, &name)?;
        program.compile().map_err(|e| e.in_kernel_context())?;
        let code = program.code()?;
        drop(program);

        let mut module: hip::hipModule_t = ptr::null_mut();
        // SAFETY: `module` is a valid out-pointer; `code` is the complete
        // image hiprtc produced and outlives the call (HIP copies it).
        let status = unsafe { hip::hipModuleLoadData(&mut module, code.as_ptr().cast::<c_void>()) };
        check("hipModuleLoadData", status).map_err(|e| e.in_kernel_context())?;
        let mut kernel = Self {
            module,
            function: ptr::null_mut(),
            bindings: source.bindings,
            device: shared.device,
        };
        // SAFETY: the module is live; `function` is a valid out-pointer and
        // `name` a NUL-terminated string.
        let status = unsafe {
            hip::hipModuleGetFunction(&mut kernel.function, kernel.module, name.as_ptr())
        };
        check("hipModuleGetFunction", status)
            .map_err(|e| e.with_detail(source.name).in_kernel_context())?;
        Ok(kernel)
    }

    /// The number of bindings every launch passes, as declared at load.
    pub fn bindings(&self) -> usize {
        self.bindings
    }

    /// Queues one launch on `stream`; see the module docs for the ABI and
    /// what is checked.
    pub(crate) fn launch(
        &self,
        shared: &Shared,
        stream: &mut HipStream,
        dims: LaunchDims,
        bindings: &[Binding],
    ) -> Result<(), HipError> {
        if bindings.len() != self.bindings {
            return Err(HipError::invalid(
                CALL,
                "the binding count differs from the kernel's declared count",
            ));
        }
        if self.device != shared.device {
            return Err(HipError::invalid(CALL, "a kernel loaded on another device"));
        }
        stream.check_owner(shared, CALL)?;
        // Argument arrays on the stack, sized for the common case so a
        // launch initializes little (and allocates nothing).
        if bindings.len() <= SMALL {
            self.queue::<SMALL>(shared, stream, dims, bindings)
        } else {
            self.queue::<MAX_BINDINGS>(shared, stream, dims, bindings)
        }
    }

    /// The launch itself, with argument arrays of `N >= bindings.len()`
    /// slots (the count was checked against the declaration, which is at
    /// most `MAX_BINDINGS`).
    #[inline]
    fn queue<const N: usize>(
        &self,
        shared: &Shared,
        stream: &mut HipStream,
        dims: LaunchDims,
        bindings: &[Binding],
    ) -> Result<(), HipError> {
        debug_assert!(bindings.len() <= N);
        // The view keeps the pages from being released until the launch is
        // queued.
        let pages = shared.pages.device();
        let mut pointers: [*mut c_void; N] = [ptr::null_mut(); N];
        pages.bindings(CALL, bindings, &mut pointers)?;
        stream.note_bindings(bindings);
        shared.make_current()?;
        let mut params: [*mut c_void; N] = [ptr::null_mut(); N];
        for (param, pointer) in params
            .iter_mut()
            .zip(pointers.iter_mut())
            .take(bindings.len())
        {
            *param = ptr::from_mut(pointer).cast::<c_void>();
        }
        let [gx, gy, gz] = dims.grid;
        let [bx, by, bz] = dims.block;
        // SAFETY: the function belongs to a live module owned by `self`,
        // loaded on this platform's device, which is current; the stream is
        // live and belongs to this platform. The kernel declared
        // `self.bindings` parameters and exactly that many bindings were
        // given (at most `N`), each checked to lie inside a live device page
        // of this platform, which `pages` keeps from being released (and
        // freed) until the call returns; `params` holds a pointer to each
        // argument's pointer-sized slot in `pointers`, both alive until the
        // call returns (HIP copies argument values at launch). `extra` is
        // null. The device addresses are only dereferenced by the device, by
        // a kernel whose source promises to stay inside its bindings (the
        // module docs).
        let status = unsafe {
            hip::hipModuleLaunchKernel(
                self.function,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                dims.shared_mem_bytes,
                stream.raw,
                params.as_mut_ptr(),
                ptr::null_mut(),
            )
        };
        drop(pages);
        check(CALL, status)
    }
}

impl Drop for HipKernel {
    fn drop(&mut self) {
        // A module is unloaded from its own device's context. A failure
        // cannot be reported from `drop`; the unload then fails harmlessly.
        let _ = ensure_current(self.device);
        // SAFETY: the module is live, owned by `self`, unloaded exactly once
        // here. A failure cannot be reported from `drop`.
        let _ = unsafe { hip::hipModuleUnload(self.module) };
    }
}
