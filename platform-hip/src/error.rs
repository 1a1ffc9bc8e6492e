//! The platform's error: which call failed, the HIP status it returned, that
//! status's `hipGetErrorName` text, and its [`ErrorKind`].

use std::ffi::CStr;
use std::fmt;

use cubecl_hip_sys as hip;
use streamcore::platform::{ErrorKind, PlatformError};

/// Who produced an error.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Origin {
    /// A HIP runtime call returned a status other than `hipSuccess`.
    Hip,
    /// A hiprtc call returned a status other than `HIPRTC_SUCCESS`.
    Hiprtc,
    /// The HIP runtime libraries could not be loaded.
    Loader,
    /// This crate refused the operation before calling HIP (a bad argument,
    /// a host synchronization during a capture); the status, when present,
    /// is the one HIP gives for the same misuse.
    Platform,
}

/// A failed platform operation.
///
/// Carries the name of the call that failed, the raw status it returned (HIP
/// or hiprtc numbering, see [`HipError::origin`]), the status's name as the
/// runtime spells it (`hipGetErrorName` / `hiprtcGetErrorString`), and an
/// optional detail such as a compiler log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HipError {
    call: &'static str,
    origin: Origin,
    status: Option<u32>,
    name: &'static str,
    kind: ErrorKind,
    detail: Option<Box<str>>,
}

impl HipError {
    /// An error from a HIP runtime call that returned `status`.
    ///
    /// Must only be called once the runtime is known to be loaded (a
    /// [`crate::HipPlatform`] exists), since it asks the runtime for the
    /// status's name.
    pub(crate) fn hip(call: &'static str, status: hip::hipError_t) -> Self {
        Self {
            call,
            origin: Origin::Hip,
            status: Some(status),
            name: hip_error_name(status),
            kind: kind_of_hip_code(status),
            detail: None,
        }
    }

    /// An error from a hiprtc call that returned `status`.
    pub(crate) fn hiprtc(call: &'static str, status: hip::hiprtcResult) -> Self {
        Self {
            call,
            origin: Origin::Hiprtc,
            status: Some(status),
            name: hiprtc_error_name(status),
            kind: ErrorKind::Kernel,
            detail: None,
        }
    }

    /// The runtime libraries could not be loaded.
    pub(crate) fn not_loaded(detail: &str) -> Self {
        // A runtime that loaded but lacks entry points is named so.
        let (name, detail) = match detail.strip_prefix(crate::runtime::INCOMPLETE) {
            Some(rest) => ("runtime incomplete", rest),
            None => ("runtime not found", detail),
        };
        Self {
            call: "load libamdhip64/libhiprtc",
            origin: Origin::Loader,
            status: None,
            name,
            kind: ErrorKind::NotAvailable,
            detail: Some(detail.into()),
        }
    }

    /// An error this crate raises itself, before or instead of a HIP call.
    pub(crate) fn platform(
        call: &'static str,
        kind: ErrorKind,
        status: Option<u32>,
        name: &'static str,
        detail: &str,
    ) -> Self {
        Self {
            call,
            origin: Origin::Platform,
            status,
            name,
            kind,
            detail: Some(detail.into()),
        }
    }

    /// A bad argument caught by this crate.
    pub(crate) fn invalid(call: &'static str, detail: &str) -> Self {
        Self::platform(
            call,
            ErrorKind::InvalidValue,
            Some(hip::hipError_t_hipErrorInvalidValue),
            "hipErrorInvalidValue",
            detail,
        )
    }

    /// Attaches a detail (a compiler log, the kernel's name).
    pub(crate) fn with_detail(mut self, detail: &str) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Reclassifies an error raised while building a kernel: anything that is
    /// not a resource or device problem is a [`ErrorKind::Kernel`] failure.
    pub(crate) fn in_kernel_context(mut self) -> Self {
        if matches!(self.kind, ErrorKind::InvalidValue | ErrorKind::Other) {
            self.kind = ErrorKind::Kernel;
        }
        self
    }

    /// The name of the call that failed (`hipMalloc`, `hiprtcCompileProgram`, …).
    pub fn call(&self) -> &'static str {
        self.call
    }

    /// Who produced the error.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The raw status number, if there is one (HIP numbering for
    /// [`Origin::Hip`] and [`Origin::Platform`], hiprtc numbering for
    /// [`Origin::Hiprtc`]).
    pub fn status(&self) -> Option<u32> {
        self.status
    }

    /// The status's name as the runtime spells it (`hipErrorOutOfMemory`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Extra text: a compiler log, the loader's message, the bad argument.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }
}

impl fmt::Display for HipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, self.name)?;
        if let Some(status) = self.status {
            write!(f, " ({status})")?;
        }
        write!(f, " [{:?}]", self.kind)?;
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

impl core::error::Error for HipError {}

impl PlatformError for HipError {
    fn kind(&self) -> ErrorKind {
        self.kind
    }
}

/// Turns a HIP status into `Ok(())` or a typed error naming `call`.
pub(crate) fn check(call: &'static str, status: hip::hipError_t) -> Result<(), HipError> {
    if status == hip::hipError_t_hipSuccess {
        Ok(())
    } else {
        Err(HipError::hip(call, status))
    }
}

/// Turns a hiprtc status into `Ok(())` or a typed error naming `call`.
pub(crate) fn check_rtc(call: &'static str, status: hip::hiprtcResult) -> Result<(), HipError> {
    if status == hip::hiprtcResult_HIPRTC_SUCCESS {
        Ok(())
    } else {
        Err(HipError::hiprtc(call, status))
    }
}

/// Classifies a HIP status.
pub fn kind_of_hip_code(status: u32) -> ErrorKind {
    match status {
        // hipErrorOutOfMemory
        2 => ErrorKind::OutOfMemory,
        // NotInitialized, InsufficientDriver, NoDevice, InvalidDevice
        3 | 35 | 100 | 101 => ErrorKind::NotAvailable,
        // Deinitialized, PriorLaunchFailure, ECCNotCorrectable, IllegalAddress,
        // LaunchTimeOut, ContextIsDestroyed, Assert, LaunchFailure: the
        // context accepts no more work.
        4 | 53 | 214 | 700 | 702 | 709 | 710 | 719 => ErrorKind::DeviceLost,
        // InvalidDeviceFunction, InvalidImage, NoBinaryForGpu,
        // InvalidKernelFile, InvalidSource, FileNotFound,
        // SharedObjectSymbolNotFound, SharedObjectInitFailed,
        // LaunchOutOfResources, CooperativeLaunchTooLarge
        98 | 200 | 209 | 218 | 300..=303 | 701 | 720 => ErrorKind::Kernel,
        // InvalidValue, InvalidConfiguration, InvalidPitchValue,
        // InvalidSymbol, InvalidDevicePointer, InvalidMemcpyDirection,
        // InvalidHandle
        1 | 9 | 12 | 13 | 17 | 21 | 400 => ErrorKind::InvalidValue,
        // StreamCaptureUnsupported, StreamCaptureImplicit, CapturedEvent,
        // StreamCaptureWrongThread
        900 | 906..=908 => ErrorKind::CaptureUnsupported,
        // StreamCaptureInvalidated, Merge, Unmatched, Unjoined, Isolation
        901..=905 => ErrorKind::CaptureInvalidated,
        _ => ErrorKind::Other,
    }
}

/// The runtime's name for a HIP status.
fn hip_error_name(status: hip::hipError_t) -> &'static str {
    // SAFETY: `hipGetErrorName` takes any status by value and returns a
    // pointer to a NUL-terminated string or null. Callers construct HIP
    // errors only after the runtime loaded (see `HipError::hip`).
    let ptr = unsafe { hip::hipGetErrorName(status) };
    static_c_str(ptr).unwrap_or("hipErrorUnknown")
}

/// The runtime's name for a hiprtc status.
fn hiprtc_error_name(status: hip::hiprtcResult) -> &'static str {
    // SAFETY: as for `hipGetErrorName`: any status by value, a static
    // NUL-terminated string or null back.
    let ptr = unsafe { hip::hiprtcGetErrorString(status) };
    static_c_str(ptr).unwrap_or("HIPRTC_ERROR_UNKNOWN")
}

/// Borrows a C string the runtime owns for the life of the process.
fn static_c_str(ptr: *const core::ffi::c_char) -> Option<&'static str> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` is non-null and points to a NUL-terminated string that
    // the runtime returns from a table of string literals. The runtime
    // libraries are loaded once into a process-wide static and never
    // unloaded, so the string lives for `'static` and is never written.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_classify_as_documented() {
        assert_eq!(kind_of_hip_code(2), ErrorKind::OutOfMemory);
        assert_eq!(kind_of_hip_code(100), ErrorKind::NotAvailable);
        assert_eq!(kind_of_hip_code(35), ErrorKind::NotAvailable);
        assert_eq!(kind_of_hip_code(700), ErrorKind::DeviceLost);
        assert_eq!(kind_of_hip_code(719), ErrorKind::DeviceLost);
        assert_eq!(kind_of_hip_code(900), ErrorKind::CaptureUnsupported);
        assert_eq!(kind_of_hip_code(907), ErrorKind::CaptureUnsupported);
        assert_eq!(kind_of_hip_code(901), ErrorKind::CaptureInvalidated);
        assert_eq!(kind_of_hip_code(904), ErrorKind::CaptureInvalidated);
        assert_eq!(kind_of_hip_code(218), ErrorKind::Kernel);
        assert_eq!(kind_of_hip_code(1), ErrorKind::InvalidValue);
        assert_eq!(kind_of_hip_code(999), ErrorKind::Other);
        assert_eq!(kind_of_hip_code(600), ErrorKind::Other);
    }

    #[test]
    fn display_names_call_status_and_kind() {
        let e = HipError::platform(
            "hipEventSynchronize",
            ErrorKind::CaptureUnsupported,
            Some(900),
            "hipErrorStreamCaptureUnsupported",
            "a stream is capturing",
        );
        assert_eq!(
            e.to_string(),
            "hipEventSynchronize failed: hipErrorStreamCaptureUnsupported (900) \
             [CaptureUnsupported]: a stream is capturing"
        );
        assert_eq!(e.kind(), ErrorKind::CaptureUnsupported);
        assert_eq!(e.origin(), Origin::Platform);
    }

    #[test]
    fn kernel_context_reclassifies_only_generic_kinds() {
        let generic = HipError::invalid("hipModuleGetFunction", "x").in_kernel_context();
        assert_eq!(generic.kind(), ErrorKind::Kernel);
        let oom = HipError::platform(
            "hipModuleLoadData",
            ErrorKind::OutOfMemory,
            Some(2),
            "n",
            "",
        )
        .in_kernel_context();
        assert_eq!(oom.kind(), ErrorKind::OutOfMemory);
    }
}
