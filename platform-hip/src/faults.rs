//! Driver faults on demand, for tests of failure paths on a real device.
//!
//! The HIP-on-CUDA shim (`platform-hip/nvidia/`) exports one function that
//! is not HIP, `hipOnCudaFailNext(call, status)`: the next call of the
//! entry point named `call` returns `status` without reaching the driver
//! (`hipStreamEndCapture` still ends the capture, as the driver does with
//! one it invalidated). [`fail_next`] finds it in the loaded runtime; a real
//! ROCm has no such function, and the answer is then a typed
//! [`ErrorKind::NotSupported`], so a test can skip. [`taken`] counts the
//! faults calls have taken, so a test can tell that the call it meant took
//! its fault (and that none is left pending for a later one).
//!
//! Faults are process-wide: one may be pending per entry point, and the
//! next call of that entry point from any thread takes it.

use std::ffi::{CString, c_char};
use std::sync::OnceLock;

use libloading::Library;
use streamcore::platform::ErrorKind;

use crate::error::HipError;

/// The shim's `hipOnCudaFailNext`.
type FailNext = unsafe extern "C" fn(*const c_char, i32) -> i32;
/// The shim's `hipOnCudaFaultsTaken`.
type FaultsTaken = unsafe extern "C" fn() -> u64;

/// The shim's two functions.
#[derive(Copy, Clone)]
struct Switch {
    fail_next: FailNext,
    taken: FaultsTaken,
}

/// The runtime library and its fault switch, looked up once per process;
/// `Err`: why there is none.
static SWITCH: OnceLock<Result<(Library, Switch), String>> = OnceLock::new();

const CALL: &str = "hipOnCudaFailNext";

/// Makes the next call of the HIP entry point `call` (`"hipEventRecord"`,
/// `"hipMemcpyAsync"`, `"hipModuleLaunchKernel"`, …; the list is in
/// `platform-hip/nvidia/hip_faults.c`) return `status` without reaching the
/// driver, once.
///
/// Errors: [`ErrorKind::NotSupported`] when the loaded runtime injects no
/// faults (anything but the HIP-on-CUDA shim) or cannot be loaded;
/// [`ErrorKind::InvalidValue`] when the shim refuses the request (an entry
/// point it cannot fault, a name with a NUL byte, or status 0, which is
/// success).
pub fn fail_next(call: &str, status: i32) -> Result<(), HipError> {
    let fail = switch()?.fail_next;
    let name = CString::new(call).map_err(|_| HipError::invalid(CALL, "a NUL byte in the name"))?;
    // SAFETY: `fail` is `hipOnCudaFailNext(const char *, int) -> int` of
    // the shim (`nvidia/hip_faults.c`), resolved from a library `SWITCH`
    // keeps loaded for the rest of the process; `name` is NUL-terminated
    // and outlives the call, which only reads it.
    let answer = unsafe { fail(name.as_ptr(), status) };
    if answer == 0 {
        Ok(())
    } else {
        Err(HipError::invalid(
            CALL,
            "the shim cannot fault this entry point with this status",
        ))
    }
}

/// How many faults calls have taken so far in this process (from any
/// thread): one more after each call that took a fault [`fail_next`]
/// asked for. Errors as [`fail_next`]'s when the runtime injects none.
pub fn taken() -> Result<u64, HipError> {
    let taken = switch()?.taken;
    // SAFETY: `taken` is `hipOnCudaFaultsTaken(void) -> unsigned long
    // long` of the shim, resolved from a library `SWITCH` keeps loaded; it
    // only reads a counter.
    Ok(unsafe { taken() })
}

/// A HIP status of kind `kind` (as [`kind_of_hip_code`](crate::kind_of_hip_code)
/// classifies it) that a fault can return and leave the device usable:
/// `hipErrorOutOfMemory`, `hipErrorInvalidValue`,
/// `hipErrorLaunchOutOfResources` (a kernel's), `hipErrorUnknown` (other);
/// `None` for the kinds whose statuses end the context or name a capture.
pub const fn status_of(kind: ErrorKind) -> Option<i32> {
    match kind {
        ErrorKind::OutOfMemory => Some(2),
        ErrorKind::InvalidValue => Some(1),
        ErrorKind::Kernel => Some(701),
        ErrorKind::Other => Some(999),
        _ => None,
    }
}

/// Whether the loaded runtime injects faults ([`fail_next`] can work).
pub fn available() -> bool {
    switch().is_ok()
}

fn switch() -> Result<Switch, HipError> {
    SWITCH
        .get_or_init(|| {
            let (lib, path) = crate::runtime::open("amdhip64")?;
            let absent = |_| format!("{path} injects no faults (only the HIP-on-CUDA shim does)");
            // SAFETY: the symbols' types are the shim's declarations of
            // `hipOnCudaFailNext` and `hipOnCudaFaultsTaken`; the library
            // stays loaded in `SWITCH` for as long as the pointers are used.
            let switch = unsafe {
                Switch {
                    fail_next: *lib
                        .get::<FailNext>(b"hipOnCudaFailNext\0")
                        .map_err(absent)?,
                    taken: *lib
                        .get::<FaultsTaken>(b"hipOnCudaFaultsTaken\0")
                        .map_err(absent)?,
                }
            };
            Ok((lib, switch))
        })
        .as_ref()
        .map(|(_, switch)| *switch)
        .map_err(|why| {
            HipError::platform(
                CALL,
                ErrorKind::NotSupported,
                None,
                "no fault injection",
                why,
            )
        })
}
