//! `streamcore demo` run as a process: it succeeds and tells the story.

use std::process::Command;

fn demo(seed: &str) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .args(["demo", "--seed", seed])
        .output()
        .expect("run streamcore demo");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn demo_explains_waits_capture_taint_and_memory() {
    let (ok, text) = demo("0");
    assert!(ok, "{text}");
    for needle in [
        "1 event wait inserted",
        "0 more waits",
        "storage allocations inside the window: 0",
        "replay 3: x = 3 -> out = 12: ok",
        "skipped: its input carries failure #1",
        "launch of kernel `sc_flaky` failed",
        "launch of kernel `sc_scale` skipped",
        "read w (shares nothing with the failure) -> ok",
        "total",
        "live buffers 0, graphs 0, failures 0, deferred frees 0, cross-stream pins 0",
        "hazards reported by the mock's checker: none",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn same_seed_same_story_under_other_seeds_too() {
    let (ok_a, a) = demo("7");
    let (ok_b, b) = demo("7");
    assert!(ok_a && ok_b);
    assert_eq!(a, b, "the mock is deterministic");
}

#[test]
fn bad_arguments_are_a_clear_error_not_a_panic() {
    let out = Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .args(["demo", "--seed", "not-a-number"])
        .output()
        .expect("run streamcore");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid value"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
