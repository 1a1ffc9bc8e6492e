//! With `ROCM_PATH` pointing at an empty folder (and no system-wide ROCm)
//! the constructor fails with a typed `NotAvailable` error. Runs everywhere,
//! CI included; the runtime is probed in a child process because the loader
//! caches its answer for the life of a process.

use streamcore::platform::PlatformError;
use streamcore_hip::{HipPlatform, faults};

use crate::common::{reports, run_child};
use crate::runner::{Outcome, Skip};

/// Run by `constructor_without_runtime_is_not_available` in a child process.
pub fn child_constructor_without_runtime() -> Outcome {
    match HipPlatform::new() {
        Ok(platform) => println!("CHILD-REPORT constructed {}", platform.device_name()),
        Err(e) => {
            println!(
                "CHILD-REPORT kind={:?} origin={:?} call={}",
                e.kind(),
                e.origin(),
                e.call()
            );
            println!("CHILD-REPORT display {e}");
        }
    }
    // The fault switch, where the runtime has one (the shim), else a
    // typed refusal.
    match faults::fail_next("hipMalloc", 2) {
        Ok(()) => println!("CHILD-REPORT faults armed"),
        Err(e) => println!("CHILD-REPORT faults kind={:?}", e.kind()),
    }
    if let Err(e) = faults::fail_next("hipNoSuchCall", 2) {
        println!("CHILD-REPORT faults refused kind={:?}", e.kind());
    }
    if let Err(e) = faults::fail_next("hip\0Malloc", 2) {
        println!("CHILD-REPORT faults nul kind={:?}", e.kind());
    }
    println!("CHILD-REPORT faults taken={:?}", faults::taken().ok());
    println!("CHILD-REPORT faults available={}", faults::available());
    Ok(())
}

pub fn constructor_without_runtime_is_not_available() -> Outcome {
    let empty =
        std::env::temp_dir().join(format!("streamcore-hip-empty-rocm-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let empty_str = empty.to_str().expect("temp dir is UTF-8");
    let output = run_child(
        "not_available::child_constructor_without_runtime",
        &[("ROCM_PATH", empty_str)],
        &["HIP_PATH"],
    );
    let _ = std::fs::remove_dir_all(&empty);
    let lines = reports(&output);
    assert!(output.status.success(), "child failed: {output:?}");
    if let Some(line) = lines.iter().find(|l| l.starts_with("constructed")) {
        return Err(Skip(format!(
            "a HIP runtime is installed system-wide, an empty ROCM_PATH cannot hide it ({line})"
        )));
    }
    assert!(
        lines
            .iter()
            .any(|l| l == "kind=NotAvailable origin=Loader call=load libamdhip64/libhiprtc"),
        "expected a typed NotAvailable loader error, child said {lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("display ") && l.contains("NotAvailable"))
    );
    assert_reported(
        &lines,
        &[
            "faults kind=NotSupported",
            "faults refused kind=NotSupported",
            "faults taken=None",
            "faults available=false",
        ],
    );
    Ok(())
}

/// A fake runtime in a fresh folder: `lib/libamdhip64.so` and
/// `lib/libhiprtc.so` built by the C compiler from `source` (or, for
/// `None`, empty files); `None` when no C compiler is at hand.
fn fake_runtime(tag: &str, source: Option<&str>) -> Option<std::path::PathBuf> {
    let root = std::env::temp_dir().join(format!("streamcore-hip-{tag}-{}", std::process::id()));
    let lib = root.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    for name in ["libamdhip64.so", "libhiprtc.so"] {
        let out = lib.join(name);
        match source {
            None => std::fs::write(&out, b"").unwrap(),
            Some(code) => {
                let c = root.join("stub.c");
                std::fs::write(&c, code).unwrap();
                // The library must match this process's word size (a
                // 32-bit x86 test on a 64-bit host: `-m32`).
                let mut cc = std::process::Command::new("cc");
                if cfg!(target_arch = "x86") {
                    cc.arg("-m32");
                }
                let built = cc
                    .args(["-shared", "-fPIC", "-o"])
                    .arg(&out)
                    .arg(&c)
                    .status();
                if !built.is_ok_and(|s| s.success()) {
                    let _ = std::fs::remove_dir_all(&root);
                    return None;
                }
            }
        }
    }
    Some(root)
}

/// Asserts that the child reported each of `wanted`, as a whole line.
fn assert_reported(lines: &[String], wanted: &[&str]) {
    for want in wanted {
        assert!(
            lines.iter().any(|l| l == want),
            "{want}: child said {lines:?}"
        );
    }
}

/// The child's report lines with `ROCM_PATH` at `root`.
fn constructor_with(root: &std::path::Path) -> Vec<String> {
    let output = run_child(
        "not_available::child_constructor_without_runtime",
        &[("ROCM_PATH", root.to_str().expect("temp dir is UTF-8"))],
        &["HIP_PATH"],
    );
    let _ = std::fs::remove_dir_all(root);
    assert!(
        output.status.success(),
        "the child did not end cleanly (a missing symbol must be an error, not an abort): {output:?}"
    );
    reports(&output)
}

pub fn a_runtime_lacking_entry_points_is_a_typed_error() -> Outcome {
    // Loads, but exports none of HIP's symbols: the bindings would abort
    // the process at `hipInit`. Then one with only the first few calls.
    let cases = [
        (
            "nosym",
            "int streamcore_stub(void) { return 0; }\n",
            "hipInit",
        ),
        (
            "partial",
            "int hipInit(unsigned f) { return 0; }\n\
             int hipGetDeviceCount(int *n) { *n = 1; return 0; }\n\
             int hipSetDevice(int d) { return 0; }\n",
            "hipDeviceGetAttribute",
        ),
    ];
    for (tag, source, named) in cases {
        let Some(root) = fake_runtime(tag, Some(source)) else {
            return Err(Skip("no C compiler (`cc`) to build a fake runtime".into()));
        };
        let lines = constructor_with(&root);
        assert!(
            lines
                .iter()
                .any(|l| l == "kind=NotAvailable origin=Loader call=load libamdhip64/libhiprtc"),
            "{tag}: expected a typed NotAvailable loader error, child said {lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("display ") && l.contains("lacks") && l.contains(named)),
            "{tag}: the error should name the missing {named}: {lines:?}"
        );
    }
    Ok(())
}

/// A runtime with the shim's fault switch (a stub of its two functions):
/// `streamcore_hip::faults` finds it, passes the call and status through,
/// turns the switch's refusal and a name with a NUL byte into typed
/// `InvalidValue` errors, and reads its count.
pub fn a_runtime_with_a_fault_switch_is_driven_through_it() -> Outcome {
    let stub = "static unsigned long long taken;\n\
        static int same(const char *a, const char *b) {\n\
            while (*a && *a == *b) { a++; b++; }\n\
            return *a == *b;\n\
        }\n\
        int hipOnCudaFailNext(const char *call, int status) {\n\
            if (status != 2 || !same(call, \"hipMalloc\")) return -1;\n\
            taken += 7;\n\
            return 0;\n\
        }\n\
        unsigned long long hipOnCudaFaultsTaken(void) { return taken; }\n";
    let Some(root) = fake_runtime("fault-switch", Some(stub)) else {
        return Err(Skip("no C compiler (`cc`) to build a fake runtime".into()));
    };
    let lines = constructor_with(&root);
    assert_reported(
        &lines,
        &[
            "faults armed",
            "faults refused kind=InvalidValue",
            "faults nul kind=InvalidValue",
            "faults taken=Some(7)",
            "faults available=true",
        ],
    );
    Ok(())
}

pub fn a_runtime_that_cannot_be_loaded_says_why() -> Outcome {
    // Files that exist but are no libraries: the loader's reason is kept,
    // not "not found".
    let root = fake_runtime("empty-files", None).expect("no compiler needed");
    let lines = constructor_with(&root);
    if lines.iter().any(|l| l.starts_with("constructed")) {
        return Err(Skip("a HIP runtime is installed system-wide".into()));
    }
    let display = lines
        .iter()
        .find(|l| l.starts_with("display "))
        .unwrap_or_else(|| panic!("no error displayed: {lines:?}"));
    assert!(
        display.contains("could not be loaded") && display.contains("libamdhip64.so:"),
        "the loader's reason for each candidate is kept: {display}"
    );
    Ok(())
}

pub fn error_kind_is_what_the_core_matches_on() -> Outcome {
    // The classification the core relies on, without a device.
    use streamcore::platform::ErrorKind;
    use streamcore_hip::kind_of_hip_code;
    assert_eq!(kind_of_hip_code(2), ErrorKind::OutOfMemory);
    assert_eq!(kind_of_hip_code(900), ErrorKind::CaptureUnsupported);
    assert_eq!(kind_of_hip_code(901), ErrorKind::CaptureInvalidated);
    assert_eq!(kind_of_hip_code(100), ErrorKind::NotAvailable);
    let _: fn(&streamcore_hip::HipError) -> ErrorKind = PlatformError::kind;
    Ok(())
}

pub fn each_injected_status_is_of_the_kind_asked_for() -> Outcome {
    // `faults::status_of`, the statuses the fault switch injects, classify
    // as the kinds they stand for; a kind no fault stands for has none.
    use streamcore::platform::ErrorKind;
    use streamcore_hip::kind_of_hip_code;
    for kind in [
        ErrorKind::OutOfMemory,
        ErrorKind::InvalidValue,
        ErrorKind::Kernel,
        ErrorKind::Other,
    ] {
        let status = faults::status_of(kind).expect("a status");
        assert_eq!(kind_of_hip_code(status as u32), kind, "{status}");
    }
    assert_eq!(faults::status_of(ErrorKind::DeviceLost), None);
    Ok(())
}

/// The number written just before `word` in `text` ("3 passed" → 3).
fn count_before(text: &str, word: &str) -> Option<u64> {
    let at = text.find(&format!(" {word}"))?;
    let digits: String = text[..at]
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

pub fn device_tests_without_runtime_count_as_skipped() -> Outcome {
    // A device test run with no runtime reachable must say SKIPPED and be
    // counted as skipped in the binary's summary, never as passed.
    let empty =
        std::env::temp_dir().join(format!("streamcore-hip-empty-skip-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let exe = std::env::current_exe().expect("current test binary");
    let output = std::process::Command::new(exe)
        .args(["smoke::properties_come_from_the_driver", "--exact"])
        .env("ROCM_PATH", &empty)
        .env_remove("HIP_PATH")
        .output()
        .expect("spawn the test binary");
    let _ = std::fs::remove_dir_all(&empty);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !stdout.contains("SKIPPED") && !stderr.contains("SKIPPED") {
        return Err(Skip(
            "a HIP runtime is installed system-wide, an empty ROCM_PATH cannot hide it".into(),
        ));
    }
    assert!(output.status.success(), "child failed: {output:?}");
    assert_eq!(
        count_before(&stdout, "passed"),
        Some(0),
        "a skipped test was counted as passed:\n{stdout}"
    );
    assert_eq!(
        count_before(&stdout, "skipped"),
        Some(1),
        "the skip was not counted:\n{stdout}"
    );
    Ok(())
}
