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

/// Given at their default value, they are refused all the same: the mock
/// would ignore `--runs 5` as silently as `--runs 4`.
#[test]
fn hip_only_options_are_refused_on_the_mock_even_at_their_default() {
    let t = trace("two_stream_pipeline");
    for args in [
        vec!["--storage", "auto"],
        vec!["--runs", "5"],
        vec!["--frees", "ordered"],
        vec!["--fence-every", "64"],
        vec!["--fence-bytes", "4194304"],
        vec![
            "--storage",
            "auto",
            "--frees",
            "ordered",
            "--fence-every",
            "64",
        ],
    ] {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().map(|a| a as _).collect();
        all.push(&t);
        let out = replay(&all);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(
            err.contains(&format!("{} applies to `--platform hip` only", args[0])),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: nothing replayed");
    }
    // `--platform mock` said outright is the mock too.
    let out = replay(&[&"--platform", &"mock", &"--runs", &"5", &t]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

/// The mirror case: the options of the mock replay alone are refused with
/// `--platform hip` (whether a runtime is there or not, with or without
/// HIP support), not silently ignored: status 2, the option named, before
/// any runtime is looked for.
#[test]
fn mock_only_options_are_refused_with_hip() {
    let dir = scratch("mock-only-with-hip");
    let t = trace("two_stream_pipeline");
    let svg = dir.join("plot.svg");
    let cases: [Vec<&dyn AsRef<std::ffi::OsStr>>; 3] = [
        vec![&"--json"],
        vec![&"--svg", &svg],
        vec![&"--no-progress"],
    ];
    for args in cases {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"--platform", &"hip"];
        all.extend(args.iter().copied());
        all.push(&t);
        let out = replay(&all);
        let err = text(&out.stderr);
        let option = args[0].as_ref().to_string_lossy();
        assert_eq!(out.status.code(), Some(2), "{option}: {err}");
        assert_eq!(err.lines().count(), 1, "{option}: one line: {err}");
        assert!(
            err.contains(&format!("{option} applies to `--platform mock` only")),
            "{option}: {err}"
        );
        assert!(out.stdout.is_empty(), "{option}: nothing replayed");
        assert!(!svg.exists(), "no plot");
    }
}

/// `replay --help` says which options belong to which platform.
#[test]
fn help_says_which_options_each_platform_takes() {
    let out = replay(&[&"--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in [
        "--json, --svg and --no-progress are the mock's alone",
        "refused, even at its default value",
        "[default: 5]",
        "an --svg file whose folder is",
    ] {
        assert!(help.contains(needle), "missing {needle:?} in:\n{help}");
    }
}

/// A bad `--layout` is a bad argument on `--platform hip` too: status 2,
/// said before the HIP runtime is looked for (here there is none, which
/// would be status 1). What only the device can say (a page larger than its
/// memory allows) is left until the device is there: such a layout passes
/// the early check, and the missing runtime is what is reported.
#[cfg(feature = "hip")]
#[test]
fn a_bad_layout_with_hip_is_refused_before_the_runtime_is_loaded() {
    let dir = scratch("hip-bad-layout");
    let t = trace("two_stream_pipeline");
    let not_json = dir.join("not-json.json");
    std::fs::write(&not_json, "{").unwrap();
    let slice_over_page = dir.join("slice-over-page.json");
    std::fs::write(
        &slice_over_page,
        r#"{"pools": [{"kind": "sliced", "page_size": "1 KiB", "max_slice": "1 MiB"}]}"#,
    )
    .unwrap();
    let cases: [(&dyn AsRef<std::ffi::OsStr>, &str); 3] = [
        (&"nope", "--layout nope: no such preset or file"),
        (&not_json, "not JSON"),
        (&slice_over_page, "pool 0"),
    ];
    for (layout, needle) in cases {
        let out = no_hip_runtime(
            "no-rocm-bad-layout",
            &[&"--platform", &"hip", &"--layout", layout, &t],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{needle}: {err}");
        assert!(
            err.starts_with("streamcore: ") && err.contains(needle),
            "{err}"
        );
        assert!(!err.contains("HIP runtime"), "{err}");
        assert!(out.stdout.is_empty());
    }

    let huge = dir.join("huge.json");
    std::fs::write(
        &huge,
        r#"{"pools": [{"kind": "sliced", "page_size": "1 TiB", "max_slice": "1 MiB"}]}"#,
    )
    .unwrap();
    common::assert_no_hip_runtime([
        "replay".as_ref(),
        "--platform".as_ref(),
        "hip".as_ref(),
        "--layout".as_ref(),
        huge.as_os_str(),
        t.as_os_str(),
    ]);
}

/// `streamcore replay ARGS` where the only place to look for the HIP
/// runtime is an empty folder, the scratch folder `name`.
#[cfg(feature = "hip")]
fn no_hip_runtime(name: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let empty = scratch(name);
    std::fs::create_dir_all(empty.join("lib")).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .arg("replay")
        .args(args.iter().map(|a| a.as_ref()))
        .env("ROCM_PATH", &empty)
        .env("HIP_PATH", &empty)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run streamcore")
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

/// A trace's or a layout file's name with control characters is escaped
/// in the table too, as the workload is.
#[test]
fn control_characters_of_file_names_are_escaped_in_the_table() {
    let dir = scratch("control-characters-files");
    let path = dir.join("t\u{1b}[2J.jsonl");
    std::fs::write(
        &path,
        "{\"header\": {}}\n{\"op\":\"alloc\",\"id\":1,\"size\":4096,\"stream\":0}\n",
    )
    .unwrap();
    let layout = dir.join("l\u{7}.json");
    std::fs::write(&layout, r#"{"preset": "sliced"}"#).unwrap();
    let out = replay(&[&"--layout", &layout, &path]);
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
        "{shown:?}"
    );
    assert!(shown.contains(r"t\u{1b}[2J.jsonl"), "{shown}");
    assert!(shown.contains(r"l\u{7}.json)"), "{shown}");
}

/// With `--platform hip`, an option that refines another is refused without
/// it (status 2, before any runtime is looked for, at any value), not
/// silently ignored: `--frees` needs `--touch`, the `--fence-*` options
/// need `--touch --frees fenced`.
#[test]
fn hip_refinements_without_what_they_refine_are_refused() {
    let t = trace("two_stream_pipeline");
    for (args, needle) in [
        (
            vec!["--frees", "fenced"],
            "--frees applies with `--touch` only",
        ),
        (
            vec!["--frees", "ordered"],
            "--frees applies with `--touch` only",
        ),
        (
            vec!["--fence-every", "8"],
            "--fence-every applies with `--touch --frees fenced` only",
        ),
        (
            vec!["--touch", "--fence-bytes", "1024"],
            "--fence-bytes applies with `--touch --frees fenced` only",
        ),
        (
            vec!["--touch", "--frees", "ordered", "--fence-poll-only"],
            "--fence-poll-only applies with `--touch --frees fenced` only",
        ),
        (
            vec!["--frees", "fenced", "--fence-every", "8"],
            "--frees applies with `--touch` only",
        ),
    ] {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"--platform", &"hip"];
        all.extend(args.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
        all.push(&t);
        let out = replay(&all);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("HIP runtime"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing replayed");
    }
}

/// A negative number is an invalid value of its option, named with it;
/// not a stray argument with a tip (`-- -1`) that would make it a trace.
#[test]
fn negative_numbers_are_invalid_values_of_their_option() {
    let t = trace("two_stream_pipeline");
    for (option, value) in [
        ("--runs", "-1"),
        ("--fence-every", "-8"),
        ("--fence-bytes", "-1024"),
    ] {
        let out = replay(&[&"--platform", &"hip", &option, &value, &t]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{option}: {err}");
        assert!(
            err.contains(&format!("invalid value '{value}' for '{option} <")),
            "{option}: {err}"
        );
        assert!(!err.contains("tip:"), "{option}: {err}");
    }
}

/// `streamcore replay ARGS` with `input` on its standard input.
fn replay_with_stdin(args: &[&str], input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_streamcore"))
        .arg("replay")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run streamcore");
    let mut stdin = child.stdin.take().expect("a pipe");
    // A refusal may exit before reading: a closed pipe is no test failure.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().expect("wait for streamcore")
}

/// `-` reads one trace from standard input, gzip or plain, and reports it
/// as the file would be (the same table, named by its header), beside
/// files too; a bad trace there is named "standard input".
#[test]
fn a_dash_reads_the_trace_from_standard_input() {
    let file = trace("two_stream_pipeline");
    let gz = std::fs::read(&file).unwrap();
    let from_file = replay(&[&"--no-progress", &file]);
    assert!(from_file.status.success(), "{}", text(&from_file.stderr));
    let from_stdin = replay_with_stdin(&["--no-progress", "-"], &gz);
    assert!(from_stdin.status.success(), "{}", text(&from_stdin.stderr));
    // The same table, but for its title's source and the time per op.
    let table = |out: &Output| -> Vec<String> {
        let t = text(&out.stdout);
        let mut lines = t.lines().map(str::to_owned);
        let title = lines.next().unwrap_or_default();
        let (_, rest) = title.split_once("  ").expect("a title");
        std::iter::once(rest.to_owned())
            .chain(lines.filter(|l| !l.contains("time per op")))
            .collect()
    };
    assert_eq!(table(&from_stdin), table(&from_file));
    assert!(
        text(&from_stdin.stdout).starts_with("standard input  (two_stream_pipeline"),
        "{}",
        text(&from_stdin.stdout)
    );

    let plain = streamcore_mock::replay::Trace::load(&file)
        .unwrap()
        .to_jsonl();
    let both = replay_with_stdin(
        &["--no-progress", "--json", "-", file.to_str().unwrap()],
        plain.as_bytes(),
    );
    assert!(both.status.success(), "{}", text(&both.stderr));
    let lines = json_lines(&both);
    assert_eq!(lines.len(), 2);
    for key in ["peak_live_bytes", "peak_reserved_bytes", "storage_allocs"] {
        assert_eq!(u(&lines[0], key), u(&lines[1], key), "{key}");
    }

    let bad = replay_with_stdin(
        &["--no-progress", "-"],
        b"{\"header\": {}}\n{\"op\":\"free\",\"id\":3}\n",
    );
    assert_refused(&bad, &["standard input: line 2: free of id 3"]);
}

/// Standard input holds one trace: `-` twice is a usage error, and nothing
/// is replayed.
#[test]
fn a_dash_given_twice_is_a_usage_error() {
    let out = replay_with_stdin(&["-", "-"], b"");
    assert_bad_argument(&out, &["`-` (standard input) can be given once"]);
    assert!(out.stdout.is_empty());
}
