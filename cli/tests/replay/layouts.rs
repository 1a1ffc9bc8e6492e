//! `--layout`: presets, layout files, and layouts refused before the
//! first event.

use super::*;

#[test]
fn layouts_by_preset_and_by_file() {
    let dir = scratch("layouts");
    let t = trace("two_stream_pipeline");
    for preset in ["balanced", "exclusive-pages", "sliced"] {
        let out = replay(&[&"--json", &"--layout", &preset, &t]);
        assert!(out.status.success(), "{preset}: {}", text(&out.stderr));
        let v = &json_lines(&out)[0];
        assert_eq!(v.get("layout").and_then(Value::as_str), Some(preset));
        assert!(u(v, "storage_allocs") > 0, "{preset}");
    }
    // With whole-chunk commits (one storage call a page; the default cuts
    // commits into pieces), the sliced preset's pages serve many requests
    // each.
    let mut storage_allocs = Vec::new();
    for preset in ["exclusive-pages", "sliced"] {
        let file = dir.join(format!("{preset}-whole.json"));
        let body = format!(r#"{{"preset": "{preset}", "policy": {{"commit_piece_granules": 0}}}}"#);
        std::fs::write(&file, body).unwrap();
        let out = replay(&[&"--json", &"--layout", &file, &t]);
        assert!(out.status.success(), "{preset}: {}", text(&out.stderr));
        storage_allocs.push(u(&json_lines(&out)[0], "storage_allocs"));
    }
    assert!(
        storage_allocs[1] < storage_allocs[0],
        "sliced pages serve many requests each: {storage_allocs:?}"
    );

    let file = dir.join("layout.json");
    std::fs::write(
        &file,
        r#"{"pools": [
              {"kind": "small", "page_size": "1 MiB", "max_slice": "1 KiB"},
              {"kind": "exclusive", "max_slice": "1 GiB"}],
            "policy": {"release_idle_after": 64}}"#,
    )
    .unwrap();
    let out = replay(&[&"--json", &"--layout", &file, &t]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(u(&json_lines(&out)[0], "events"), 968);

    // Refused layouts: the layout's own typed error, before any trace.
    std::fs::write(
        &file,
        r#"{"pools": [{"kind": "sliced", "page_size": "1 MiB", "max_slice": "2 MiB"}]}"#,
    )
    .unwrap();
    let out = replay(&[&"--layout", &file, &t]);
    assert_bad_argument(
        &out,
        &["pool 0: largest slice 2097152 B exceeds its page size"],
    );
    assert!(out.stdout.is_empty());
    std::fs::write(&file, r#"{"pools": [{"kind": "sliced", "max_slice": 1}]}"#).unwrap();
    assert_bad_argument(
        &replay(&[&"--layout", &file, &t]),
        &["pools[0]: missing \"page_size\""],
    );
    assert_bad_argument(
        &replay(&[&"--layout", &"tiny", &t]),
        &["--layout tiny: no such preset or file", "exclusive-pages"],
    );
}

/// A layout file's policy names the settings of the resizable storage
/// and a favour: favouring bytes holds fewer bytes for more storage calls,
/// and a setting out of range is refused, saying where.
#[test]
fn a_policy_file_favours_bytes_or_names_settings() {
    let dir = scratch("policy");
    let t = trace("resnet50_train");
    let run = |layout: &dyn AsRef<std::ffi::OsStr>| {
        let out = replay(&[&"--json", &"--layout", layout, &t]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let v = &json_lines(&out)[0];
        (u(v, "peak_reserved_bytes"), u(v, "storage_allocs"))
    };
    let default = run(&"balanced");
    let file = dir.join("bytes.json");
    std::fs::write(
        &file,
        r#"{"preset": "balanced", "policy": {"favour": "bytes"}}"#,
    )
    .unwrap();
    let bytes = run(&file);
    assert!(bytes.0 < default.0, "fewer bytes: {bytes:?} {default:?}");
    assert!(bytes.1 > default.1, "for more calls: {bytes:?} {default:?}");
    // The default's own settings, named: the default's figures.
    std::fs::write(
        &file,
        r#"{"preset": "balanced", "policy": {"trim_headroom_shift": 7,
            "commit_step_shift": 6, "strand_guard": "adaptive",
            "churn_budget": {"per_reserve_ns": 500, "per_mib_ns": 150}}}"#,
    )
    .unwrap();
    assert_eq!(run(&file), default);
    std::fs::write(
        &file,
        r#"{"preset": "balanced", "policy": {"commit_step_shift": 99}}"#,
    )
    .unwrap();
    assert_bad_argument(
        &replay(&[&"--layout", &file, &t]),
        &["policy.commit_step_shift: 99 is above 64"],
    );
}

#[test]
fn layouts_that_do_not_fit_the_device_are_refused_before_the_first_event() {
    let dir = scratch("layouts-device");
    let t = trace("two_stream_pipeline");
    let file = dir.join("layout.json");
    // The bad layouts of the memory issue, and what each line must name.
    let cases = [
        (
            r#"{"pools": [{"kind": "sliced", "page_size": 18446744073709551615, "max_slice": "1 MiB"}]}"#,
            "pool 0",
        ),
        (
            r#"{"alignment": 9223372036854775808, "pools": [{"kind": "exclusive", "max_slice": "1 GiB"}]}"#,
            "alignment",
        ),
        (
            r#"{"pools": [{"kind": "sliced", "page_size": "1 TiB", "max_slice": "1 MiB"}]}"#,
            "pool 0 (sliced): page size 1.00 TiB",
        ),
        (
            r#"{"pools": [{"kind": "exclusive", "max_slice": "200 TiB"}]}"#,
            "pool 0 (exclusive): largest page 200.00 TiB",
        ),
    ];
    for (layout, needle) in cases {
        std::fs::write(&file, layout).unwrap();
        let out = replay(&[&"--layout", &file, &t]);
        let err = text(&out.stderr);
        // A bad argument: nothing replayed (`replay --help`'s exit status).
        assert_eq!(out.status.code(), Some(2), "{layout}: {err}");
        assert_eq!(err.lines().count(), 1, "{layout}: one line: {err}");
        assert!(
            err.contains("layout file") && err.contains(needle),
            "{layout}: {err}"
        );
        assert!(
            !err.contains("event"),
            "{layout}: refused before the replay: {err}"
        );
        assert!(!err.contains("panicked"), "{layout}: {err}");
        assert!(out.stdout.is_empty(), "{layout}: no table");
    }
    // The ones the layout's own rules accept say what does not fit.
    std::fs::write(&file, cases[2].0).unwrap();
    let err = text(&replay(&[&"--layout", &file, &t]).stderr);
    assert!(
        err.contains("is larger than the device's largest page, 32.82 GiB"),
        "{err}"
    );
}

/// A layout file that is not one — endless (`/dev/zero`), far too long,
/// not text, or a folder — is a bad argument said in one line, read in
/// bounded memory (an endless file is not read whole).
#[test]
fn files_that_are_not_layout_files_are_refused_in_one_line() {
    let dir = scratch("layouts-not-files");
    let t = trace("two_stream_pipeline");
    let long = dir.join("long.json");
    // Valid JSON, but no layout is a megabyte long.
    let mut text_of_long = String::from("{\"preset\": \"sliced\"");
    text_of_long.push_str(&" ".repeat(2 << 20));
    text_of_long.push('}');
    std::fs::write(&long, text_of_long).unwrap();
    let binary = dir.join("binary.json");
    std::fs::write(&binary, b"{\"preset\": \"sl\xffced\"}").unwrap();
    let folder = dir.join("folder.json");
    std::fs::create_dir_all(&folder).unwrap();
    let mut cases = vec![
        (long, "longer than 1048576 bytes: not a layout file"),
        (binary, "not UTF-8 text (byte 14 is not)"),
        (folder, "this is a folder, not a layout file"),
    ];
    if std::path::Path::new("/dev/zero").exists() {
        cases.push(("/dev/zero".into(), "longer than 1048576 bytes"));
    }
    for (file, why) in cases {
        let out = replay(&[&"--layout", &file, &t]);
        let err = text(&out.stderr);
        assert_bad_argument(&out, &[&format!("layout file {}: {why}", file.display())]);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(out.stdout.is_empty(), "nothing replayed: {err}");
    }
}

/// A layout file's text quoted in its error is escaped there: a layout
/// from elsewhere cannot drive the terminal.
#[test]
fn control_characters_of_a_layout_file_are_escaped_in_its_error() {
    let dir = scratch("layouts-controls");
    let file = dir.join("evil.json");
    std::fs::write(&file, r#"{"preset": "x\u001b[2J"}"#).unwrap();
    let out = replay(&[&"--layout", &file, &trace("two_stream_pipeline")]);
    assert_bad_argument(&out, &[r#"unknown preset "x\u{1b}[2J""#]);
    let err = text(&out.stderr);
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

/// A page budget past 32 bits is refused with the number the file gave,
/// not the one a 32-bit budget would have held.
#[test]
fn a_page_budget_past_32_bits_is_named_as_given() {
    let dir = scratch("layouts-max-pages");
    let file = dir.join("pages.json");
    std::fs::write(
        &file,
        r#"{"preset": "sliced", "policy": {"max_pages": 18446744073709551615}}"#,
    )
    .unwrap();
    let out = replay(&[&"--layout", &file, &trace("two_stream_pipeline")]);
    assert_bad_argument(
        &out,
        &["policy.max_pages: 18446744073709551615 is outside 1..=16777216"],
    );
    assert!(!text(&out.stderr).contains("4294967295"));
}

/// A layout file whose path is not UTF-8 (a Linux file name may hold any
/// bytes but `/` and NUL) is read like any other; a missing one is named
/// with its unreadable bytes replaced.
#[cfg(unix)]
#[test]
fn a_layout_path_need_not_be_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("layouts-bytes");
    let file = dir.join(std::ffi::OsStr::from_bytes(b"lay\xffout.json"));
    std::fs::write(&file, r#"{"preset": "sliced"}"#).unwrap();
    let t = trace("two_stream_pipeline");
    let out = replay(&[&"--json", &"--layout", &file, &t]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = &json_lines(&out)[0];
    assert_eq!(
        v.get("layout").and_then(Value::as_str),
        Some(file.to_string_lossy().as_ref())
    );
    let missing = dir.join(std::ffi::OsStr::from_bytes(b"gone\xfe.json"));
    assert_bad_argument(
        &replay(&[&"--layout", &missing, &t]),
        &["gone\u{fffd}.json: no such preset or file"],
    );
}
