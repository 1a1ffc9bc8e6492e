//! The command line itself: usage errors, `--help`, and `--platform hip`
//! where no HIP runtime (or no HIP support) is there.

use super::*;

#[test]
fn no_trace_is_a_usage_error() {
    let out = replay(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("<TRACE>"));
}

#[test]
fn zero_timed_passes_is_a_usage_error() {
    let out = replay(&[&"--runs", &"0", &trace("two_stream_pipeline")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--runs"), "{err}");
}

#[test]
fn help_documents_the_layout_file_and_the_outputs() {
    let out = replay(&[&"--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in [
        "--json",
        "--svg <FILE>",
        "--layout <PRESET|FILE>",
        "balanced, exclusive-pages, sliced",
        "Layout files",
        "\"max_slice\"",
        "release_idle_after",
        "141,000,000,000 B (131.32 GiB)",
        "checked against it before the first event",
        "labels them \"PyTorch, recorded\"",
        "not a replay",
        "recorded_torch_",
        "binary units",
        "must end in `.svg`",
        "used on the device",
    ] {
        assert!(help.contains(needle), "missing {needle:?} in:\n{help}");
    }
}

#[cfg(feature = "hip")]
#[test]
fn hip_without_a_runtime_says_so_in_one_line() {
    let trace = trace("two_stream_pipeline");
    common::assert_no_hip_runtime([
        "replay".as_ref(),
        "--platform".as_ref(),
        "hip".as_ref(),
        trace.as_os_str(),
    ]);
}

#[cfg(not(feature = "hip"))]
#[test]
fn hip_in_a_build_without_it_says_so_in_one_line() {
    let out = replay(&[&"--platform", &"hip", &trace("two_stream_pipeline")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("built without HIP support"), "{err}");
}

/// The options of `--platform hip` alone are refused on the mock replay
/// (the default), not silently ignored: status 2, the option named.
#[test]
fn hip_only_options_are_refused_on_the_mock() {
    let t = trace("two_stream_pipeline");
    for args in [
        vec!["--touch"],
        vec!["--storage", "malloc"],
        vec!["--runs", "3"],
        vec!["--frees", "fenced"],
        vec!["--fence-every", "8"],
        vec!["--fence-bytes", "1024"],
        vec!["--fence-poll-only"],
    ] {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().map(|a| a as _).collect();
        all.push(&t);
        let out = replay(&all);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(args[0]) && err.contains("--platform hip"),
            "{args:?}: {err}"
        );
    }
}

/// A header's workload name is shown with its control characters escaped
/// in the table (a trace from elsewhere cannot drive the terminal), and
/// kept as it is in the JSON.
#[test]
fn control_characters_of_a_workload_are_escaped_in_the_table() {
    let dir = scratch("control-characters");
    let path = dir.join("ctl.jsonl");
    let body = concat!(
        r#"{"header": {"workload": "evil\u001b[2Jname\nnext"}}"#,
        "\n",
        r#"{"op":"alloc","id":1,"size":4096,"stream":0}"#,
        "\n",
    );
    std::fs::write(&path, body).unwrap();
    let out = replay(&[&path]);
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
    assert!(shown.contains(r"evil\u{1b}[2Jname\nnext"), "{shown}");
    let out = replay(&[&"--json", &path]);
    assert!(
        text(&out.stdout).contains(r"evil\u001b[2Jname\nnext"),
        "{}",
        text(&out.stdout)
    );
}
