//! The runtime's entry points, checked before the first call.
//!
//! `cubecl-hip-sys` opens `libamdhip64` and `libhiprtc` at run time and
//! resolves each symbol on its first call; a symbol the library lacks
//! (an older or partial runtime, a stub) then ends the process, since the
//! failure happens inside a function that cannot unwind. So the platform
//! opens the libraries first, in the order the bindings search them
//! (`$ROCM_PATH/lib`, `$ROCM_PATH`, `$HIP_PATH/lib`, `$HIP_PATH`, then the
//! system's library path; `lib<name>.so`, `.so.1`, `.so.0` in each), and
//! resolves every symbol it may call. A missing required symbol is a typed
//! error naming it; a missing optional group (virtual memory, graphs, the
//! driver's pool) turns that feature off instead.

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::OnceLock;

use libloading::Library;

use crate::error::HipError;

/// Symbols every platform needs.
const REQUIRED: &[&str] = &[
    "hipInit",
    "hipGetDeviceCount",
    "hipSetDevice",
    "hipDeviceGetAttribute",
    "hipDeviceGetName",
    "hipDeviceSynchronize",
    "hipGetErrorName",
    "hipMemGetInfo",
    "hipMalloc",
    "hipFree",
    "hipHostMalloc",
    "hipHostFree",
    "hipMemcpyAsync",
    "hipEventCreateWithFlags",
    "hipEventDestroy",
    "hipEventQuery",
    "hipEventRecord",
    "hipEventSynchronize",
    "hipStreamCreateWithFlags",
    "hipStreamDestroy",
    "hipStreamSynchronize",
    "hipStreamWaitEvent",
    "hipModuleLoadData",
    "hipModuleUnload",
    "hipModuleGetFunction",
    "hipModuleLaunchKernel",
];

/// The runtime compiler's symbols (in `libhiprtc`), all required.
const COMPILER: &[&str] = &[
    "hiprtcCreateProgram",
    "hiprtcCompileProgram",
    "hiprtcDestroyProgram",
    "hiprtcGetCode",
    "hiprtcGetCodeSize",
    "hiprtcGetErrorString",
    "hiprtcGetProgramLog",
    "hiprtcGetProgramLogSize",
];

/// The virtual-memory calls (`VmmStorage`); without them, `hipMalloc`.
const VIRTUAL_MEMORY: &[&str] = &[
    "hipMemGetAllocationGranularity",
    "hipMemAddressReserve",
    "hipMemAddressFree",
    "hipMemCreate",
    "hipMemRelease",
    "hipMemMap",
    "hipMemUnmap",
    "hipMemSetAccess",
];

/// Graph capture; without it the platform declares no capture.
const GRAPHS: &[&str] = &[
    "hipStreamBeginCapture",
    "hipStreamEndCapture",
    "hipGraphInstantiate",
    "hipGraphLaunch",
    "hipGraphDestroy",
    "hipGraphExecDestroy",
];

/// The driver's stream-ordered pool and the replay's touch
/// (`HipPlatform::pool_alloc`, `pool_free`, `touch`).
const POOL: &[&str] = &["hipMallocAsync", "hipFreeAsync", "hipMemsetAsync"];

/// Which optional groups of entry points the runtime has.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct EntryPoints {
    /// Every virtual-memory call.
    pub(crate) virtual_memory: bool,
    /// Every graph-capture call.
    pub(crate) graphs: bool,
    /// `hipMallocAsync`, `hipFreeAsync` and `hipMemsetAsync`.
    pub(crate) pool: bool,
}

static CHECKED: OnceLock<Result<EntryPoints, String>> = OnceLock::new();

/// The runtime's entry points, checked once per process: an error of kind
/// `NotAvailable` (origin `Loader`) when a library cannot be loaded (with
/// the loader's reasons) or lacks a required symbol (named).
pub(crate) fn entry_points() -> Result<EntryPoints, HipError> {
    CHECKED
        .get_or_init(check)
        .as_ref()
        .copied()
        .map_err(|why| HipError::not_loaded(why))
}

/// The error for a call of an optional group the runtime lacks.
pub(crate) fn lacks(call: &'static str) -> HipError {
    HipError::not_loaded(&format!(
        "the HIP runtime lacks {call} (and the calls that go with it)"
    ))
}

fn check() -> Result<EntryPoints, String> {
    let (hip, hip_path) = open("amdhip64")?;
    let (rtc, rtc_path) = open("hiprtc")?;
    let missing = |lib: &Library, names: &[&str]| -> Vec<String> {
        names
            .iter()
            .filter(|n| !has(lib, n))
            .map(|n| n.to_string())
            .collect()
    };
    let mut lacks = Vec::new();
    for (lib, path, names) in [(&hip, &hip_path, REQUIRED), (&rtc, &rtc_path, COMPILER)] {
        let gone = missing(lib, names);
        match gone.len() {
            0 => {}
            1..=3 => lacks.push(format!("{path} lacks {}", gone.join(", "))),
            n => lacks.push(format!(
                "{path} lacks {} and {} more",
                gone[..3].join(", "),
                n - 3
            )),
        }
    }
    if !lacks.is_empty() {
        return Err(format!(
            "{INCOMPLETE}{} (an older or partial HIP runtime?)",
            lacks.join("; ")
        ));
    }
    Ok(EntryPoints {
        virtual_memory: missing(&hip, VIRTUAL_MEMORY).is_empty(),
        graphs: missing(&hip, GRAPHS).is_empty(),
        pool: missing(&hip, POOL).is_empty(),
    })
}

/// Whether `lib` exports `name`.
fn has(lib: &Library, name: &str) -> bool {
    // SAFETY: the symbol is only looked up, never called or read through:
    // its type here does not matter.
    unsafe { lib.get::<*const c_void>(name.as_bytes()) }.is_ok()
}

/// The first library the bindings would open for `name`, and its path; or
/// every candidate with the loader's reason.
pub(crate) fn open(name: &str) -> Result<(Library, String), String> {
    let files = [
        format!("lib{name}.so"),
        format!("lib{name}.so.1"),
        format!("lib{name}.so.0"),
    ];
    let dirs: Vec<PathBuf> = ["ROCM_PATH", "HIP_PATH"]
        .into_iter()
        .filter_map(std::env::var_os)
        .flat_map(|p| {
            let p = PathBuf::from(p);
            [p.join("lib"), p]
        })
        .collect();
    let candidates = dirs
        .iter()
        .flat_map(|d| files.iter().map(move |f| d.join(f)))
        .chain(files.iter().map(PathBuf::from));
    // The reasons of candidates that exist but did not load (a file that
    // is no library, a wrong architecture); absent ones are only "not
    // found".
    let mut reasons = Vec::new();
    for path in candidates {
        // SAFETY: opening the runtime runs its initializers, as the
        // bindings' own load would; nothing else is assumed of it.
        match unsafe { Library::new(&path) } {
            Ok(lib) => return Ok((lib, path.display().to_string())),
            Err(e) if path.is_file() => {
                let shown = path.display().to_string();
                let why = e.to_string();
                // The loader repeats the path; said once.
                let why = why
                    .strip_prefix(&format!("{shown}: "))
                    .unwrap_or(&why)
                    .to_string();
                reasons.push(format!("{shown}: {why}"));
            }
            Err(_) => {}
        }
    }
    let searched =
        "$ROCM_PATH/lib, $ROCM_PATH, $HIP_PATH/lib, $HIP_PATH or the system library path";
    if reasons.is_empty() {
        Err(format!("lib{name}.so was not found in {searched}"))
    } else {
        Err(format!(
            "lib{name} could not be loaded ({}); searched {searched}",
            reasons.join("; ")
        ))
    }
}

/// How a check's answer starts when the libraries loaded but lack entry
/// points (the error's name says so, not "not found").
pub(crate) const INCOMPLETE: &str = "incomplete runtime: ";
