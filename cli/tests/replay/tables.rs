//! Good traces: the table beside the recorded figures, the overview of
//! several traces, `--json`, and plain JSON lines without PyTorch figures.

use super::*;

#[test]
fn a_bundled_trace_gets_a_table_beside_pytorchs_figures() {
    let out = replay(&[&trace("two_stream_pipeline")]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for needle in [
        "two_stream_pipeline.jsonl.gz",
        "layout balanced",
        "this replay",
        "PyTorch, recorded",
        "not a replay of these events",
        "events                            968",
        "streams                             2",
        "peak reserved",
        "peak live",
        "reserved / live",
        // PyTorch's own figures from the header: 1.53 GB / 0.40 GB.
        "1.42 GiB",
        "385.00 MiB",
        "3.7922",
        "storage allocations",
        "time per op",
        "65.00 MiB PyTorch held before the recording began",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    // One trace: no overview table.
    assert!(!stdout.contains("ns/op"), "{stdout}");
}

#[test]
fn several_traces_get_an_overview_row_each() {
    let out = replay(&[&trace("gpt2_train"), &trace("two_stream_pipeline")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let overview: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("trace "))
        .collect();
    assert!(overview.len() >= 3, "{stdout}");
    assert!(overview[0].contains("ns/op") && overview[0].contains("recorded"));
    assert!(
        stdout.contains(
            "recorded: PyTorch's own peak reserved / peak allocated in the recorded program"
        ),
        "{stdout}"
    );
    assert!(overview[1].starts_with("gpt2_train ") && overview[1].contains("9,489"));
    assert!(
        overview[1].contains("1.0466"),
        "the recorded run's ratio: {}",
        overview[1]
    );
    assert!(overview[2].starts_with("two_stream_pipeline ") && overview[2].contains("3.7922"));
}

#[test]
fn json_gives_one_object_per_trace_with_the_issue_keys() {
    let names = [
        "gpt2_train",
        "resnet50_train",
        "llama_decode",
        "two_stream_pipeline",
    ];
    let paths: Vec<PathBuf> = names.iter().map(|n| trace(n)).collect();
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"--json"];
    args.extend(paths.iter().map(|p| p as &dyn AsRef<std::ffi::OsStr>));
    let out = replay(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let objects = json_lines(&out);
    assert_eq!(objects.len(), names.len());
    // (events, streams, PyTorch peak reserved, PyTorch peak allocated) from
    // the headers (tests/traces/README.md).
    let expected = [
        (9_489, 1, 8_082_423_808u64, 7_722_708_480u64),
        (7_374, 1, 3_571_449_856, 3_215_763_456),
        (328_246, 1, 899_678_208, 490_733_568),
        (968, 2, 1_530_920_960, 403_702_272),
    ];
    for ((v, name), (events, streams, torch_r, torch_a)) in objects.iter().zip(names).zip(expected)
    {
        let path = v.get("trace").and_then(Value::as_str).unwrap();
        assert!(path.ends_with(&format!("{name}.jsonl.gz")), "{path}");
        assert_eq!(u(v, "events"), events, "{name}");
        assert_eq!(u(v, "streams"), streams, "{name}");
        assert_eq!(
            u(v, "recorded_torch_peak_reserved_bytes"),
            torch_r,
            "{name}"
        );
        assert_eq!(
            u(v, "recorded_torch_peak_allocated_bytes"),
            torch_a,
            "{name}"
        );
        let (reserved, live) = (u(v, "peak_reserved_bytes"), u(v, "peak_live_bytes"));
        assert!(reserved >= live && live > 0, "{name}: {reserved} < {live}");
        let ratio = f(v, "ratio");
        assert!(
            (ratio - reserved as f64 / live as f64).abs() < 1e-5,
            "{name}"
        );
        let torch_ratio = f(v, "recorded_torch_ratio");
        assert!((torch_ratio - torch_r as f64 / torch_a as f64).abs() < 1e-5);
        assert!(u(v, "storage_allocs") > 0, "{name}");
        assert!(f(v, "ns_per_op") > 0.0, "{name}");
    }
}

#[test]
fn plain_jsonl_without_pytorch_figures() {
    let dir = scratch("plain");
    let path = dir.join("small.jsonl");
    std::fs::write(
        &path,
        [
            r#"{"header": {"workload": "small"}}"#,
            r#"{"op":"alloc","id":7,"size":1048576,"stream":0}"#,
            r#"{"op":"alloc","id":8,"size":3000,"stream":1}"#,
            "",
            r#"{"op":"free","id":7}"#,
            r#"{"op":"alloc","id":7,"size":524288,"stream":0}"#,
            r#"{"op":"free","id":8}"#,
            r#"{"op":"free","id":7}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let out = replay(&[&"--json", &path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = &json_lines(&out)[0];
    assert_eq!(u(v, "events"), 6);
    assert_eq!(u(v, "streams"), 2);
    assert_eq!(u(v, "allocs"), 3);
    assert_eq!(u(v, "peak_live_bytes"), 1_048_576 + 3000);
    assert_eq!(v.get("workload").and_then(Value::as_str), Some("small"));
    for key in [
        "recorded_torch_peak_reserved_bytes",
        "recorded_torch_peak_allocated_bytes",
    ] {
        assert!(v.get(key).is_none(), "{key} without a header figure");
    }
    let table = replay(&[&path]);
    assert!(table.status.success());
    assert!(!text(&table.stdout).contains("PyTorch"));
}

/// A trace without allocations has no reserved / live ratio: the table,
/// the overview and the JSON say so ("-", null) instead of printing 0.
#[test]
fn a_trace_without_allocations_has_no_ratio() {
    let dir = scratch("no_allocations");
    let path = dir.join("empty.jsonl");
    std::fs::write(&path, "{\"header\": {}}\n").unwrap();
    let out = replay(&[&path]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("reserved / live"))
        .unwrap_or_else(|| panic!("no ratio row in:\n{stdout}"));
    assert!(!row.contains("0.0000"), "{row}");
    assert!(row.split_whitespace().any(|w| w == "-"), "{row}");
    let out = replay(&[&"--json", &path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = json_lines(&out);
    assert_eq!(lines[0].get("ratio"), Some(&Value::Null), "{lines:?}");
}
